package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/distill-rag/distill/retrieve/internal/benchfile"
)

// Row is one engine on one corpus (BM25), or one dense index at one
// precision and nprobe: the objects of -json.
type Row struct {
	Engine      string  `json:"engine"`
	Corpus      string  `json:"corpus"`
	Passages    int     `json:"passages"`
	Queries     int     `json:"queries"`
	BuildS      float64 `json:"build_s"`
	IndexMB     float64 `json:"index_mb"`
	PeakRSSMB   float64 `json:"peak_rss_mb"`
	SearchRSSMB float64 `json:"search_rss_mb"`
	QPSSingle   float64 `json:"qps_single"`
	QPSBatch    float64 `json:"qps_batch"`
	P50MS       float64 `json:"p50_ms"`
	P99MS       float64 `json:"p99_ms"`
	// Overlap10 is the mean overlap of the top 10 with Pyserini's
	// (|A ∩ B| / max(|A|, |B|)); absent without a Pyserini row.
	// Overlap10Ties counts as agreeing the documents that differ only
	// inside the tie at the 10th place (each engine orders equal scores its
	// own way: distill by corpus order, Anserini by id).
	Overlap10     *float64 `json:"overlap10_vs_pyserini,omitempty"`
	Overlap10Ties *float64 `json:"overlap10_ties_vs_pyserini,omitempty"`
	// Dense rows only.
	Precision string   `json:"precision,omitempty"`
	NProbe    int      `json:"nprobe,omitempty"`
	Recall10  *float64 `json:"recall10,omitempty"`
	// Settings are the engine's: k1, b, analyser, top-k algorithm, build.
	Settings map[string]any `json:"settings,omitempty"`
	// Error says why the engine has no figures (it did not install, build
	// or search); the other fields are then empty.
	Error      string `json:"error,omitempty"`
	Commit     string `json:"commit,omitempty"`
	LoadAvg    string `json:"load_average,omitempty"`
	MeasuredAt string `json:"measured_at,omitempty"`
}

// engineOut is what a build or search child prints (its last line).
type engineOut struct {
	BuildS    float64        `json:"build_s"`
	Settings  map[string]any `json:"settings"`
	OpenS     float64        `json:"open_s"`
	QPSSingle float64        `json:"qps_single"`
	QPSBatch  float64        `json:"qps_batch"`
	Times     []float64      `json:"times"`
	// PeakRSS is the child's peak resident memory (VmHWM) in bytes.
	PeakRSS int64 `json:"peak_rss_bytes"`
}

func measure(c config, exe string) error {
	corpora := synthCorpora(c.sizes, c.queries)
	if c.real {
		real, err := sharedCorpora(c.shared)
		if err != nil {
			return err
		}
		corpora = append(corpora, real...)
	}
	rows, err := readRows(c.json)
	if err != nil {
		return err
	}
	for _, cp := range corpora {
		got, err := measureCorpus(c, exe, cp)
		if err != nil {
			return fmt.Errorf("%s: %w", cp.name, err)
		}
		rows = slices.DeleteFunc(rows, func(r Row) bool {
			return r.Corpus == cp.name && slices.ContainsFunc(got, func(g Row) bool { return g.Engine == r.Engine })
		})
		rows = append(rows, got...)
		if err := writeRows(c.json, rows); err != nil {
			return err
		}
	}
	fmt.Print(tables(rows))
	return nil
}

// measureCorpus writes the corpus and its queries under c.dir, and builds
// and searches it with every engine.
func measureCorpus(c config, exe string, cp corpus) ([]Row, error) {
	dir, err := os.MkdirTemp(c.dir, "distill-peers-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	logf("%s: writing the corpus", cp.name)
	n, queries, err := cp.write(dir)
	if err != nil {
		return nil, err
	}
	var rows []Row
	results := map[string][]ranked{}
	meta := runMeta()
	for _, e := range c.engines {
		logf("%s: %s", cp.name, e)
		r := Row{Engine: e, Corpus: cp.name, Passages: n, Queries: queries, Commit: meta.commit, LoadAvg: loadAvg(), MeasuredAt: meta.at}
		res, err := measureEngine(c, exe, e, dir, &r)
		if err != nil {
			r = Row{Engine: e, Corpus: cp.name, Passages: n, Queries: queries, Error: err.Error(), Commit: meta.commit, MeasuredAt: meta.at}
			logf("%s: %s: %v", cp.name, e, err)
		}
		results[e] = res
		rows = append(rows, r)
	}
	if ref, ok := results[enginePyserini]; ok && ref != nil {
		for i := range rows {
			if got := results[rows[i].Engine]; got != nil {
				o, ot := overlap(got, ref)
				rows[i].Overlap10, rows[i].Overlap10Ties = &o, &ot
			}
		}
	}
	return rows, nil
}

// measureEngine builds the engine's index of dir's corpus and searches it,
// filling r; it returns the top 10 of each query.
func measureEngine(c config, exe, engine, dir string, r *Row) ([]ranked, error) {
	index := filepath.Join(dir, "index-"+engine)
	corpusPath, queriesPath := filepath.Join(dir, corpusFile), filepath.Join(dir, queriesFile)
	resultsPath := filepath.Join(dir, "results-"+engine+".tsv")
	var build, search *exec.Cmd
	if engine == engineDistill || engine == engineDistillLucene {
		lucene := fmt.Sprintf("-lucene=%t", engine == engineDistillLucene)
		build = exec.Command(exe, "-phase", "build", "-corpus", corpusPath, "-index", index, lucene)
		search = exec.Command(exe, "-phase", "search", "-index", index, "-queries-file", queriesPath, "-results", resultsPath)
	} else {
		build = exec.Command(c.python, c.script, "build", engine, corpusPath, index)
		search = exec.Command(c.python, c.script, "search", engine, index, queriesPath, resultsPath)
	}
	var b, s engineOut
	if err := runChildProcess(build, &b); err != nil {
		return nil, fmt.Errorf("build: %w", err)
	}
	r.BuildS, r.PeakRSSMB, r.Settings = b.BuildS, mb(b.PeakRSS), b.Settings
	size, err := benchfile.DirSize(index)
	if err != nil {
		return nil, err
	}
	r.IndexMB = mb(size)
	if err := runChildProcess(search, &s); err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	r.SearchRSSMB, r.QPSSingle, r.QPSBatch = mb(s.PeakRSS), s.QPSSingle, s.QPSBatch
	sorted := slices.Clone(s.Times)
	slices.Sort(sorted)
	if len(sorted) > 0 {
		r.P50MS, r.P99MS = 1000*quantile(sorted, 0.5), 1000*quantile(sorted, 0.99)
	}
	return readResults(resultsPath)
}

// runChildProcess runs cmd and decodes the last line of its output into
// out. Each child reports its own peak resident memory: the kernel's
// figure for a child process (rusage) starts from what this process held
// when it started the child.
func runChildProcess(cmd *exec.Cmd, out any) error {
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cmd.Env = append(os.Environ(), "JAVA_HOME="+javaHome())
	stdout, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", filepath.Base(cmd.Args[0]), err, lastLines(stderr.String(), 3))
	}
	lines := strings.Split(strings.TrimSpace(string(stdout)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), out); err != nil {
		return fmt.Errorf("%s printed no figures: %w: %s", filepath.Base(cmd.Args[0]), err, lastLines(stderr.String(), 3))
	}
	return nil
}

// peakRSS is this process's peak resident memory (VmHWM) in bytes, 0
// where it cannot tell.
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// javaHome is the Java that runs Anserini (Java 21 or newer):
// PEERS_JAVA_HOME when set, else the first of the known Java 21+ homes under
// /usr/lib/jvm that exists, else JAVA_HOME.
func javaHome() string {
	if h := os.Getenv("PEERS_JAVA_HOME"); h != "" {
		return h
	}
	for _, h := range []string{"/usr/lib/jvm/temurin-25-jdk-amd64", "/usr/lib/jvm/temurin-21-jdk-amd64", "/usr/lib/jvm/java-21-openjdk-amd64"} {
		if _, err := os.Stat(filepath.Join(h, "bin", "java")); err == nil {
			return h
		}
	}
	return os.Getenv("JAVA_HOME")
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}

// ranked is one query's top hits, best first.
type ranked struct {
	ids    []string
	scores []float64
}

// readResults reads "qid<TAB>id id ...<TAB>score score ..." lines, in query
// order.
func readResults(path string) ([]ranked, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []ranked
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), "\t")
		if len(fields) != 3 {
			return nil, fmt.Errorf("%s: line %d: want 3 tab-separated fields, got %d", path, len(out)+1, len(fields))
		}
		r := ranked{ids: strings.Fields(fields[1])}
		for _, s := range strings.Fields(fields[2]) {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return nil, fmt.Errorf("%s: line %d: %w", path, len(out)+1, err)
			}
			r.scores = append(r.scores, v)
		}
		if len(r.scores) != len(r.ids) {
			return nil, fmt.Errorf("%s: line %d: %d ids, %d scores", path, len(out)+1, len(r.ids), len(r.scores))
		}
		out = append(out, r)
	}
	return out, sc.Err()
}

// overlap is the mean |A ∩ B| / max(|A|, |B|) of the top lists (two empty
// lists agree), and the same with ties at the last place set apart: a
// document of one list missing from the other counts as agreeing when its
// score equals the other list's last score, as many times as the other
// list has such documents of its own (each engine orders equal scores its
// own way: distill by corpus order, Anserini by id). Scores are compared
// on a's scale: b's times the median ratio of a's score to b's over the
// documents both return (k1 + 1 between distill and Lucene, which leaves
// that factor out), within a relative 2e-5 (Anserini lowers each tied
// score by 1e-6 to order them).
func overlap(a, b []ranked) (raw, ties float64) {
	if len(a) == 0 || len(a) != len(b) {
		return 0, 0
	}
	scale := scoreRatio(a, b)
	same := func(x, y float64) bool { return math.Abs(x-y) <= 2e-5*max(math.Abs(x), math.Abs(y)) }
	for i := range a {
		n := max(len(a[i].ids), len(b[i].ids))
		if n == 0 {
			raw++
			ties++
			continue
		}
		common, tiedA, tiedB := 0, 0, 0
		for j, id := range a[i].ids {
			switch {
			case slices.Contains(b[i].ids, id):
				common++
			case len(b[i].scores) > 0 && same(a[i].scores[j], scale*b[i].scores[len(b[i].scores)-1]):
				tiedA++
			}
		}
		for j, id := range b[i].ids {
			if !slices.Contains(a[i].ids, id) && len(a[i].scores) > 0 && same(scale*b[i].scores[j], a[i].scores[len(a[i].scores)-1]) {
				tiedB++
			}
		}
		raw += float64(common) / float64(n)
		ties += float64(common+min(tiedA, tiedB)) / float64(n)
	}
	return raw / float64(len(a)), ties / float64(len(a))
}

// scoreRatio is the median of a's score over b's for the documents both
// lists of a query hold; 0 if there are none or b's scores are 0.
func scoreRatio(a, b []ranked) float64 {
	var ratios []float64
	for i := range a {
		for j, id := range a[i].ids {
			if k := slices.Index(b[i].ids, id); k >= 0 && b[i].scores[k] != 0 {
				ratios = append(ratios, a[i].scores[j]/b[i].scores[k])
			}
		}
	}
	if len(ratios) == 0 {
		return 0
	}
	slices.Sort(ratios)
	return ratios[len(ratios)/2]
}

func writeRows(path string, rows []Row) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(rows, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func mb(b int64) float64 { return float64(b) / 1e6 }

func quantile(sorted []float64, q float64) float64 {
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "peers: "+format+"\n", args...)
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

type meta struct{ commit, at string }

func runMeta() meta {
	m := meta{at: time.Now().UTC().Format(time.RFC3339)}
	if out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output(); err == nil {
		m.commit = strings.TrimSpace(string(out))
	}
	return m
}
