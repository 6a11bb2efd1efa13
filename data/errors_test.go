package data

import (
	"errors"
	"testing"
)

func TestRecordErrorError(t *testing.T) {
	tests := []struct {
		name string
		err  *RecordError
		want string
	}{
		{
			name: "all parts",
			err:  &RecordError{File: "hotpot.json", Line: 40, Index: 12, Field: "supporting_facts", Err: errors.New("fact 0: title \"X\" is not in the context")},
			want: `hotpot.json: record 13 (line 40): field "supporting_facts": fact 0: title "X" is not in the context`,
		},
		{
			name: "no line, no field",
			err:  &RecordError{File: "c.json", Index: 3, Err: errors.New("invalid JSON")},
			want: "c.json: record 4: invalid JSON",
		},
		{
			name: "no reason",
			err:  &RecordError{File: "c.json", Index: 0, Line: 1},
			want: "c.json: record 1 (line 1): bad record",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRecordErrorUnwrap(t *testing.T) {
	var err error = &RecordError{File: "f", Field: "question", Err: ErrMissingField}
	if !errors.Is(err, ErrMissingField) {
		t.Errorf("errors.Is(%v, ErrMissingField): got false, want true", err)
	}
	var recErr *RecordError
	if wrapped := errors.Join(errors.New("context"), err); !errors.As(wrapped, &recErr) || recErr.Field != "question" {
		t.Errorf("errors.As on a wrapped RecordError: got %v, want field %q", recErr, "question")
	}
}
