package filter

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/distill-rag/distill/data"
)

// lbl returns the label of state (qid, round): by default one sample,
// sufficient, agreement 1, retrieval truth "neither", then changed by mods.
func lbl(qid string, round int32, mods ...func(*data.Label)) data.Label {
	l := data.Label{
		QuestionID: qid, Dataset: "hotpotqa", Round: round,
		Question: "question " + qid, Context: fmt.Sprintf("context of %s at round %d", qid, round),
		GoldTitles: []string{"Alpha", "Beta"}, Answers: []string{"gamma"}, TruthTitlesFound: 1,
		TruthStrength: data.Neither.String(),
		Teacher:       "llm", TeacherModel: "gpt-test", TeacherTemplate: "tpl",
		Samples:    []data.LabelSample{{Sample: 0, Sufficient: true, Model: "gpt-test"}},
		Sufficient: true, GapItems: []data.GapItem{}, GapSupport: []int32{},
		Votes: 1, SufficientVotes: 1, Agreement: 1,
	}
	for _, m := range mods {
		m(&l)
	}
	return l
}

// insufficient makes the verdict insufficient with the given gap items.
func insufficient(gaps ...data.GapItem) func(*data.Label) {
	return func(l *data.Label) {
		l.Sufficient, l.SufficientVotes = false, 0
		l.GapItems = gaps
		l.GapSupport = make([]int32, len(gaps))
		for i := range l.GapSupport {
			l.GapSupport[i] = l.Votes
		}
		for i := range l.Samples {
			l.Samples[i].Sufficient = false
			l.Samples[i].GapItems = gaps
		}
	}
}

// sampled gives the label k samples of which agree gave the verdict (the
// majority): apply before insufficient.
func sampled(k, agree int) func(*data.Label) {
	return func(l *data.Label) {
		l.Samples = make([]data.LabelSample, k)
		for i := range l.Samples {
			l.Samples[i] = data.LabelSample{Sample: int32(i), Sufficient: i < agree, Model: "gpt-test"}
		}
		l.Votes, l.SufficientVotes = int32(k), int32(agree)
		l.Agreement = float64(agree) / float64(k)
	}
}

func asStrongPositive(l *data.Label) {
	l.TruthStrength = data.StrongPositive.String()
	l.TruthTitlesFound, l.TruthAnswerFound, l.TruthComplete = 2, true, true
}

func asStrongNegative(l *data.Label) {
	l.TruthStrength = data.StrongNegative.String()
	l.TruthTitlesFound, l.TruthAnswerFound, l.TruthComplete = 0, false, false
}

func failed(l *data.Label) {
	l.Samples[0].Error = "HTTP 500"
	l.Sufficient, l.Votes, l.SufficientVotes, l.Agreement = false, 0, 0, 0
	l.Failure = "no usable sample: sample 0: HTTP 500"
}

func contradicted(l *data.Label) {
	l.Samples[0].Contradiction = "sufficient with gap items"
	l.Contradiction = true
	l.Contradictions = []string{"sample 0: sufficient with gap items"}
}

func gap(category, target, slot string) data.GapItem {
	return data.GapItem{Category: category, Target: target, Slot: slot}
}

// writeLabels writes rows as a labels file in dir and returns its path.
func writeLabels(t *testing.T, dir string, rows []data.Label) string {
	t.Helper()
	return writeKind(t, filepath.Join(dir, "labels.parquet"), data.KindLabels, rows)
}

func writeKind(t *testing.T, path string, kind data.Kind, rows []data.Label) string {
	t.Helper()
	w, err := data.CreateParquet[data.Label](path, kind)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	if err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// output is what a run wrote.
type output struct {
	train, val, dropped []data.Label
}

func (o output) all() []data.Label {
	return append(append(append([]data.Label(nil), o.train...), o.val...), o.dropped...)
}

func readOutput(t *testing.T, dir string) output {
	t.Helper()
	read := func(name string) []data.Label {
		rows, err := data.ReadParquet[data.Label](filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return rows
	}
	return output{train: read(TrainFile), val: read(ValFile), dropped: read(DroppedFile)}
}

// run filters rows with opts (In and Out set to fresh paths) and returns
// the summary and the output, after checking that the counts add up.
func run(t *testing.T, rows []data.Label, opts Options) (Summary, output) {
	t.Helper()
	dir := t.TempDir()
	opts.In = []string{writeLabels(t, dir, rows)}
	opts.Out = filepath.Join(dir, "out")
	sum, err := Run(context.Background(), opts)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	out := readOutput(t, opts.Out)
	checkCounts(t, sum, out, len(rows))
	return sum, out
}

// checkCounts checks that every input row is in exactly one output (in
// train more than once only as the copies of upsampling), and that the
// summary says so.
func checkCounts(t *testing.T, sum Summary, out output, in int) {
	t.Helper()
	var byRule int64
	for _, d := range sum.Dropped {
		byRule += d.Rows
	}
	copies := int64(0)
	seen := make(map[data.StateKey]string)
	for split, rows := range map[string][]data.Label{"train": out.train, "val": out.val, "dropped": out.dropped} {
		for _, l := range rows {
			prev, ok := seen[l.Key()]
			switch {
			case ok && prev == "train" && split == "train":
				copies++
			case ok:
				t.Errorf("state %v in %s and %s", l.Key(), prev, split)
			}
			seen[l.Key()] = split
		}
	}
	got := Rows{In: sum.Rows.In, Train: int64(len(out.train)), Val: int64(len(out.val)), Dropped: int64(len(out.dropped)), Upsampled: copies}
	want := Rows{In: int64(in), Train: sum.Rows.Train, Val: sum.Rows.Val, Dropped: byRule, Upsampled: sum.Rows.Upsampled}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	if n := got.Train - got.Upsampled + got.Val + got.Dropped; n != got.In {
		t.Errorf("got %d train (%d copies) + %d val + %d dropped = %d rows, want %d", got.Train, got.Upsampled, got.Val, got.Dropped, n, got.In)
	}
}

// dropped returns the rule counts as a map, for comparisons.
func droppedByRule(s Summary) map[string]int64 {
	m := make(map[string]int64)
	for _, d := range s.Dropped {
		if d.Rows > 0 {
			m[d.Rule] = d.Rows
		}
	}
	return m
}
