//go:build e2e

package eval

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/distill-rag/distill/data"
)

// This file holds the test of the audit pages in a real browser, headless
// Chromium: `make e2e-browser` installs Debian's chromium when it is
// missing and runs it (go test -tags e2e -run Browser ./eval). The binary
// is DISTILL_CHROMIUM, or chromium on the PATH.

// browserQuestions and browserVariants size the benchmark the index must
// open at once: 10,000 questions in every variant of a full benchmark.
const (
	browserQuestions = 10000
	browserVariants  = 8
	// browserOpenLimit is the most the index may take, from navigation to
	// its first page of rows shown.
	browserOpenLimit = time.Second
)

// chromium returns the browser to drive.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("DISTILL_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no chromium: install Debian's package (apt-get install -y chromium; make e2e-browser does) or set DISTILL_CHROMIUM")
	return ""
}

// loadPage opens url in headless Chromium with a fresh profile and returns
// the DOM once the page has loaded and its scripts have run, and the
// console messages the page logged (Chromium writes them to its log as
// "CONSOLE" lines).
func loadPage(t *testing.T, browser, url string) (dom string, console []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
		"--user-data-dir="+t.TempDir(), "--enable-logging=stderr", "--v=0",
		// Wait for the scripts: a page of questions unpacks them asynchronously.
		"--virtual-time-budget=10000", "--dump-dom", url)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %s: %v\n%s", url, err, stderr.String())
	}
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, ":CONSOLE") {
			console = append(console, line)
		}
	}
	return stdout.String(), console
}

// browserTraces is a benchmark of n questions in each of k variants, each
// question with a round of retrieval, a gap item and an answer, one in
// three wrong and one in seven a failure.
func browserTraces(n, k int) Traces {
	tr := Traces{Title: fmt.Sprintf("distill bench: %d questions", n)}
	for v := range k {
		tv := TraceVariant{Name: fmt.Sprintf("variant-%d", v)}
		for i := range n {
			id := fmt.Sprintf("q%05d", i)
			text := fmt.Sprintf("Which film directed by person %d came out first, title %d or title %d?", i, 2*i, 2*i+1)
			ev := data.Evidence{DocID: "d" + id, Title: "Title " + strconv.Itoa(2*i), Index: 0, Text: "Title " + strconv.Itoa(2*i) + " came out in 1990."}
			q := TraceQuestion{ID: id, Question: text, Golds: []string{"Title " + strconv.Itoa(2*i)}, Answer: "Title " + strconv.Itoa(2*i),
				EM: 1, F1: 1, GoldTitles: []string{ev.Title, "Title " + strconv.Itoa(2*i+1)},
				States: []data.State{
					{QuestionID: id, Round: 0, GapItems: []data.GapItem{{Category: "bridge_entity", Target: ev.Title, Slot: "release date"}}},
					{QuestionID: id, Round: 1, Evidence: []data.Evidence{ev}, Queries: []string{text},
						Retrieved:  []data.RetrievedDoc{{Round: 0, Rank: 1, DocID: ev.DocID, Title: ev.Title, Score: 3.5, Chars: 40}},
						Sufficient: true, IsFinal: true, Answer: "Title " + strconv.Itoa(2*i), Candidates: 3, ChosenIDs: []int32{1}, BlocksAdded: 1},
				}}
			if (i+v)%3 == 0 {
				q.Answer, q.EM, q.F1 = "none", 0, 0
			}
			if (i+v)%7 == 0 {
				q.States = []data.State{{QuestionID: id, IsFinal: true, Failure: "judge at round 0: status 500"}}
				q.Answer, q.EM, q.F1 = "", 0, 0
			}
			tv.Questions = append(tv.Questions, q)
		}
		tr.Variants = append(tr.Variants, tv)
	}
	return tr
}

var (
	readyRe = regexp.MustCompile(`data-ready-ms="(\d+)"`)
	rowsRe  = regexp.MustCompile(`(?s)<tbody id="rows">(.*?)</tbody>`)
)

// TestBrowserTraces opens the index of a benchmark of 10,000 questions in
// eight variants in headless Chromium: it renders its first page of rows,
// logs nothing to the console and is ready in under a second; a page of
// questions opens on the question its link names.
func TestBrowserTraces(t *testing.T) {
	browser := chromium(t)
	dir := t.TempDir()
	start := time.Now()
	if err := WriteTraces(dir, browserTraces(browserQuestions, browserVariants)); err != nil {
		t.Fatal(err)
	}
	index := filepath.Join(dir, TracesHTML)
	fi, err := os.Stat(index)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote the pages of %d questions x %d variants in %v; traces.html is %.1f MB",
		browserQuestions, browserVariants, time.Since(start).Round(time.Millisecond), float64(fi.Size())/1e6)

	dom, console := loadPage(t, browser, "file://"+index)
	if len(console) > 0 {
		t.Errorf("the index logged to the console:\n%s", strings.Join(console, "\n"))
	}
	m := readyRe.FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("the index's script did not finish (no data-ready-ms); DOM starts %q", dom[:min(len(dom), 500)])
	}
	ms, _ := strconv.Atoi(m[1])
	t.Logf("index ready %d ms after navigation (limit %v)", ms, browserOpenLimit)
	if time.Duration(ms)*time.Millisecond >= browserOpenLimit {
		t.Errorf("index ready after %d ms, want under %v", ms, browserOpenLimit)
	}
	rows := rowsRe.FindStringSubmatch(dom)
	if rows == nil {
		t.Fatal("no rows table in the DOM")
	}
	if n := strings.Count(rows[1], "<tr>"); n != traceRowsPerPage {
		t.Errorf("got %d rows shown, want the first %d", n, traceRowsPerPage)
	}
	total := browserQuestions * browserVariants
	if want := fmt.Sprintf("%d of %d questions shown", total, total); !strings.Contains(dom, want) {
		t.Errorf("the count line does not say %q", want)
	}
	if !strings.Contains(rows[1], `href="traces/v-0/part-0001.html#q-0-0"`) {
		t.Errorf("the first row does not link to its question's page")
	}

	// A question's page opens on the question its link names.
	part := filepath.Join(dir, TracesDir, "v-3", tracePartName(2))
	dom, console = loadPage(t, browser, "file://"+part+"#q-3-57")
	if len(console) > 0 {
		t.Errorf("a page of questions logged to the console:\n%s", strings.Join(console, "\n"))
	}
	open := regexp.MustCompile(`<details [^>]*id="q-3-57"[^>]*>`).FindString(dom)
	if !strings.Contains(open, `open=""`) {
		t.Errorf("the linked question is not open: %q", open)
	}
	if n := strings.Count(dom, `<details class="question"`); n != TracePartSize {
		t.Errorf("got %d questions on the page, want %d", n, TracePartSize)
	}
}
