package main

import (
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/data/synth"
	"github.com/distill-rag/distill/internal/testkit"
	"github.com/distill-rag/distill/llm/llmtest"
	"github.com/distill-rag/distill/rollout/runner"
)

// checkTrajectories reads a rollout's trajectories.parquet and checks that
// it holds each question of want exactly once: contiguous rows numbered
// from round 0, the last one final (a failure row, with its reason, after
// the states a failed question completed).
func checkTrajectories(t *testing.T, path string, want []string) []data.State {
	t.Helper()
	rows, err := data.ReadParquet[data.State](path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	failed := t.Failed() // an earlier check's failure is not this one's
	testkit.CheckTrajectories(t, rows, want)
	if !failed && t.Failed() {
		t.FailNow()
	}
	return rows
}

// TestRolloutSample runs `distill rollout` with no flags, as a new user
// would: the bundled sample, built-in roles, the default output directory.
func TestRolloutSample(t *testing.T) {
	t.Chdir(t.TempDir())
	r := runDistill(t, "--quiet", "rollout")
	if r.code != 0 {
		t.Fatalf("rollout: exit %d, stderr %q", r.code, r.stderr)
	}
	for _, want := range []string{"output:", defaultSampleOut, "questions:", "200", "run now:", "200 done, 0 failed", "retrievals per question:", "trajectories:", "run record:", "questions/s"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("rollout output lacks %q:\n%s", want, r.stdout)
		}
	}
	rows := checkTrajectories(t, filepath.Join(defaultSampleOut, runner.TrajectoriesFile), testkit.QuestionIDs(synth.Sample().Questions))
	if rows[0].JudgeModel == "" || rows[0].JudgeTemplate == "" || rows[0].Question == "" {
		t.Errorf("first row lacks provenance: %+v", rows[0])
	}
	rep, err := runner.ReadReport(defaultSampleOut)
	if err != nil || rep.Status != runner.StatusDone || rep.Roles.Judge.Name != "lexical" || rep.Config.Loop.MaxRetrievals != 4 || rep.Version == "" {
		t.Errorf("run.json: %+v, %v", rep, err)
	}

	// Again: the output is there, so it says how to go on.
	r = runDistill(t, "--quiet", "rollout")
	if r.code != exitUsage || !strings.Contains(r.stderr, "use --resume") {
		t.Errorf("second rollout: exit %d, stderr %q; want %d and a hint to use --resume", r.code, r.stderr, exitUsage)
	}
	r = runDistill(t, "--quiet", "rollout", "--resume")
	if r.code != 0 || !strings.Contains(r.stdout, "already done (resumed):   200") {
		t.Errorf("rollout --resume of a finished run: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runDistill(t, "--quiet", "rollout", "--resume", "--policy", "fixed")
	if r.code != exitUsage || !strings.Contains(r.stderr, "configured differently") {
		t.Errorf("resume with another policy: exit %d, stderr %q", r.code, r.stderr)
	}
	r = runDistill(t, "data", "show", "-n", "1", filepath.Join(defaultSampleOut, runner.TrajectoriesFile))
	if r.code != 0 || !strings.Contains(r.stdout, `"question_id"`) {
		t.Errorf("data show of the trajectories: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

func TestRolloutUsageErrors(t *testing.T) {
	dir := t.TempDir()
	q := filepath.Join(dir, "q.parquet")
	tests := []struct {
		name     string
		args     []string
		inStderr string
	}{
		{"judge llm without model", []string{"--judge", "llm"}, "--judge llm needs --judge-model"},
		{"extractor llm without model", []string{"--extractor", "llm"}, "--extractor-model: extractor llm needs a model"},
		{"reader llm without model", []string{"--reader", "llm"}, "--reader-model: reader llm needs a model"},
		{"bad price", []string{"--judge", "llm", "--judge-model", "m", "--price", "m=1"}, "--price: price \"m=1\": want MODEL=INPUT:OUTPUT"},
		{"unknown judge", []string{"--judge", "oracle"}, `unknown --judge "oracle" (want lexical, never, always, llm, builtin:PATH)`},
		{"unknown extractor", []string{"--extractor", "never"}, `--extractor: unknown extractor "never" (want lexical, llm)`},
		{"model without llm", []string{"--judge-model", "gpt-4o-mini"}, "--judge-model and --judge-base-url are for --judge llm, not lexical"},
		{"base url without llm", []string{"--reader-base-url", "http://x/v1"}, "--reader-model, --reader-base-url: a model and a server are for reader llm, not lexical"},
		{"bad policy", []string{"--policy", "greedy"}, `--policy: policy "greedy"`},
		{"bad dedup", []string{"--dedup", "url"}, `--dedup: dedup "url"`},
		{"bad shard", []string{"--shard", "2/2"}, "--shard: shard 2/2"},
		{"shard not i/n", []string{"--shard", "2"}, "want i/n"},
		{"no workers", []string{"--workers", "0"}, "--workers must be at least 1"},
		{"no rounds", []string{"--max-rounds", "0"}, "--max-rounds must be at least 1"},
		{"bad top-k", []string{"--top-k", "-1"}, "--top-k must be at least 1"},
		{"negative limit", []string{"--limit", "-2"}, "--limit must not be negative"},
		{"bad interval", []string{"--checkpoint-interval", "0s"}, "--checkpoint-interval must be positive"},
		{"both sources", []string{"--questions", q, "--dataset", "sample"}, "give --questions or --dataset, not both"},
		{"unknown dataset", []string{"--dataset", "nq"}, `unknown --dataset "nq"`},
		{"questions without index", []string{"--questions", q, "--out", dir}, "--index is required with --questions"},
		{"questions without out", []string{"--questions", q, "--index", dir}, "--out is required with --questions"},
		{"argument", []string{"extra"}, `unexpected argument "extra"`},
		{"resume elsewhere", []string{"--resume", "--out", dir, "--limit", "3"}, ""},
	}
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a run"), 0o644)
	tests[len(tests)-1].inStderr = "has no run.json"
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runDistill(t, append([]string{"--quiet", "rollout"}, tc.args...)...)
			if r.code != exitUsage || !strings.Contains(r.stderr, tc.inStderr) || r.stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and %q", r.code, r.stdout, r.stderr, exitUsage, tc.inStderr)
			}
		})
	}
	// Not usage errors: files that are not what they should be.
	r := runDistill(t, "--quiet", "rollout", "--questions", filepath.Join(dir, "none.parquet"), "--index", dir, "--out", filepath.Join(dir, "o"))
	if r.code != 1 || !strings.Contains(r.stderr, "is not an index directory") {
		t.Errorf("bad index: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestRolloutShardsAndMerge imports a dataset, indexes it, runs it as two
// shards and merges them, all through the CLI.
func TestRolloutShardsAndMerge(t *testing.T) {
	dir := t.TempDir()
	ds, idx := filepath.Join(dir, "ds"), filepath.Join(dir, "idx")
	for _, args := range [][]string{
		{"data", "synth", "--seed", "7", "--count", "150", "--out", ds},
		{"index", "--corpus", filepath.Join(ds, data.CorpusFile), "--out", idx},
	} {
		if r := runDistill(t, append([]string{"--quiet"}, args...)...); r.code != 0 {
			t.Fatalf("%v: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
	qs, err := data.ReadParquet[data.Question](filepath.Join(ds, data.QuestionsFile))
	if err != nil {
		t.Fatal(err)
	}
	var shards []string
	for _, s := range []string{"0/2", "1/2"} {
		out := filepath.Join(dir, "shard"+s[:1])
		r := runDistill(t, "--quiet", "rollout", "--questions", filepath.Join(ds, data.QuestionsFile), "--index", idx,
			"--out", out, "--shard", s, "--limit", "120", "--workers", "3", "--policy", "fixed", "--max-rounds", "2", "--judge", "never")
		if r.code != 0 || !strings.Contains(r.stdout, `shard "`+s+`"`) {
			t.Fatalf("rollout --shard %s: exit %d, stdout %q, stderr %q", s, r.code, r.stdout, r.stderr)
		}
		shards = append(shards, out)
	}
	merged := filepath.Join(dir, "merged")
	r := runDistill(t, append([]string{"--quiet", "merge", "--out", merged}, shards...)...)
	if r.code != 0 || !strings.Contains(r.stdout, "120 questions (120 done, 0 failed)") {
		t.Fatalf("merge: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	rows := checkTrajectories(t, filepath.Join(merged, runner.TrajectoriesFile), testkit.QuestionIDs(qs[:120]))
	for _, row := range rows {
		if row.IsFinal && row.Round != 2 {
			t.Fatalf("question %s: final at round %d, want 2 (fixed policy, --max-rounds 2)", row.QuestionID, row.Round)
		}
	}

	// One shard alone: merged, the other named missing (on stdout, and a warning).
	r = runDistill(t, "merge", "--out", filepath.Join(dir, "half"), shards[0])
	if r.code != 0 || !strings.Contains(r.stdout, "missing shards:") || !strings.Contains(r.stdout, "1/2") || !strings.Contains(r.stderr, "lacks shards") {
		t.Errorf("merge of one shard: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	for _, tc := range []struct {
		args     []string
		code     int
		inStderr string
	}{
		{[]string{"merge", shards[0]}, exitUsage, "--out is required"},
		{[]string{"merge", "--out", filepath.Join(dir, "m1")}, exitUsage, "give the rollout output directories"},
		{[]string{"merge", "--out", merged, shards[0]}, exitUsage, "is not empty"},
		{[]string{"merge", "--out", filepath.Join(dir, "m2"), shards[0], shards[0]}, exitUsage, "both shard 0/2"},
		{[]string{"merge", shards[0], "--out", filepath.Join(dir, "m3")}, exitUsage, "put flags before arguments"},
		{[]string{"merge", "--out", filepath.Join(dir, "m4"), filepath.Join(dir, "nope")}, 1, "no such file"},
	} {
		r := runDistill(t, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.inStderr) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, r.code, r.stderr, tc.code, tc.inStderr)
		}
	}
}

// TestRolloutKill9 kills `distill rollout` with SIGKILL twice, each time
// just after it committed a checkpoint (while it goes on working and
// writing the next part), resumes it each time, and checks that the
// finished output holds every question exactly once.
func TestRolloutKill9(t *testing.T) {
	dir := t.TempDir()
	ds, idx, out := filepath.Join(dir, "ds"), filepath.Join(dir, "idx"), filepath.Join(dir, "run")
	for _, args := range [][]string{
		{"data", "synth", "--seed", "3", "--count", "1000", "--out", ds},
		{"index", "--corpus", filepath.Join(ds, data.CorpusFile), "--out", idx},
	} {
		if r := runBinary(t, nil, append([]string{"--quiet"}, args...)...); r.code != 0 {
			t.Fatalf("%v: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
	args := []string{"--log-format", "json", "rollout", "--questions", filepath.Join(ds, data.QuestionsFile), "--index", idx,
		"--out", out, "--workers", "2", "--checkpoint-questions", "40", "--policy", "fixed"}
	if !killAfterCheckpoint(t, nil, args...) {
		t.Fatal("the first run finished before it could be killed")
	}
	parts, _ := filepath.Glob(filepath.Join(out, runner.PartsDir, "part-*.parquet"))
	if len(parts) == 0 {
		t.Fatal("no part committed before the kill")
	}
	if _, err := os.Stat(filepath.Join(out, runner.TrajectoriesFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a killed run left trajectories.parquet: %v", err)
	}
	resumed := append(slices.Clone(args), "--resume")
	if !killAfterCheckpoint(t, nil, resumed...) {
		t.Log("the resumed run finished before the second kill")
	}

	r := runBinary(t, nil, append([]string{"--quiet"}, resumed...)...)
	if r.code != 0 {
		t.Fatalf("final resume: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "1000 questions (1000 done, 0 failed)") {
		t.Errorf("final resume output:\n%s", r.stdout)
	}
	qs, err := data.ReadParquet[data.Question](filepath.Join(ds, data.QuestionsFile))
	if err != nil {
		t.Fatal(err)
	}
	checkTrajectories(t, filepath.Join(out, runner.TrajectoriesFile), testkit.QuestionIDs(qs))
	rep, err := runner.ReadReport(out)
	if err != nil || rep.Resumes != 2 || rep.Counts.AlreadyDone == 0 {
		t.Errorf("run.json after two resumes: resumes %d, already done %d, %v", rep.Resumes, rep.Counts.AlreadyDone, err)
	}
	leftovers, _ := filepath.Glob(filepath.Join(out, runner.PartsDir, ".*"))
	if len(leftovers) > 0 {
		t.Errorf("leftover temporary files: %v", leftovers)
	}
	t.Logf("killed twice, resumed: %d questions, %d rows, %d parts, %d already done at the last resume",
		rep.Counts.Output.Questions, rep.Counts.Output.Rows, rep.Counts.Output.Parts, rep.Counts.AlreadyDone)
}

// TestRolloutLLMRolesWithFaults runs all three roles against an
// OpenAI-compatible server that fails a third of its requests (5xx,
// malformed and truncated bodies): every question must come out exactly
// once, failures with their reason, and run.json must account the calls.
func TestRolloutLLMRolesWithFaults(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Options{
		Seed: 7, ServerError: 0.12, Unavailable: 0.06, Malformed: 0.08, Truncated: 0.06,
		Answer: func(r llmtest.Request) string {
			switch {
			case strings.Contains(string(r.Body), "evidence_global_ids"):
				return `{"evidence_global_ids": [1, 2, 3]}`
			case r.ResponseFormat == "json_schema":
				return `{"sufficient": false, "gap_items": [{"category": "attribute", "target": "x", "slot": "y", "description": ""}]}`
			}
			return "Answer: somewhere"
		},
	})
	defer srv.Close()
	t.Setenv("OPENAI_API_KEY", "")
	out := filepath.Join(t.TempDir(), "run")
	args := []string{"--quiet", "rollout", "--dataset", "sample", "--limit", "20", "--workers", "8", "--out", out, "--max-rounds", "2",
		"--price", "test-judge=1000:2000"}
	for _, role := range []string{"judge", "extractor", "reader"} {
		args = append(args, "--"+role, "llm", "--"+role+"-model", "test-"+role, "--"+role+"-base-url", srv.URL())
	}
	r := runDistill(t, args...)
	if r.code != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	rows := checkTrajectories(t, filepath.Join(out, runner.TrajectoriesFile), testkit.QuestionIDs(synth.Sample().Questions[:20]))
	failed := 0
	for _, row := range rows {
		switch {
		case row.Failure != "":
			failed++
		case row.JudgeModel == "" || row.JudgeTemplate == "":
			t.Errorf("question %s round %d: judge model %q, template %q: want both recorded", row.QuestionID, row.Round, row.JudgeModel, row.JudgeTemplate)
		}
	}
	raw, err := os.ReadFile(filepath.Join(out, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	var report struct {
		Usage []struct {
			Role     string  `json:"role"`
			Requests int64   `json:"requests"`
			Retries  int64   `json:"retries"`
			CostUSD  float64 `json:"cost_usd"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(raw, &report); err != nil {
		t.Fatalf("run.json: %v", err)
	}
	var requests, retries int64
	for _, u := range report.Usage {
		requests += u.Requests
		retries += u.Retries
		if (u.Role == "judge") != (u.CostUSD > 0) {
			t.Errorf("role %s costs $%v: want a cost for the judge only (--price test-judge=...)", u.Role, u.CostUSD)
		}
	}
	if len(report.Usage) != 3 || requests == 0 || retries == 0 {
		t.Errorf("run.json usage %+v: want three roles with requests and retries", report.Usage)
	}
	t.Logf("20 questions against a server failing 32%% of requests: %d failed questions, %d requests, %d retries", failed, requests, retries)
}

// TestRolloutReplicas spreads a model judge's requests over two replicas
// given as one comma-separated base URL.
func TestRolloutReplicas(t *testing.T) {
	t.Chdir(t.TempDir())
	var urls []string
	var servers []*llmtest.Server
	for range 2 {
		s := llmtest.NewServer(llmtest.Options{Answer: func(llmtest.Request) string { return `{"sufficient": true, "gap_items": []}` }})
		defer s.Close()
		urls, servers = append(urls, s.URL()), append(servers, s)
	}
	t.Setenv("OPENAI_API_KEY", "")
	r := runDistill(t, "--quiet", "rollout", "--out", "ro", "--judge", "llm", "--judge-model", "j", "--judge-base-url", strings.Join(urls, ","))
	if r.code != 0 {
		t.Fatalf("rollout: exit %d, stderr %q", r.code, r.stderr)
	}
	for i, s := range servers {
		if n := s.Counts().Requests; n < 50 {
			t.Errorf("replica %d got %d requests", i, n)
		}
	}
}

// TestSharedModelFlags runs every model role against one server named only
// by OPENAI_BASE_URL and one --model: no role's own flags, and not one
// request to OpenAI's API.
func TestSharedModelFlags(t *testing.T) {
	t.Chdir(t.TempDir())
	srv := llmtest.NewServer(llmtest.Options{Answer: func(r llmtest.Request) string {
		switch {
		case strings.Contains(string(r.Body), "evidence_global_ids"):
			return `{"evidence_global_ids": [1]}`
		case strings.Contains(string(r.Body), "gap_items"):
			return `{"sufficient": true, "gap_items": []}`
		}
		return "Answer: x"
	}})
	defer srv.Close()
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", srv.URL())
	r := runDistill(t, "--quiet", "rollout", "--out", "ro", "--limit", "3", "--model", "shared-model",
		"--judge", "llm", "--extractor", "llm", "--reader", "llm")
	if r.code != 0 {
		t.Fatalf("rollout: exit %d, stderr %q", r.code, r.stderr)
	}
	models := map[string]bool{}
	for _, req := range srv.Requests() {
		models[req.Model] = true
	}
	if len(models) != 1 || !models["shared-model"] {
		t.Errorf("models asked for: %v, want only shared-model", models)
	}
	if n := srv.Counts().Requests; n < 3*3 {
		t.Errorf("server got %d requests, want at least one per role and question", n)
	}
	rows := checkTrajectories(t, filepath.Join("ro", runner.TrajectoriesFile), testkit.QuestionIDs(synth.Sample().Questions[:3]))
	for _, row := range rows {
		if row.Failure != "" {
			t.Errorf("question %s failed: %s", row.QuestionID, row.Failure)
		}
	}
}

// deadURL returns the base URL of a loopback port where nothing listens.
func deadURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr + "/v1"
}

// TestDeadServer: a model server that cannot be reached stops a rollout
// early with one error naming its URL, and a run in which every question
// (or state) failed exits 1 with the reason; resumed against a live
// server, the run does the failed questions again and ends well.
func TestDeadServer(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	dead := deadURL(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "ro")
	roll := func(url string, more ...string) result {
		return runDistill(t, append([]string{"--quiet", "rollout", "--judge", "llm", "--judge-model", "m", "--judge-base-url", url,
			"--max-attempts", "1", "--workers", "2", "--out", out}, more...)...)
	}
	r := roll(dead, "--limit", "60")
	if r.code != exitFailure || !strings.Contains(r.stderr, dead) || !strings.Contains(r.stderr, "too many failures in a row") || !strings.Contains(r.stderr, "--resume") {
		t.Fatalf("rollout against a dead server: exit %d, stderr %q; want 1, the URL and the way on", r.code, r.stderr)
	}
	rep, err := runner.ReadReport(out)
	if err != nil || rep.Status != runner.StatusInterrupted || rep.Counts.Run.Failed >= 60 {
		t.Fatalf("run.json: status %q, %d failed (%v); want interrupted early", rep.Status, rep.Counts.Run.Failed, err)
	}

	srv := llmtest.NewServer(llmtest.Options{Answer: func(llmtest.Request) string { return `{"sufficient": true, "gap_items": []}` }})
	defer srv.Close()
	if r := roll(srv.URL(), "--limit", "60", "--resume"); r.code != 0 {
		t.Fatalf("resumed against a live server: exit %d, stderr %q", r.code, r.stderr)
	}
	rows := checkTrajectories(t, filepath.Join(out, runner.TrajectoriesFile), testkit.QuestionIDs(synth.Sample().Questions[:60]))
	for _, row := range rows {
		if row.Failure != "" {
			t.Fatalf("question %s still failed after the resume: %s", row.QuestionID, row.Failure)
		}
	}
	if rep, err := runner.ReadReport(out); err != nil || rep.Retried == 0 {
		t.Errorf("run.json after the resume: retried %d (%v), want the failed questions retried", rep.Retried, err)
	}

	out = filepath.Join(dir, "few")
	r = roll(dead, "--limit", "3")
	if r.code != exitFailure || !strings.Contains(r.stderr, "all failed: 3 of 3 questions") || !strings.Contains(r.stderr, dead) {
		t.Errorf("every question failed: exit %d, stderr %q; want 1 and the reason", r.code, r.stderr)
	}
	r = runDistill(t, "--quiet", "label", "--in", offlineChain(t).Rollout, "--out", filepath.Join(dir, "lab"), "--limit", "4",
		"--teacher-base-url", dead, "--max-attempts", "1")
	if r.code != exitFailure || !strings.Contains(r.stderr, "all failed: 4 of 4 states") || !strings.Contains(r.stderr, dead) {
		t.Errorf("every state failed: exit %d, stderr %q; want 1 and the reason", r.code, r.stderr)
	}
}
