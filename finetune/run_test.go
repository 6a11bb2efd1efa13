package finetune_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/distill-rag/distill/finetune"
	"github.com/distill-rag/distill/finetune/builtin"
	"github.com/distill-rag/distill/finetune/finetunetest"
	"github.com/distill-rag/distill/judge"
)

// stuck is a backend whose jobs never end.
type stuck struct{ finetune.Backend }

func (stuck) Name() string { return "stuck" }

func (stuck) Submit(context.Context, finetune.Job) (finetune.State, error) {
	return finetune.State{ID: "s1", Backend: "stuck", Status: finetune.StatusRunning}, nil
}

// TestRun trains in a fresh directory, re-attaches to the job there,
// and refuses what it must.
func TestRun(t *testing.T) {
	train, _ := finetunetest.SampleLabels(t)
	in := filepath.Dir(train)
	out := filepath.Join(t.TempDir(), "judge")
	open := func(name string) (finetune.Backend, error) {
		if name == "stuck" {
			return stuck{}, nil
		}
		return builtin.Backend{}, nil
	}
	opts := finetune.RunOptions{In: in, Out: out, Job: finetune.Job{BaseModel: "none", Name: "s2g-judge", Hyper: finetune.DefaultHyperparameters()}, Backend: builtin.Name, Open: open}
	exported := false
	opts.OnExport = func(finetune.ExportSummary) error { exported = true; return nil }
	res, err := finetune.Run(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if !exported || res.State.Status != finetune.StatusSucceeded || res.Handback == nil || res.Reattached {
		t.Fatalf("first run: exported %v, %+v", exported, res)
	}
	if _, err := judge.ReadHandback(out); err != nil {
		t.Errorf("no hand-back in %s: %v", out, err)
	}
	// Again: the job is there, re-attached to.
	res, err = finetune.Run(t.Context(), opts)
	if err != nil || !res.Reattached || res.Handback == nil {
		t.Fatalf("second run: %v, %+v", err, res)
	}

	refused := func(o finetune.RunOptions, want error) {
		t.Helper()
		_, err := finetune.Run(t.Context(), o)
		var re *finetune.RefusedError
		if !errors.As(err, &re) || !errors.Is(err, want) {
			t.Errorf("got %v, want a *RefusedError of %v", err, want)
		}
	}
	o := opts
	o.ExportOnly = true
	refused(o, finetune.ErrHoldsJob)
	o = opts
	o.Backend, o.BackendChosen = "stuck", true
	refused(o, finetune.ErrOtherBackend)
	// --overwrite replaces a job that has ended; one that runs is kept.
	o = opts
	o.Backend, o.Overwrite, o.Detach = "stuck", true, true
	if res, err := finetune.Run(t.Context(), o); err != nil || res.State.Status != finetune.StatusRunning {
		t.Fatalf("overwrite: %v, %+v", err, res)
	}
	refused(o, finetune.ErrJobNotEnded)

	// A directory that holds files but no job, and a run without input.
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	o = opts
	o.Out = other
	refused(o, finetune.ErrNotEmptyNoJob)
	o = opts
	o.Out, o.In = filepath.Join(t.TempDir(), "fresh"), ""
	refused(o, finetune.ErrNoInput)
	if _, err := os.Stat(o.Out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused fresh run left %s: %v", o.Out, err)
	}
}
