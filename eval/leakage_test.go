package eval

import (
	"bytes"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLeakage(t *testing.T) {
	ids := []string{"d", "c", "b", "a"} // in the order questions finished
	tests := []struct {
		name      string
		training  *JudgeTraining
		want      *Leakage
		wantWords string
		wantLog   string
	}{
		{"no trained judge", nil, nil, "", ""},
		{"not recorded", &JudgeTraining{Source: "j/model.json"}, &Leakage{Source: "j/model.json", Questions: 4},
			"not checked for leakage", "does not record its training questions"},
		{"no overlap", &JudgeTraining{Source: "j/model.json", Known: true, Questions: []string{"x", "y", "x"}},
			&Leakage{Source: "j/model.json", Known: true, TrainingQuestions: 2, Questions: 4}, "", ""},
		{"overlap", &JudgeTraining{Source: "j/model.json", Known: true, Questions: []string{"c", "x", "a"}},
			&Leakage{Source: "j/model.json", Known: true, TrainingQuestions: 3, Questions: 4, Overlap: 2, IDs: []string{"a", "c"}},
			"WARNING: LEAKAGE.** 2 of the 4 questions of this benchmark were used to train or validate the judge", "LEAKAGE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.training.leakage(slices.Values(ids))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("leakage (-want +got):\n%s", diff)
			}
			if w := got.words(); (tt.wantWords == "") != (w == "") || !strings.Contains(w, tt.wantWords) {
				t.Errorf("words %q, want %q", w, tt.wantWords)
			}
			var log bytes.Buffer
			got.warn(slog.New(slog.NewTextHandler(&log, nil)), "test", true)
			if (tt.wantLog == "") != (log.Len() == 0) || !strings.Contains(log.String(), tt.wantLog) {
				t.Errorf("log %q, want %q", log.String(), tt.wantLog)
			}
			// The second warning of a run leaves the ids out.
			log.Reset()
			got.warn(slog.New(slog.NewTextHandler(&log, nil)), "test", false)
			if got != nil && got.Overlap > 0 && (strings.Contains(log.String(), "ids=") || !strings.Contains(log.String(), "LEAKAGE")) {
				t.Errorf("second warning %q: want LEAKAGE without the ids", log.String())
			}
		})
	}
}

// TestLeakageFirstIDs: a report lists the first overlapping ids in order,
// whatever the order the questions came in, and counts them all.
func TestLeakageFirstIDs(t *testing.T) {
	var ids, want []string
	for i := 3 * maxLeakedIDs; i > 0; i-- {
		ids = append(ids, fmt.Sprintf("q%03d", i))
	}
	training := &JudgeTraining{Known: true, Questions: ids[maxLeakedIDs/2:]} // all but the first, the highest
	for i := 1; i <= maxLeakedIDs; i++ {
		want = append(want, fmt.Sprintf("q%03d", i))
	}
	got := training.leakage(slices.Values(ids))
	if got.Questions != len(ids) || got.Overlap != len(ids)-maxLeakedIDs/2 {
		t.Errorf("questions %d, overlap %d; want %d, %d", got.Questions, got.Overlap, len(ids), len(ids)-maxLeakedIDs/2)
	}
	if !slices.Equal(got.IDs, want) {
		t.Errorf("ids %v, want %v", got.IDs, want)
	}
}

// TestLeakageReport: the warning opens report.md, before the results.
func TestLeakageReport(t *testing.T) {
	r := testReport(t)
	r.Leakage = (&JudgeTraining{Source: "judge/model.json", Known: true, Questions: []string{"q2"}}).leakage(slices.Values([]string{"q1", "q2"}))
	var md bytes.Buffer
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	i, j := strings.Index(md.String(), "WARNING: LEAKAGE"), strings.Index(md.String(), "## Results")
	if i < 0 || i > j {
		t.Errorf("report.md does not open on the leakage warning:\n%s", md.String()[:min(md.Len(), 800)])
	}
}
