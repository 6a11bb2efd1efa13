package eval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/testkit"
	"github.com/distill-rag/distill/llm"
)

// update rewrites the golden files under testdata: go test ./eval -update.

// testReport is a report of two variants over the fixture: full on every
// question, and no-judge on q1 and q2 only, q1 answered wrongly.
func testReport(t *testing.T) Report {
	t.Helper()
	states, questions := fixture()
	full, fullResults, err := Compute(states, questions, []llm.Stats{
		{Role: "judge", Model: "judge-3b", Requests: 9, PromptTokens: 9000, CompletionTokens: 450, CostUSD: 0},
		{Role: "reader", Model: "gpt-4o-mini", Requests: 4, CachedHits: 1, PromptTokens: 2000, CompletionTokens: 40, CostUSD: 0.000324},
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	var some []data.State
	for _, s := range states {
		if s.QuestionID == "q1" || s.QuestionID == "q2" {
			if s.IsFinal && s.QuestionID == "q1" {
				s.Answer = "Lyon, France"
			}
			some = append(some, s)
		}
	}
	noJudge, noJudgeResults, err := Compute(some, questions, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]ScoreRow{}
	for name, results := range map[string][]QuestionResult{"full": fullResults, "no-judge": noJudgeResults} {
		for _, res := range results {
			rows[name] = append(rows[name], scoreRow(name, res))
		}
	}
	return Report{
		Paired:    PairedAgainstBaseline([]string{"full", "no-judge"}, rows),
		Bootstrap: bootstrapSettings(),
		Dataset:   "toy",
		Questions: 5,
		CreatedAt: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC),
		Version:   "v0.0.0-test",
		Paper:     map[string][2]float64{"full": {43.3, 56.5}},
		Variants: []VariantReport{
			{Name: "full", Description: "the configured judge | extractor", Metrics: full,
				Roles: map[string]string{"judge": "judge-3b", "reader": "gpt-4o-mini", "extractor": "builtin"}},
			{Name: "no-judge", Description: "no sufficiency decision", Metrics: noJudge,
				Roles: map[string]string{"judge": "never"}},
		},
	}
}

func TestReportGolden(t *testing.T) {
	r := testReport(t)
	var js, md bytes.Buffer
	if err := WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, "report.json.golden", js.String())
	testkit.Golden(t, "report.md.golden", md.String())
}

func TestReadReportRoundTrip(t *testing.T) {
	r := testReport(t)
	path := filepath.Join(t.TempDir(), "report.json")
	var js bytes.Buffer
	if err := WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, js.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadReport(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r, got); diff != "" {
		t.Errorf("ReadReport(WriteJSON(r)) mismatch (-want +got):\n%s", diff)
	}
}

func TestReadReportErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"dataset": 3`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(dir, "missing.json"), bad} {
		if _, err := ReadReport(path); err == nil {
			t.Errorf("ReadReport(%s): got no error, want one", path)
		}
	}
}

// mdTables parses the Markdown tables of a report: section title -> rows,
// each a map from column header to cell.
func mdTables(t *testing.T, md string) map[string][]map[string]string {
	t.Helper()
	tables := make(map[string][]map[string]string)
	var section string
	var header []string
	for _, line := range strings.Split(md, "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			section, header = strings.TrimPrefix(line, "## "), nil
		case strings.HasPrefix(line, "|---"):
		case strings.HasPrefix(line, "|"):
			cells := splitRow(line)
			if header == nil {
				header = cells
				continue
			}
			if len(cells) != len(header) {
				t.Fatalf("table %q: row %q has %d cells, the header %d", section, line, len(cells), len(header))
			}
			row := make(map[string]string, len(cells))
			for i, c := range cells {
				row[header[i]] = c
			}
			tables[section] = append(tables[section], row)
		default:
			header = nil
		}
	}
	return tables
}

// splitRow splits a table row on the pipes that are not escaped.
func splitRow(line string) []string {
	var cells []string
	var cur strings.Builder
	for i := 1; i < len(line); i++ {
		switch c := line[i]; {
		case c == '\\' && i+1 < len(line):
			cur.WriteByte(line[i+1])
			i++
		case c == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	return cells
}

// jsonAt returns the number at a dotted path of a decoded JSON value.
func jsonAt(t *testing.T, v any, path string) float64 {
	t.Helper()
	for _, k := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i >= len(x) {
				t.Fatalf("json path %s: bad index %s", path, k)
			}
			v = x[i]
		default:
			t.Fatalf("json path %s: %s is not in an object or list", path, k)
		}
	}
	f, ok := v.(float64)
	if !ok {
		t.Fatalf("json path %s: %v is not a number", path, v)
	}
	return f
}

// TestMarkdownMatchesJSON checks every number of report.md against the
// same number read from report.json, rounded as shown, and that no numeric
// column goes unchecked.
func TestMarkdownMatchesJSON(t *testing.T) {
	r := testReport(t)
	var js, md bytes.Buffer
	if err := WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	type col struct {
		path string // under the variant, or "paper.NAME." for the paper's
		prec int
	}
	stage := func(s string) map[string]col {
		return map[string]col{
			s + " median": {"metrics.latency." + s + ".median_s", 2},
			s + " p90":    {"metrics.latency." + s + ".p90_s", 2},
			s + " mean":   {"metrics.latency." + s + ".mean_s", 2},
		}
	}
	columns := map[string]map[string]col{
		"Results": {
			"EM": {"metrics.em", 1}, "F1": {"metrics.f1", 1},
			"paper EM": {"paper.0", 1}, "paper F1": {"paper.1", 1},
			"correct retrieval (%)": {"metrics.correct_retrieval", 1},
			"mean rounds":           {"metrics.mean_rounds", 2},
			"compression ratio":     {"metrics.compression.ratio", 4},
			"latency median (s)":    {"metrics.latency.question.median_s", 2},
			"latency p90 (s)":       {"metrics.latency.question.p90_s", 2},
			"cost (USD)":            {"metrics.cost_usd", 4},
		},
		"Retrieval and evidence": {
			"questions": {"metrics.questions", 0}, "failed": {"metrics.failed", 0},
			"gold-title questions":   {"metrics.gold_title_questions", 0},
			"gold-title recall (%)":  {"metrics.gold_title_recall", 1},
			"answer in evidence (%)": {"metrics.answer_in_evidence", 1},
			"premature stops (%)":    {"metrics.premature", 1},
			"evidence chars":         {"metrics.compression.evidence_chars", 0},
			"raw chars":              {"metrics.compression.raw_chars", 0},
			"mean compression ratio": {"metrics.compression.mean_ratio", 4},
			"evidence tokens":        {"metrics.compression.evidence_tokens", 0},
			"mean evidence tokens":   {"metrics.compression.mean_evidence_tokens", 2},
		},
		"Sufficiency calibration": {
			"states": {"metrics.calibration.states", 0},
			"TP":     {"metrics.calibration.confusion.tp", 0}, "FP": {"metrics.calibration.confusion.fp", 0},
			"FN": {"metrics.calibration.confusion.fn", 0}, "TN": {"metrics.calibration.confusion.tn", 0},
			"FP rate (%)":                      {"metrics.calibration.false_positive_rate", 2},
			"complete judged insufficient (%)": {"metrics.calibration.complete_judged_insufficient", 2},
			"unmeasured states":                {"metrics.calibration.unmeasured", 0},
		},
		"Rounds":                {"mean": {"metrics.mean_rounds", 2}}, // and one column per number of rounds
		"End reasons":           {},
		"Gap categories":        {},
		"Latency per stage (s)": {},
		"Usage": {
			"requests": {"requests", 0}, "cached": {"cached_hits", 0}, "retries": {"retries", 0},
			"failures": {"failures", 0}, "prompt tokens": {"prompt_tokens", 0},
			"completion tokens": {"completion_tokens", 0}, "cost (USD)": {"cost_usd", 4},
		},
	}
	for _, e := range EndReasons() {
		columns["End reasons"][e] = col{"metrics.end_reasons." + e, 0}
	}
	for _, c := range data.GapCategories() {
		columns["Gap categories"][c] = col{"metrics.gap_categories." + c, 0}
	}
	for _, s := range []string{"question", "judge", "retrieve", "extract", "read"} {
		for k, v := range stage(s) {
			columns["Latency per stage (s)"][k] = v
		}
	}
	text := map[string]bool{"variant": true, "description": true, "roles": true, "role": true, "model": true}
	// The paired columns show several numbers of the variant's entry of
	// "paired" in one cell ("-" for full, which has none).
	diffAt := func(key string, prec int) func(p map[string]any) string {
		return func(p map[string]any) string {
			d, ok := p[key].(map[string]any)
			if !ok {
				return "-"
			}
			return fmt.Sprintf("%s [%s, %s]", signed(jsonAt(t, d, "diff"), prec), signed(jsonAt(t, d, "ci_low"), prec), signed(jsonAt(t, d, "ci_high"), prec))
		}
	}
	composite := map[string]func(p map[string]any) string{
		"EM Δ vs full [95% CI]": diffAt("em", 1),
		"F1 Δ vs full [95% CI]": diffAt("f1", 1),
		"McNemar p":             func(p map[string]any) string { return pValue(jsonAt(t, p, "mcnemar_p")) },
		"won / lost / tied": func(p map[string]any) string {
			return fmt.Sprintf("%v / %v / %v", jsonAt(t, p, "won"), jsonAt(t, p, "lost"), jsonAt(t, p, "tied"))
		},
		"FP rate Δ vs full [95% CI]":                      diffAt("false_positive_rate", 2),
		"complete judged insufficient Δ vs full [95% CI]": diffAt("complete_judged_insufficient", 2),
	}
	pairedOf := func(variant string) map[string]any {
		list, _ := doc["paired"].([]any)
		for _, p := range list {
			if p.(map[string]any)["variant"] == variant {
				return p.(map[string]any)
			}
		}
		return nil
	}
	if list, _ := doc["paired"].([]any); len(list) == 0 {
		t.Fatal("the test report has no paired comparison")
	}

	tables := mdTables(t, md.String())
	variants := doc["variants"].([]any)
	for section, cols := range columns {
		rows := tables[section]
		if len(rows) == 0 {
			t.Errorf("report.md has no table %q", section)
			continue
		}
		usageRow := make(map[string]int)
		for _, row := range rows {
			vi := -1
			for i, v := range variants {
				if v.(map[string]any)["name"] == row["variant"] {
					vi = i
				}
			}
			if vi < 0 {
				t.Errorf("table %q: row of unknown variant %q", section, row["variant"])
				continue
			}
			v := variants[vi]
			for header, cell := range row {
				if text[header] {
					continue
				}
				if format, ok := composite[header]; ok {
					want := "-"
					if p := pairedOf(row["variant"]); p != nil {
						want = format(p)
					}
					if cell != want {
						t.Errorf("table %q, variant %s, %s: report.md says %q, report.json %q", section, row["variant"], header, cell, want)
					}
					continue
				}
				c, ok := cols[header]
				if _, err := strconv.Atoi(header); err == nil && section == "Rounds" {
					c, ok = col{"metrics.rounds." + header, 0}, true
				}
				if !ok {
					t.Errorf("table %q: column %q is not checked against report.json", section, header)
					continue
				}
				var f float64
				switch {
				case section == "Usage":
					f = jsonAt(t, v, "metrics.usage."+strconv.Itoa(usageRow[row["variant"]])+"."+c.path)
				case strings.HasPrefix(c.path, "paper."):
					p, ok := doc["paper"].(map[string]any)[row["variant"]]
					if !ok {
						if cell != "-" {
							t.Errorf("table %q, variant %s: %s = %q without a paper number", section, row["variant"], header, cell)
						}
						continue
					}
					f = jsonAt(t, p, strings.TrimPrefix(c.path, "paper."))
				default:
					f = jsonAt(t, v, c.path)
				}
				if want := strconv.FormatFloat(f, 'f', c.prec, 64); cell != want {
					t.Errorf("table %q, variant %s, %s: report.md says %q, report.json %v (%q)", section, row["variant"], header, cell, f, want)
				}
			}
			usageRow[row["variant"]]++
		}
	}
	for section := range tables {
		if _, ok := columns[section]; !ok && section != "Variants" {
			t.Errorf("report.md table %q is not checked against report.json", section)
		}
	}
}

func TestMarkdownEscapes(t *testing.T) {
	r := Report{Dataset: "a|b", Variants: []VariantReport{{Name: "x|y", Description: "line\nbreak | pipe"}}}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	tables := mdTables(t, md.String())
	rows := tables["Variants"]
	if len(rows) != 1 || rows[0]["variant"] != "x|y" || rows[0]["description"] != "line break | pipe" {
		t.Errorf("Variants table = %v, want one row x|y with its description on one line", rows)
	}
	if !strings.Contains(md.String(), "# Benchmark: a\\|b") {
		t.Errorf("report.md does not start with the escaped dataset name:\n%s", md.String())
	}
}

func TestQuestionsWord(t *testing.T) {
	for n, want := range map[int]string{0: "0 questions", 1: "1 question", 2: "2 questions", 200: "200 questions"} {
		if got := questions(n); got != want {
			t.Errorf("questions(%d) = %q, want %q", n, got, want)
		}
	}
}
