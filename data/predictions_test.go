package data

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPredictionReader(t *testing.T) {
	tests := []struct {
		name, content string
		want          []Prediction
	}{
		{"jsonl", `{"id": "a", "prediction": "x"}` + "\n\n" + `{"id": 7, "prediction": ""}` + "\n",
			[]Prediction{{ID: "a", Prediction: "x"}, {ID: "7", Prediction: ""}}},
		{"json list", `[{"prediction": "y", "id": " b "}]`, []Prediction{{ID: "b", Prediction: "y"}}},
		{"empty", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "p.jsonl")
			if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			r, err := OpenPredictions(path)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			got := readAll(t, r)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("predictions mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
