package eval

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/data/synth"
	"github.com/distill-rag/distill/judge"
	"github.com/distill-rag/distill/llm"
	"github.com/distill-rag/distill/llm/llmtest"
	"github.com/distill-rag/distill/retrieve/bm25"
	"github.com/distill-rag/distill/retrieve/bm25/bm25test"
	"github.com/distill-rag/distill/rollout"
	"github.com/distill-rag/distill/rollout/runner"
)

// sampleSetup is the built-in setup over the bundled sample.
func sampleSetup(t *testing.T) (Setup, *synth.World) {
	t.Helper()
	w := synth.Sample()
	return Setup{
		Judge: judge.Lexical{}, BaseJudge: judge.Never{}, Extractor: rollout.LexicalExtractor{},
		Reader: rollout.LexicalReader{}, Retriever: bm25Index(t, w.Passages),
		Summarizer: rollout.LeadSummary{}, FocusedSummarizer: rollout.FocusedSummary{},
	}, w
}

// bm25Index indexes passages in a temporary BM25 index.
func bm25Index(t *testing.T, passages []data.Passage) *bm25.Index {
	return bm25test.Index(t, passages, bm25.BuildOptions{})
}

func byID(qs []data.Question) data.QuestionMap {
	m := make(data.QuestionMap, len(qs))
	for _, q := range qs {
		m[q.ID] = q
	}
	return m
}

// TestBenchOracle runs the opt-in oracle beside no-judge: it decides as
// retrieval truth does, so it is never wrong by that measure, and it
// queries the bare question as no-judge does, so it stops no later.
func TestBenchOracle(t *testing.T) {
	setup, w := sampleSetup(t)
	opts := Options{Questions: runner.Slice(w.Questions), ByID: byID(w.Questions), Dataset: "sample", Setup: setup,
		Out: filepath.Join(t.TempDir(), "bench"), Limit: 40, Workers: 4, Variants: []string{"no-judge", "oracle"}}
	sum, err := Run(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]Metrics{}
	for _, v := range sum.Report.Variants {
		m[v.Name] = v.Metrics
	}
	o, nj := m["oracle"], m["no-judge"]
	if o.Questions != 40 || o.Failed != 0 {
		t.Fatalf("oracle: %d questions, %d failed", o.Questions, o.Failed)
	}
	c := o.Calibration
	if c.States == 0 || c.Confusion.TP == 0 || c.FalsePositiveRate != 0 || c.CompleteJudgedInsufficient != 0 {
		t.Errorf("oracle calibration %+v, want true positives and no error", c)
	}
	if !(o.MeanRounds < nj.MeanRounds) {
		t.Errorf("oracle %.2f rounds, no-judge %.2f: want fewer", o.MeanRounds, nj.MeanRounds)
	}
	if o.CorrectRetrieval > nj.CorrectRetrieval {
		t.Errorf("oracle retrieved more gold (%.1f%%) than no-judge (%.1f%%) with the same queries", o.CorrectRetrieval, nj.CorrectRetrieval)
	}
	if slices.Contains(DefaultVariants(), "oracle") || !slices.Contains(VariantNames(), "oracle") {
		t.Errorf("oracle should be known and opt-in: defaults %v", DefaultVariants())
	}
}

func TestBenchSample(t *testing.T) {
	setup, w := sampleSetup(t)
	out := filepath.Join(t.TempDir(), "bench")
	opts := Options{Questions: runner.Slice(w.Questions), ByID: byID(w.Questions), Dataset: "sample", Setup: setup,
		Out: out, Limit: 80, Workers: 4}
	var reported [2]int // the last done and total of ReportProgress
	calls := 0
	opts.ReportProgress = func(done, total int) { reported, calls = [2]int{done, total}, calls+1 }
	sum, err := Run(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Report.Variants) != len(DefaultVariants()) {
		t.Fatalf("%d variants, want %d", len(sum.Report.Variants), len(DefaultVariants()))
	}
	if want := 80 * len(DefaultVariants()); reported != [2]int{want, want} || calls != want {
		t.Errorf("report progress ended at %v after %d calls, want %d of %d", reported, calls, want, want)
	}
	opts.ReportProgress = nil
	byName := map[string]Metrics{}
	for _, v := range sum.Report.Variants {
		if v.Metrics.Questions != 80 || v.Metrics.Failed != 0 {
			t.Errorf("%s: %d questions, %d failed", v.Name, v.Metrics.Questions, v.Metrics.Failed)
		}
		byName[v.Name] = v.Metrics
	}
	// The ablations behave as their definitions say.
	if m := byName["single-round"]; m.MeanRounds != 1 {
		t.Errorf("single-round: %.2f rounds", m.MeanRounds)
	}
	if m := byName["no-judge"]; m.MeanRounds != float64(rollout.DefaultMaxRetrievals) {
		t.Errorf("no-judge: %.2f rounds, want every retrieval spent", m.MeanRounds)
	}
	if a, b := byName["no-extractor"].Compression.Ratio, byName["full"].Compression.Ratio; !(a > b) {
		t.Errorf("raw documents compress no worse (%.3f) than pointers (%.3f)", a, b)
	}
	if byName["full"].EM <= byName["no-judge"].EM {
		t.Errorf("full EM %.1f not above no-judge %.1f", byName["full"].EM, byName["no-judge"].EM)
	}
	for _, f := range []string{ReportJSON, ReportMD, TracesHTML, PlotEMF1, PlotRounds, PlotCalibration, PlotCompressionF1} {
		if fi, err := os.Stat(filepath.Join(out, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	for _, f := range sum.Files {
		if filepath.Base(f) != f {
			t.Errorf("Summary.Files has %q, want a name in the output directory", f)
		} else if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("Summary.Files: %v", err)
		}
	}
	back, err := ReadReport(filepath.Join(out, ReportJSON))
	if err != nil || len(back.Variants) != len(sum.Report.Variants) || back.Variants[0].Metrics.EM != sum.Report.Variants[0].Metrics.EM {
		t.Errorf("report.json round trip: %v", err)
	}
	html, err := os.ReadFile(filepath.Join(out, TracesHTML))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range w.Questions[:80] {
		if !strings.Contains(string(html), q.ID) {
			t.Fatalf("traces.html lacks question %s", q.ID)
		}
	}
	// The traces page's numbers are the report's.
	checkTracesAgree(t, out, sum.Report)
	checkPaired(t, out, sum.Report, 80)
	for _, v := range sum.Report.Variants {
		t.Logf("%-13s EM %5.1f F1 %5.1f rounds %.2f compression %.3f", v.Name, v.Metrics.EM, v.Metrics.F1, v.Metrics.MeanRounds, v.Metrics.Compression.Ratio)
	}

	// Resumed after it finished, it measures the same runs again.
	opts.Resume = true
	again, err := Run(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if again.Report.Variants[0].Metrics.EM != sum.Report.Variants[0].Metrics.EM {
		t.Error("the resumed benchmark measured something else")
	}
	opts.Resume = false
	if _, err := Run(t.Context(), opts); !errors.Is(err, runner.ErrOutExists) {
		t.Errorf("second run without resume: %v, want ErrOutExists", err)
	}
}

func TestBenchVariantErrors(t *testing.T) {
	setup, w := sampleSetup(t)
	setup.BaseJudge = nil
	opts := Options{Questions: runner.Slice(w.Questions), ByID: byID(w.Questions), Setup: setup, Out: t.TempDir(), Variants: []string{"no-sft"}}
	if _, err := Run(t.Context(), opts); !errors.Is(err, ErrVariant) {
		t.Errorf("no-sft without a base judge: %v", err)
	}
	opts.Variants = []string{"full", "nonsense"}
	if _, err := Run(t.Context(), opts); !errors.Is(err, ErrVariant) {
		t.Errorf("unknown variant: %v", err)
	}
	// Without variants given, those the setup can build run.
	opts.Variants = nil
	opts.Limit = 5
	sum, err := Run(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range sum.Report.Variants {
		if v.Name == "no-sft" {
			t.Error("no-sft ran without a base judge")
		}
	}
}

// TestBenchFaultyServer runs the full variant with a model judge against a
// server that fails often: the benchmark completes, failures recorded.
func TestBenchFaultyServer(t *testing.T) {
	setup, w := sampleSetup(t)
	srv := llmtest.NewServer(llmtest.Options{Seed: 2, ServerError: 0.3, Malformed: 0.1})
	defer srv.Close()
	c, err := llm.New(llm.Config{BaseURL: srv.URL(), Model: "judge"})
	if err != nil {
		t.Fatal(err)
	}
	ch := llm.Retry(c, llm.RetryOptions{MaxAttempts: 2, Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
	setup.Judge = judge.NewLLM(ch, "judge")
	sum, err := Run(t.Context(), Options{Questions: runner.Slice(w.Questions), ByID: byID(w.Questions), Setup: setup,
		Out: t.TempDir(), Variants: []string{"full"}, Limit: 40, Workers: 4})
	if err != nil {
		t.Fatal(err)
	}
	m := sum.Report.Variants[0].Metrics
	if m.Questions != 40 || m.Failed == 0 || m.Failed == 40 {
		t.Errorf("%d questions, %d failed: want some failures recorded among 40", m.Questions, m.Failed)
	}
}

// checkTracesAgree reads the data embedded in traces.html and checks that
// each variant's questions, EM and F1 are those of the report.
func checkTracesAgree(t *testing.T, out string, r Report) {
	t.Helper()
	pages := readTraces(t, out)
	checkTraceLinks(t, pages)
	d := pages.data(t)
	if len(d.Variants) != len(r.Variants) {
		t.Fatalf("%d variants in the traces, %d in the report", len(d.Variants), len(r.Variants))
	}
	for k, v := range d.Variants {
		m := r.Variants[k].Metrics
		if v.Name != r.Variants[k].Name || v.Questions != m.Questions || math.Abs(100*v.EM-m.EM) > 1e-9 || math.Abs(100*v.F1-m.F1) > 1e-9 {
			t.Errorf("traces %s: %d questions, EM %.4f, F1 %.4f; report %d, %.4f, %.4f", v.Name, v.Questions, 100*v.EM, 100*v.F1, m.Questions, m.EM, m.F1)
		}
	}
}

// TestBenchShardsMerge runs a benchmark in two shards and merges them: the
// merged report is the one the whole benchmark gives.
func TestBenchShardsMerge(t *testing.T) {
	setup, w := sampleSetup(t)
	dir := t.TempDir()
	base := Options{Questions: runner.Slice(w.Questions), ByID: byID(w.Questions), Dataset: "sample", Setup: setup,
		Limit: 40, Workers: 2, Variants: []string{"no-judge", "full"}}
	whole := base
	whole.Out = filepath.Join(dir, "whole")
	want, err := Run(t.Context(), whole)
	if err != nil {
		t.Fatal(err)
	}
	var shards []string
	for i := range 2 {
		o := base
		o.Out = filepath.Join(dir, fmt.Sprint("shard", i))
		o.Shard = data.Shard{I: i, N: 2}
		if _, err := Run(t.Context(), o); err != nil {
			t.Fatal(err)
		}
		shards = append(shards, o.Out)
	}
	got, err := MergeShards(t.Context(), filepath.Join(dir, "merged"), shards, base)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Report.Variants) != len(want.Report.Variants) {
		t.Fatalf("%d variants merged, want %d", len(got.Report.Variants), len(want.Report.Variants))
	}
	for _, v := range got.Report.Variants {
		var wv VariantReport
		for _, x := range want.Report.Variants {
			if x.Name == v.Name {
				wv = x
			}
		}
		if v.Name != wv.Name || v.Metrics.Questions != wv.Metrics.Questions || v.Metrics.EM != wv.Metrics.EM || v.Metrics.F1 != wv.Metrics.F1 {
			t.Errorf("merged %s: %d questions EM %.2f F1 %.2f; whole %s: %d, %.2f, %.2f",
				v.Name, v.Metrics.Questions, v.Metrics.EM, v.Metrics.F1, wv.Name, wv.Metrics.Questions, wv.Metrics.EM, wv.Metrics.F1)
		}
	}
}

// checkPaired checks a benchmark's paired comparisons against its metrics
// and its scores file, and that bench compare of the benchmark with itself
// finds no difference.
func checkPaired(t *testing.T, out string, r Report, questions int) {
	t.Helper()
	if len(r.Paired) != len(r.Variants)-1 || r.Bootstrap == nil {
		t.Fatalf("%d paired comparisons (bootstrap %v) for %d variants, want one per variant but full", len(r.Paired), r.Bootstrap, len(r.Variants))
	}
	em := map[string]float64{}
	for _, v := range r.Variants {
		em[v.Name] = v.Metrics.EM
	}
	for _, p := range r.Paired {
		if p.Questions != questions || math.Abs(p.EM.Diff-(em[p.Variant]-em["full"])) > 1e-9 {
			t.Errorf("%s: paired over %d questions, EM Δ %v; want %d and %v", p.Variant, p.Questions, p.EM.Diff, questions, em[p.Variant]-em["full"])
		}
		if !(p.EM.Low <= p.EM.Diff && p.EM.Diff <= p.EM.High) {
			t.Errorf("%s: EM Δ %v outside its interval [%v, %v]", p.Variant, p.EM.Diff, p.EM.Low, p.EM.High)
		}
	}
	bm, err := OpenBenchmark(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range r.Variants {
		if n := len(bm.Scores[v.Name]); n != questions {
			t.Errorf("%s: %d rows in %s, want %d", v.Name, n, ScoresFile, questions)
		}
	}
	var b strings.Builder
	if err := Compare(&b, bm, bm); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("paired, B-A over the %d questions both ran", questions); !strings.Contains(b.String(), want) ||
		!strings.Contains(b.String(), "EM 0.0 [95% CI 0.0, 0.0], McNemar p = 1.000: not significant") {
		t.Errorf("compare of a benchmark with itself lacks the paired lines:\n%s", b.String())
	}
}

// TestBenchRunsEveryQuestion: without a limit, a benchmark runs every
// question, past the 1,000 of the reference evaluation.
func TestBenchRunsEveryQuestion(t *testing.T) {
	w, err := synth.Generate(synth.Config{Seed: 3, Questions: PaperLimit + 30})
	if err != nil {
		t.Fatal(err)
	}
	setup := Setup{Judge: judge.Lexical{}, Extractor: rollout.LexicalExtractor{}, Reader: rollout.LexicalReader{}, Retriever: bm25Index(t, w.Passages)}
	sum, err := Run(t.Context(), Options{Questions: runner.Slice(w.Questions), ByID: byID(w.Questions), Setup: setup,
		Out: filepath.Join(t.TempDir(), "bench"), Variants: []string{"single-round"}, Workers: 4})
	if err != nil {
		t.Fatal(err)
	}
	if got := sum.Report.Variants[0].Metrics.Questions; got != PaperLimit+30 {
		t.Errorf("got %d questions, want all %d", got, PaperLimit+30)
	}
}

// TestBenchQuestionsFile reads the questions from a file: the runs stream
// it, the report finds them by id, and the dataset is the questions' own.
func TestBenchQuestionsFile(t *testing.T) {
	setup, w := sampleSetup(t)
	dir := t.TempDir()
	path := filepath.Join(dir, data.QuestionsFile)
	qw, err := data.CreateParquet[data.Question](path, data.KindQuestions)
	if err != nil {
		t.Fatal(err)
	}
	if err := qw.Write(w.Questions[:20]); err != nil {
		t.Fatal(err)
	}
	if err := qw.Close(); err != nil {
		t.Fatal(err)
	}
	opts := Options{QuestionsFile: path, Setup: setup, Out: filepath.Join(dir, "bench"), Variants: []string{"full"}}
	sum, err := Run(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if m := sum.Report.Variants[0].Metrics; m.Questions != 20 || m.Failed != 0 {
		t.Errorf("%d questions, %d failed; want 20, 0", m.Questions, m.Failed)
	}
	if got := sum.Report.Dataset; got != w.Questions[0].Dataset {
		t.Errorf("dataset %q, want the questions' %q", got, w.Questions[0].Dataset)
	}
	opts.Questions, opts.Out = runner.Slice(w.Questions), filepath.Join(dir, "twice")
	if _, err := Run(t.Context(), opts); !errors.Is(err, ErrOptions) {
		t.Errorf("questions as a file and as values: got %v, want ErrOptions", err)
	}
}
