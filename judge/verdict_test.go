package judge

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/distill-rag/distill/data"
)

func TestParseVerdict(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		want    data.Verdict
		wantErr bool
	}{
		{name: "sufficient", raw: `{"sufficient": true, "gap_items": []}`, want: data.Verdict{Sufficient: true}},
		{name: "sufficient drops gaps", raw: `{"sufficient": true, "gap_items": [{"category": "other", "target": "x"}]}`, want: data.Verdict{Sufficient: true}},
		{
			name: "insufficient with gaps",
			raw:  `{"sufficient": false, "gap_items": [{"category": "attribute", "target": "Paris", "slot": "population", "description": "How many live there."}, {"category": "bridge entity", "target": "", "slot": "", "extra": 1}]}`,
			want: data.Verdict{GapItems: []data.GapItem{
				{Category: "attribute", Target: "Paris", Slot: "population", Description: "How many live there."},
				{Category: "bridge entity"},
			}},
		},
		{name: "insufficient without gaps", raw: `{"sufficient": false}`, want: data.Verdict{}},
		{name: "null gaps", raw: `{"sufficient": false, "gap_items": null}`, want: data.Verdict{}},
		{name: "extra keys ignored", raw: `{"reasoning": "...", "sufficient": false, "gap_items": []}`, want: data.Verdict{}},
		{name: "missing sufficient", raw: `{"gap_items": []}`, wantErr: true},
		{name: "null sufficient", raw: `{"sufficient": null}`, wantErr: true},
		{name: "string sufficient", raw: `{"sufficient": "true"}`, wantErr: true},
		{name: "number sufficient", raw: `{"sufficient": 1}`, wantErr: true},
		{name: "gap not an object", raw: `{"sufficient": false, "gap_items": ["x"]}`, wantErr: true},
		{name: "gap null", raw: `{"sufficient": false, "gap_items": [null]}`, wantErr: true},
		{name: "gap field not a string", raw: `{"sufficient": false, "gap_items": [{"target": 3}]}`, wantErr: true},
		{name: "gaps not a list", raw: `{"sufficient": false, "gap_items": {}}`, wantErr: true},
		{name: "not json", raw: `sufficient: yes`, wantErr: true},
		{name: "array", raw: `[]`, wantErr: true},
		{name: "empty", raw: ``, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseVerdict([]byte(tt.raw))
			if tt.wantErr {
				if !errors.Is(err, ErrVerdict) {
					t.Fatalf("got error %v, want one wrapping ErrVerdict", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v, want none", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("verdict (-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzParseVerdict(f *testing.F) {
	for _, s := range []string{
		`{"sufficient": true, "gap_items": []}`,
		`{"sufficient": false, "gap_items": [{"category": "attribute", "target": "Paris", "slot": "population", "description": "d"}]}`,
		`{"sufficient": "false"}`,
		`{"sufficient": false, "gap_items": [null, 1]}`,
		`[{"sufficient": false}]`,
		`not json`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		v, err := ParseVerdict(raw)
		if err != nil {
			if !errors.Is(err, ErrVerdict) {
				t.Fatalf("error %v does not wrap ErrVerdict", err)
			}
			return
		}
		if v.Sufficient && len(v.GapItems) > 0 {
			t.Fatalf("sufficient verdict with %d gap items", len(v.GapItems))
		}
		// What parses re-encodes and parses to the same verdict.
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseVerdict(b)
		if err != nil {
			t.Fatalf("re-encoded verdict %s does not parse: %v", b, err)
		}
		if diff := cmp.Diff(v, again); diff != "" {
			t.Fatalf("round trip changed the verdict:\n%s", diff)
		}
	})
}

func TestVerdictJSON(t *testing.T) {
	tests := []struct {
		v    data.Verdict
		want string
	}{
		{data.Verdict{Sufficient: true}, `{"sufficient":true,"gap_items":[]}`},
		{data.Verdict{Sufficient: true, GapItems: []data.GapItem{{Category: "other"}}}, `{"sufficient":true,"gap_items":[]}`},
		{data.Verdict{}, `{"sufficient":false,"gap_items":[]}`},
		{data.Verdict{GapItems: []data.GapItem{{Category: "attribute", Target: "A & B", Slot: "<born>", Description: "d"}}},
			`{"sufficient":false,"gap_items":[{"category":"attribute","target":"A & B","slot":"<born>","description":"d"}]}`},
	}
	for _, tt := range tests {
		got := VerdictJSON(tt.v)
		if got != tt.want {
			t.Errorf("VerdictJSON(%+v) = %s, want %s", tt.v, got, tt.want)
		}
		back, err := ParseVerdict([]byte(got))
		if err != nil || back.Sufficient != tt.v.Sufficient || (!back.Sufficient && len(back.GapItems) != len(tt.v.GapItems)) {
			t.Errorf("ParseVerdict(%s) = %+v, %v", got, back, err)
		}
	}
}

// TestVerdictJSONSpaced writes Python's json.dumps separators between
// members and items, never inside strings, and reads back as VerdictJSON.
func TestVerdictJSONSpaced(t *testing.T) {
	tests := []struct {
		v    data.Verdict
		want string
	}{
		{data.Verdict{Sufficient: true}, `{"sufficient": true, "gap_items": []}`},
		{data.Verdict{GapItems: []data.GapItem{
			{Category: "attribute", Target: "Paris, Texas", Slot: "time:zone", Description: `say "a,b": \ c`},
			{Category: "bridge_entity", Target: "B"},
		}}, `{"sufficient": false, "gap_items": [{"category": "attribute", "target": "Paris, Texas", "slot": "time:zone", "description": "say \"a,b\": \\ c"}, {"category": "bridge_entity", "target": "B", "slot": "", "description": ""}]}`},
	}
	for _, tt := range tests {
		got := VerdictJSONSpaced(tt.v)
		if got != tt.want {
			t.Errorf("VerdictJSONSpaced(%+v) =\n%s\nwant\n%s", tt.v, got, tt.want)
		}
		back, err := ParseVerdict([]byte(got))
		compact, _ := ParseVerdict([]byte(VerdictJSON(tt.v)))
		if err != nil || !reflect.DeepEqual(back, compact) {
			t.Errorf("ParseVerdict(%s) = %+v, %v, want %+v", got, back, err, compact)
		}
	}
}
