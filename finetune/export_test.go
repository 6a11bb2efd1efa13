package finetune_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/finetune"
	"github.com/distill-rag/distill/finetune/finetunetest"
	"github.com/distill-rag/distill/judge"
	"github.com/distill-rag/distill/llm"
)

// TestExportFormats checks every exported format against the labels: each
// example parses, its completion is valid judge JSON equal to the label,
// and its prompt is byte for byte the judge's.
func TestExportFormats(t *testing.T) {
	train, val := finetunetest.SampleLabels(t)
	dir := t.TempDir()
	sum, err := finetune.Export(t.Context(), finetune.ExportOptions{Train: train, Val: val, Dir: dir, MaxLength: 600})
	if err != nil {
		t.Fatal(err)
	}
	for _, split := range []struct {
		labels          string
		jsonl, sgpt, pq string
		n               int
		questions       []string
		summary         finetune.SplitSummary
	}{
		{train, sum.Files.TrainOpenAI, sum.Files.TrainShareGPT, sum.Files.TrainParquet, sum.Files.TrainExamples, sum.Files.TrainQuestions, sum.Train},
		{val, sum.Files.ValOpenAI, sum.Files.ValShareGPT, sum.Files.ValParquet, sum.Files.ValExamples, sum.Files.ValQuestions, sum.Val},
	} {
		labels, err := data.ReadParquet[data.Label](split.labels)
		if err != nil {
			t.Fatal(err)
		}
		if split.n != len(labels) || split.summary.Examples != len(labels) || split.summary.Sufficient+split.summary.Insufficient != len(labels) {
			t.Fatalf("%s: %d examples (summary %+v), want %d", split.jsonl, split.n, split.summary, len(labels))
		}
		ids := map[string]bool{}
		for _, l := range labels {
			ids[l.QuestionID] = true
		}
		if want := slices.Sorted(maps.Keys(ids)); !cmp.Equal(want, split.questions) {
			t.Errorf("%s: questions %v, want %v", split.jsonl, split.questions, want)
		}
		want := make([][]llm.Message, len(labels))
		for i, l := range labels {
			p := judge.Prompt(l.Question, l.Context)
			want[i] = []llm.Message{{Role: "system", Content: p.System}, {Role: "user", Content: p.User},
				{Role: "assistant", Content: judge.VerdictJSON(l.Verdict())}}
			// The completion is valid judge JSON, the label's verdict.
			v, err := judge.ParseVerdict([]byte(want[i][2].Content))
			if err != nil || v.Sufficient != l.Sufficient || len(v.GapItems) != len(l.GapItems) {
				t.Fatalf("completion %s: %+v, %v", want[i][2].Content, v, err)
			}
		}
		// The token lengths: each example's messages counted one by one,
		// with the chat format's tokens (4 a message, 3 an example).
		lengths := make([]int, len(want))
		over := 0
		for i, msgs := range want {
			lengths[i] = 3
			for _, m := range msgs {
				lengths[i] += 4 + llm.CountTokens("", m.Content)
			}
			if lengths[i] > 600 {
				over++
			}
		}
		slices.Sort(lengths)
		pct := func(p float64) int { return lengths[min(len(lengths)-1, int(p*float64(len(lengths))))] }
		if s := split.summary; s.TokensP50 != pct(0.5) || s.TokensP90 != pct(0.9) || s.TokensP99 != pct(0.99) ||
			s.TokensMax != lengths[len(lengths)-1] || s.OverMaxLength != over {
			t.Errorf("%s: token lengths %+v, want p50 %d, p90 %d, p99 %d, max %d, %d over 600", split.jsonl, s,
				pct(0.5), pct(0.9), pct(0.99), lengths[len(lengths)-1], over)
		}

		// OpenAI JSONL.
		raw, err := os.ReadFile(filepath.Join(dir, split.jsonl))
		if err != nil {
			t.Fatal(err)
		}
		var got [][]llm.Message
		sc := bufio.NewScanner(bytes.NewReader(raw))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var line struct {
				Messages []llm.Message `json:"messages"`
			}
			dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&line); err != nil {
				t.Fatalf("line %d of %s: %v", len(got)+1, split.jsonl, err)
			}
			got = append(got, line.Messages)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", split.jsonl, d)
		}

		// ShareGPT.
		var convs []struct {
			Conversations []struct{ From, Value string } `json:"conversations"`
			System        string                         `json:"system"`
		}
		raw, err = os.ReadFile(filepath.Join(dir, split.sgpt))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &convs); err != nil || len(convs) != len(want) {
			t.Fatalf("%s: %d conversations, %v", split.sgpt, len(convs), err)
		}
		for i, c := range convs {
			if c.System != want[i][0].Content || len(c.Conversations) != 2 || c.Conversations[0].From != "human" ||
				c.Conversations[0].Value != want[i][1].Content || c.Conversations[1].From != "gpt" || c.Conversations[1].Value != want[i][2].Content {
				t.Fatalf("%s conversation %d differs from the example", split.sgpt, i)
			}
		}

		// Parquet with a messages column.
		exs, err := data.ReadParquet[finetune.Example](filepath.Join(dir, split.pq))
		if err != nil || len(exs) != len(want) {
			t.Fatalf("%s: %d rows, %v", split.pq, len(exs), err)
		}
		for i, e := range exs {
			for k, m := range e.Messages {
				if m.Role != want[i][k].Role || m.Content != want[i][k].Content {
					t.Fatalf("%s row %d message %d differs", split.pq, i, k)
				}
			}
		}
	}

	var info map[string]struct {
		FileName   string            `json:"file_name"`
		Formatting string            `json:"formatting"`
		Columns    map[string]string `json:"columns"`
	}
	raw, err := os.ReadFile(filepath.Join(dir, sum.Files.DatasetInfo))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &info); err != nil {
		t.Fatal(err)
	}
	if e := info[finetune.TrainDataset]; e.FileName != filepath.Base(sum.Files.TrainShareGPT) || e.Formatting != "sharegpt" || e.Columns["messages"] != "conversations" {
		t.Errorf("dataset_info.json train entry %+v", e)
	}
	if _, ok := info[finetune.ValDataset]; !ok {
		t.Error("dataset_info.json has no validation entry")
	}
	if sum.Files.TemplateHash != judge.TemplateHash || len(sum.Files.DataHash) != 64 {
		t.Errorf("hashes %q %q", sum.Files.TemplateHash, sum.Files.DataHash)
	}
	if sum.Train.TokensP50 < 300 || sum.Train.TokensP50 > sum.Train.TokensP90 || sum.Train.TokensP90 > sum.Train.TokensMax || sum.Train.OverMaxLength == 0 {
		t.Errorf("token lengths %+v (max length 600)", sum.Train)
	}
	// The same data exports to the same hash.
	again, err := finetune.Export(t.Context(), finetune.ExportOptions{Train: train, Val: val, Dir: t.TempDir()})
	if err != nil || again.Files.DataHash != sum.Files.DataHash {
		t.Errorf("second export hash %q, want %q (%v)", again.Files.DataHash, sum.Files.DataHash, err)
	}
}

func TestExportRejects(t *testing.T) {
	train, _ := finetunetest.SampleLabels(t)
	dir := t.TempDir()
	// A labels file straight from distill label (no split) is accepted only
	// when its rows are kept labels; a dropped row is refused.
	rows, err := data.ReadParquet[data.Label](train)
	if err != nil {
		t.Fatal(err)
	}
	rows[3].DropRule = "empty-gaps"
	bad := filepath.Join(dir, "bad.parquet")
	w, err := data.CreateParquet[data.Label](bad, data.KindLabels)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(rows)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := finetune.Export(t.Context(), finetune.ExportOptions{Train: bad, Dir: dir}); err == nil {
		t.Error("a dropped row was exported")
	}
	// The examples before the bad row were written as they came: none of
	// them, and no temporary file, may be left.
	if left, _ := os.ReadDir(filepath.Join(dir, finetune.DataDir)); len(left) > 0 {
		t.Errorf("a refused export left %d files, the first %s", len(left), left[0].Name())
	}
	if _, err := finetune.Export(t.Context(), finetune.ExportOptions{Train: filepath.Join(dir, "none.parquet"), Dir: dir}); err == nil {
		t.Error("a missing file was exported")
	}
}

// TestExportEmptySplits checks that a training file without examples is
// refused, leaving no file, and that an empty validation file makes no
// validation files.
func TestExportEmptySplits(t *testing.T) {
	train, _ := finetunetest.SampleLabels(t)
	empty := filepath.Join(t.TempDir(), "empty.parquet")
	w, err := data.CreateParquet[data.Label](empty, data.KindLabels)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	if _, err := finetune.Export(t.Context(), finetune.ExportOptions{Train: empty, Dir: dir}); !errors.Is(err, finetune.ErrNoExamples) {
		t.Errorf("empty training file: got %v, want ErrNoExamples", err)
	}
	if left, _ := os.ReadDir(filepath.Join(dir, finetune.DataDir)); len(left) > 0 {
		t.Errorf("a refused export left %d files, the first %s", len(left), left[0].Name())
	}

	dir = t.TempDir()
	sum, err := finetune.Export(t.Context(), finetune.ExportOptions{Train: train, Val: empty, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Files.ValExamples != 0 || sum.Files.ValOpenAI != "" || sum.Val.Examples != 0 || sum.Files.TrainExamples == 0 {
		t.Errorf("summary with an empty validation file: %+v", sum.Files)
	}
	for _, name := range []string{"val.jsonl", "val.sharegpt.json", "val.parquet"} {
		if _, err := os.Stat(filepath.Join(dir, finetune.DataDir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %v, want no such file", name, err)
		}
	}
}
