package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/filter"
	"github.com/distill-rag/distill/internal/testkit"
	"github.com/distill-rag/distill/label"
)

// TestOfflineChain filters the labels of the offline pipeline on the
// bundled sample (rollout, label with the retrieval-truth teacher): the
// filter's counts add up to the labels, and no question is on both sides.
func TestOfflineChain(t *testing.T) {
	t.Chdir(t.TempDir())
	ch := offlineChain(t)
	ro, lab := ch.Rollout, ch.Labels
	r := runDistill(t, "--quiet", "filter", "--in", lab, "--out", "sft")
	if r.code != 0 {
		t.Fatalf("filter: exit %d, stderr %q", r.code, r.stderr)
	}
	for _, want := range []string{"rule", "contradicts-strong-positive", "empty-gaps", "split", "train", "val", "teacher vs retrieval truth"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("filter table lacks %q:\n%s", want, r.stdout)
		}
	}
	labels := testkit.Labels(t, filepath.Join(lab, label.LabelsFile))
	var sum filter.Summary
	b, err := os.ReadFile(filepath.Join("sft", filter.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	var dropped int64
	for _, rc := range sum.Dropped {
		dropped += rc.Rows
	}
	if sum.Rows.In != int64(len(labels)) || sum.Rows.Train+sum.Rows.Val+dropped != sum.Rows.In || sum.Rows.Val == 0 {
		t.Errorf("rows %+v, dropped %d, labels %d: they do not add up", sum.Rows, dropped, len(labels))
	}
	side := map[string]string{}
	for _, f := range []string{filter.TrainFile, filter.ValFile} {
		rows, err := data.ReadParquet[data.Label](filepath.Join("sft", f))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range rows {
			if s, ok := side[l.QuestionID]; ok && s != l.Split {
				t.Fatalf("question %s is in %s and %s", l.QuestionID, s, l.Split)
			}
			side[l.QuestionID] = l.Split
		}
	}

	r = runDistill(t, "--quiet", "filter", "--in", lab, "--out", "sft")
	if r.code != exitUsage || !strings.Contains(r.stderr, "--overwrite") {
		t.Errorf("second filter: exit %d, stderr %q", r.code, r.stderr)
	}
	r = runDistill(t, "--quiet", "filter", "--in", lab, "--out", "sft", "--overwrite", "--balance", "--val-fraction", "0.2")
	if r.code != 0 || !strings.Contains(r.stdout, "balance") {
		t.Errorf("filter --overwrite --balance: exit %d, stderr %q", r.code, r.stderr)
	}
	r = runDistill(t, "--quiet", "filter", "--in", lab, "--out", "rows", "--val-split", "row", "--balance-ratio", "1.5")
	if r.code != 0 || !strings.Contains(r.stdout, "of rows, seed") || !strings.Contains(r.stdout, "at most 1.5 times") {
		t.Errorf("filter --val-split row --balance-ratio 1.5: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runDistill(t, "--quiet", "filter", "--in", lab, "--out", "bad", "--val-split", "state")
	if r.code != exitUsage || !strings.Contains(r.stderr, "--val-split must be question or row") {
		t.Errorf("filter --val-split state: exit %d, stderr %q", r.code, r.stderr)
	}
	r = runDistill(t, "--quiet", "filter", "--in", filepath.Join(ro, "trajectories.parquet"), "--out", "x")
	if r.code != exitUsage || !strings.Contains(r.stderr, "trajectories") {
		t.Errorf("filter of a trajectories file: exit %d, stderr %q", r.code, r.stderr)
	}
	// Several inputs are filtered as one, so the same labels twice are
	// states labelled twice.
	r = runDistill(t, "--quiet", "filter", "--in", lab, "--in", filepath.Join(lab, label.LabelsFile), "--out", "twice")
	if r.code != exitUsage || !strings.Contains(r.stderr, "labelled twice") {
		t.Errorf("filter of one input twice: exit %d, stderr %q", r.code, r.stderr)
	}
}
