package eval

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/testkit"
)

// The flag is not -update: another test file of the package may declare
// that one.

const tracesInjection = "<script>alert(1)</script>"

// tracesFixture is a small benchmark: two variants, a correct answer, a
// premature stop after a round-0 override, a failure, an exhausted budget
// with a judge parse error, and text that needs escaping everywhere.
func tracesFixture() Traces {
	const q1 = `Where is the "Eiffel Tower" & who's ` + tracesInjection + `?`
	gold1 := []string{"France", "Eiffel Tower"}
	eiffel := data.Evidence{DocID: "d-eiffel", Title: "Eiffel Tower", Index: 0, Text: "The Eiffel Tower is in Paris & it is tall."}
	france := data.Evidence{DocID: "d-france", Title: "France", Index: 2, Text: "France's capital is <b>Paris</b>."}
	odd := data.Evidence{DocID: "d-odd", Title: "Odd & <Title>", Index: 39, Text: "Control\x01char and " + tracesInjection + " here."}
	gap := data.GapItem{Category: "bridge_entity", Target: "Eiffel Tower", Slot: "location", Description: `the tower's "city" <where>`}
	docs0 := []data.RetrievedDoc{
		{Round: 0, Rank: 1, DocID: "d-eiffel", Title: "Eiffel Tower", Score: 12.5, Chars: 120},
		{Round: 0, Rank: 2, DocID: "d-france", Title: "France", Score: 9.25, Chars: 300},
	}
	docs1 := []data.RetrievedDoc{{Round: 1, Rank: 1, DocID: "d-odd", Title: "Odd & <Title>", Score: 1.5, Chars: 80}}

	full := TraceVariant{Name: "full", Questions: []TraceQuestion{
		{
			ID: "hp-1", Question: q1, Golds: []string{"Paris"}, Answer: "Paris", EM: 1, F1: 1, GoldTitles: gold1,
			States: []data.State{
				{QuestionID: "hp-1", Round: 0, Question: q1, GapItems: []data.GapItem{gap}, JudgeMS: 10, JudgeModel: "judge-m"},
				{QuestionID: "hp-1", Round: 1, Question: q1, Evidence: []data.Evidence{eiffel, france},
					Queries: []string{"Eiffel Tower location"}, Retrieved: docs0, Sufficient: true,
					Candidates: 7, ChosenIDs: []int32{1, 5}, DroppedIDs: []int32{99}, DroppedOutOfRange: 1, BlocksAdded: 2,
					JudgeMS: 11, RetrieveMS: 3, ExtractMS: 20, ReadMS: 30,
					IsFinal: true, Answer: "Paris", ReaderOutput: "Answer: Paris"},
			},
		},
		{
			ID: "hp-2&<x>", Question: "Which 'country' hosts the tower?", Golds: []string{"France"}, Answer: "Lyon", EM: 0, F1: 0, GoldTitles: gold1,
			States: []data.State{
				{QuestionID: "hp-2&<x>", Round: 0, Sufficient: true, Override: true, JudgeMS: 5},
				{QuestionID: "hp-2&<x>", Round: 1, Evidence: []data.Evidence{eiffel}, Queries: []string{"Which 'country' hosts the tower?"},
					Retrieved: docs0[:1], Sufficient: true, Candidates: 3, ChosenIDs: []int32{1}, BlocksAdded: 1,
					JudgeMS: 6, RetrieveMS: 2, ExtractMS: 4, ReadMS: 8, IsFinal: true, Answer: "Lyon",
					ReaderOutput: "Lyon", ReaderParseError: `no "Answer:" line`},
			},
		},
		{
			ID: "hp-3", Question: "Who failed?", Golds: []string{"nobody"}, EM: 0, F1: 0, GoldTitles: []string{"Failure"},
			States: []data.State{{QuestionID: "hp-3", Round: 0, IsFinal: true, Failure: "judge at round 0: status 500 <html>"}},
		},
	}}

	noJudge := TraceVariant{Name: "no-judge", Questions: []TraceQuestion{
		{
			ID: "hp-1", Question: q1, Golds: []string{"Paris"}, Answer: "Paris", EM: 1, F1: 1, GoldTitles: gold1,
			States: []data.State{
				{QuestionID: "hp-1", Round: 0, JudgeMS: 1},
				{QuestionID: "hp-1", Round: 1, Evidence: []data.Evidence{eiffel, france}, Queries: []string{q1}, Retrieved: docs0,
					JudgeOutput: "oops </script><script>alert(1)</script>", JudgeParseError: "bad verdict: invalid character 'o'",
					Candidates: 7, ChosenIDs: []int32{1, 5}, BlocksAdded: 2, JudgeMS: 1, RetrieveMS: 2, ExtractMS: 3},
				{QuestionID: "hp-1", Round: 2, Evidence: []data.Evidence{eiffel, france, odd}, Queries: []string{q1, q1},
					Retrieved:  append(append([]data.RetrievedDoc(nil), docs0...), docs1...),
					Candidates: 1, ChosenIDs: []int32{1}, DroppedIDs: []int32{1}, DroppedRepeated: 1, BlocksAdded: 1,
					ExtractorParseError: "partial", ExtractorOutput: `{"evidence_global_ids": [1, 1`,
					JudgeMS: 1, RetrieveMS: 2, ExtractMS: 3, ReadMS: 4, IsFinal: true, Answer: "Paris"},
			},
		},
		{
			ID: "tq-9", Question: "Name the city of light", Golds: []string{"Paris", "City of Paris"}, Answer: "Paris city",
			EM: 0, F1: 2.0 / 3, GoldTitles: nil,
			States: []data.State{
				{QuestionID: "tq-9", Round: 0},
				{QuestionID: "tq-9", Round: 1, Evidence: []data.Evidence{eiffel}, Queries: []string{"Name the city of light"},
					Retrieved: docs0[:1], IsFinal: true, Answer: "Paris city"},
			},
		},
	}}
	return Traces{Title: `distill bench: sample & "friends"`, Variants: []TraceVariant{full, noJudge}}
}

// renderedTraces are the pages WriteTraces wrote: the index and every
// page of questions, by path relative to the output directory.
type renderedTraces struct {
	dir   string
	index []byte
	parts map[string][]byte
	// order lists the parts' paths, variant by variant, page by page.
	order []string
}

func renderTraces(t testing.TB, tr Traces) renderedTraces {
	t.Helper()
	dir := t.TempDir()
	if err := WriteTraces(dir, tr); err != nil {
		t.Fatalf("WriteTraces: %v", err)
	}
	return readTraces(t, dir)
}

// readTraces reads the pages of a benchmark directory.
func readTraces(t testing.TB, dir string) renderedTraces {
	t.Helper()
	r := renderedTraces{dir: dir, parts: map[string][]byte{}}
	var err error
	if r.index, err = os.ReadFile(filepath.Join(dir, TracesHTML)); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".traces-") {
			t.Errorf("a temporary folder is left: %s", e.Name())
		}
	}
	variants, _ := os.ReadDir(filepath.Join(dir, TracesDir))
	slices.SortFunc(variants, func(a, b os.DirEntry) int { return traceAnchorNumber(a.Name()) - traceAnchorNumber(b.Name()) })
	for _, v := range variants {
		parts, err := os.ReadDir(filepath.Join(dir, TracesDir, v.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range parts {
			rel := TracesDir + "/" + v.Name() + "/" + p.Name()
			b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
			if err != nil {
				t.Fatal(err)
			}
			if b, err = UnpackTracePage(b); err != nil {
				t.Fatalf("%s: %v", rel, err)
			}
			r.parts[rel] = b
			r.order = append(r.order, rel)
		}
	}
	return r
}

func traceAnchorNumber(name string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(name, "v-"))
	return n
}

// details returns the <details> blocks of every page of questions, in
// order.
func (r renderedTraces) details(t testing.TB) []*tracesNode {
	t.Helper()
	var out []*tracesNode
	for _, rel := range r.order {
		parseTracesXML(t, r.parts[rel]).walk(func(n *tracesNode) {
			if n.Name == "details" {
				out = append(out, n)
			}
		})
	}
	return out
}

// data returns the JSON the index embeds.
func (r renderedTraces) data(t testing.TB) traceData {
	t.Helper()
	var raw string
	parseTracesXML(t, r.index).walk(func(n *tracesNode) {
		if n.Name == "script" && n.Attrs["id"] == "trace-data" {
			raw = n.Text
		}
	})
	var d traceData
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("embedded JSON: %v\n%s", err, raw)
	}
	return d
}

// tracesNode is an element of the page as encoding/xml reads it.
type tracesNode struct {
	Name     string
	Attrs    map[string]string
	Children []*tracesNode
	Text     string // the text directly inside the element
}

func (n *tracesNode) walk(f func(*tracesNode)) {
	f(n)
	for _, c := range n.Children {
		c.walk(f)
	}
}

// allText is the text of the element and its descendants, in order.
func (n *tracesNode) allText() string {
	var b strings.Builder
	n.walk(func(m *tracesNode) { b.WriteString(m.Text) })
	return b.String()
}

func (n *tracesNode) hasClass(c string) bool {
	return strings.Contains(" "+n.Attrs["class"]+" ", " "+c+" ")
}

// parseTracesXML parses the page as strict XML (the page is polyglot
// markup): every element closed, attributes quoted, only XML's entities.
// It returns the root element.
func parseTracesXML(t testing.TB, page []byte) *tracesNode {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(page))
	d.Strict = true
	var root *tracesNode
	var stack []*tracesNode
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("page is not well-formed: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			n := &tracesNode{Name: tok.Name.Local, Attrs: map[string]string{}}
			for _, a := range tok.Attr {
				name := a.Name.Local
				if a.Name.Space != "" && a.Name.Space != "xmlns" {
					name = a.Name.Space + ":" + name
				}
				if _, dup := n.Attrs[name]; dup {
					t.Errorf("element %s: attribute %s twice", n.Name, name)
				}
				n.Attrs[name] = a.Value
			}
			if len(stack) > 0 {
				p := stack[len(stack)-1]
				p.Children = append(p.Children, n)
			} else if root != nil {
				t.Fatalf("second root element %s", n.Name)
			} else {
				root = n
			}
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].Text += string(tok)
			} else if strings.TrimSpace(string(tok)) != "" {
				t.Errorf("text outside the root element: %q", tok)
			}
		}
	}
	if root == nil || root.Name != "html" {
		t.Fatalf("got root %v, want html", root)
	}
	return root
}

// checkPageSafe checks one page: polyglot markup, a doctype, ids used
// once, nothing loaded from elsewhere, links only to the benchmark's own
// pages, no inline handlers, scripts as expected (their bodies free of
// "&" and "<"), and the injected markup and control characters never raw.
func checkPageSafe(t *testing.T, name string, page []byte, wantScripts int) *tracesNode {
	t.Helper()
	root := parseTracesXML(t, page)
	if !bytes.HasPrefix(page, []byte("<!DOCTYPE html>\n")) {
		t.Errorf("%s does not start with the HTML doctype", name)
	}
	ids := map[string]bool{}
	scripts := 0
	root.walk(func(n *tracesNode) {
		if id, ok := n.Attrs["id"]; ok {
			if ids[id] {
				t.Errorf("%s: id %q used twice", name, id)
			}
			ids[id] = true
		}
		switch n.Name {
		case "link", "img", "iframe", "object", "embed", "audio", "video", "source":
			t.Errorf("%s: external resource element <%s>", name, n.Name)
		case "script":
			scripts++
		}
		for k, v := range n.Attrs {
			switch {
			case k == "src":
				t.Errorf("%s: <%s src=%q>", name, n.Name, v)
			case (k == "href" || k == "action") && (strings.Contains(v, ":") || strings.HasPrefix(v, "/")):
				t.Errorf("%s: <%s %s=%q>: want a relative link to the benchmark's pages", name, n.Name, k, v)
			case strings.HasPrefix(k, "on"):
				t.Errorf("%s: <%s %s>: inline event handler", name, n.Name, k)
			}
		}
		if n.Name == "style" && strings.Contains(n.Text, "url(") {
			t.Errorf("%s: style loads a resource: %q", name, n.Text)
		}
	})
	if scripts != wantScripts || bytes.Count(page, []byte("<script")) != wantScripts || bytes.Count(page, []byte("</script")) != wantScripts {
		t.Errorf("%s: got %d script elements, want %d", name, scripts, wantScripts)
	}
	if bytes.Contains(page, []byte(tracesInjection)) {
		t.Errorf("%s holds %q unescaped", name, tracesInjection)
	}
	// Script bodies are raw text to an HTML parser and parsed text to an
	// XML one: without "&" and "<" the two read the same.
	for rest := page; ; {
		_, after, ok := bytes.Cut(rest, []byte("<script"))
		if !ok {
			break
		}
		_, body, _ := bytes.Cut(after, []byte(">"))
		body, rest, _ = bytes.Cut(body, []byte("</script>"))
		if i := bytes.IndexAny(body, "&<"); i >= 0 {
			t.Errorf("%s: script body holds %q at %d: %q", name, body[i], i, body[max(0, i-40):min(len(body), i+40)])
		}
	}
	if bytes.Contains(page, []byte("\x01")) {
		t.Errorf("%s holds a control character", name)
	}
	return root
}

// checkTraceLinks checks that every link of the pages leads to a page that
// exists and, when it names an anchor, to an element of that page, and
// that every row of the index's data leads to its question.
func checkTraceLinks(t *testing.T, r renderedTraces) {
	t.Helper()
	pages := map[string]*tracesNode{TracesHTML: parseTracesXML(t, r.index)}
	for rel, b := range r.parts {
		pages[rel] = parseTracesXML(t, b)
	}
	idsOf := map[string]map[string]bool{}
	for rel, root := range pages {
		idsOf[rel] = map[string]bool{}
		root.walk(func(n *tracesNode) {
			if id, ok := n.Attrs["id"]; ok {
				idsOf[rel][id] = true
			}
		})
	}
	follow := func(from, href string) {
		target, anchor, _ := strings.Cut(href, "#")
		rel := path.Clean(path.Join(path.Dir(from), target))
		if target == "" {
			rel = from
		}
		ids, ok := idsOf[rel]
		switch {
		case !ok:
			t.Errorf("%s links to %q: no such page", from, href)
		case anchor != "" && !ids[anchor]:
			t.Errorf("%s links to %q: no element %q there", from, href, anchor)
		}
	}
	for rel, root := range pages {
		root.walk(func(n *tracesNode) {
			if href, ok := n.Attrs["href"]; ok {
				follow(rel, href)
			}
		})
	}
	d := r.data(t)
	for _, row := range d.Rows {
		v := d.Variants[row.Variant]
		follow(TracesHTML, fmt.Sprintf("%s/%s/%s#q-%d-%d", d.Dir, v.Anchor, tracePartName(row.Index/d.PartSize+1), row.Variant, row.Index))
	}
}

func TestTracesWellFormed(t *testing.T) {
	tr := tracesFixture()
	r := renderTraces(t, tr)
	checkPageSafe(t, TracesHTML, r.index, 2)
	if want := []string{"traces/v-0/part-0001.html", "traces/v-1/part-0001.html"}; !slices.Equal(r.order, want) {
		t.Errorf("got pages %q, want %q", r.order, want)
	}
	var text strings.Builder
	for _, rel := range r.order {
		text.WriteString(checkPageSafe(t, rel, r.parts[rel], 1).allText())
	}
	checkTraceLinks(t, r)

	// Every question is a <details> block whose texts read back as given
	// (escaped once, not twice).
	details := r.details(t)
	var want, got []string
	for _, v := range tr.Variants {
		for _, q := range v.Questions {
			want = append(want, v.Name+"/"+q.ID)
		}
	}
	for _, d := range details {
		got = append(got, d.Attrs["data-variant"]+"/"+d.Attrs["data-qid"])
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("details blocks (-want +got):\n%s", diff)
	}
	i := 0
	for _, v := range tr.Variants {
		for _, q := range v.Questions {
			d := details[i]
			i++
			var qtext string
			d.walk(func(n *tracesNode) {
				if n.hasClass("q-text") {
					qtext = n.allText()
				}
			})
			if qtext != q.Question {
				t.Errorf("%s/%s: question reads %q, want %q", v.Name, q.ID, qtext, q.Question)
			}
			all := d.allText()
			for _, s := range append([]string{q.ID, q.Answer}, append(q.Golds, q.GoldTitles...)...) {
				if !strings.Contains(all, s) {
					t.Errorf("%s/%s: block does not show %q", v.Name, q.ID, s)
				}
			}
		}
	}
	for _, s := range []string{
		"Control\uFFFDchar and " + tracesInjection + " here.", // evidence, control character replaced
		`the tower's "city" <where>`,                          // gap description
		"oops </script><script>alert(1)</script>",             // raw judge output of a parse error
		"judge at round 0: status 500 <html>",                 // failure reason
		`no "Answer:" line`,                                   // reader parse error
		`{"evidence_global_ids": [1, 1`,                       // raw extractor output of a parse error
		"Odd & <Title>",
	} {
		if !strings.Contains(text.String(), s) {
			t.Errorf("the pages do not show %q", s)
		}
	}
}

// TestTracesParts writes a variant of 2.5 pages and one of a page exactly:
// pages hold TracePartSize questions, link to their neighbours, and every
// row of the index leads to its question.
func TestTracesParts(t *testing.T) {
	base := tracesFixture().Variants[0].Questions[0]
	var many, one TraceVariant
	many.Name, one.Name = "full", "no-judge"
	for i := range 2*TracePartSize + TracePartSize/2 {
		q := base
		q.ID = fmt.Sprintf("q%03d", i)
		many.Questions = append(many.Questions, q)
		if i < TracePartSize {
			one.Questions = append(one.Questions, q)
		}
	}
	r := renderTraces(t, Traces{Title: "parts", Variants: []TraceVariant{many, one}})
	want := []string{"traces/v-0/part-0001.html", "traces/v-0/part-0002.html", "traces/v-0/part-0003.html", "traces/v-1/part-0001.html"}
	if !slices.Equal(r.order, want) {
		t.Fatalf("got pages %q, want %q", r.order, want)
	}
	checkTraceLinks(t, r)
	nav := func(rel string) []string {
		var out []string
		parseTracesXML(t, r.parts[rel]).walk(func(n *tracesNode) {
			if n.Name == "a" {
				out = append(out, n.Attrs["href"])
			}
		})
		return out
	}
	for rel, want := range map[string][]string{
		"traces/v-0/part-0001.html": {"../../traces.html", "part-0002.html"},
		"traces/v-0/part-0002.html": {"../../traces.html", "part-0001.html", "part-0003.html"},
		"traces/v-0/part-0003.html": {"../../traces.html", "part-0002.html"},
		"traces/v-1/part-0001.html": {"../../traces.html"},
	} {
		if diff := cmp.Diff(want, nav(rel)); diff != "" {
			t.Errorf("%s: links (-want +got):\n%s", rel, diff)
		}
	}
	if n := len(r.details(t)); n != len(many.Questions)+len(one.Questions) {
		t.Errorf("got %d questions in the pages, want %d", n, len(many.Questions)+len(one.Questions))
	}
	d := r.data(t)
	if len(d.Questions) != len(many.Questions) || len(d.Rows) != len(many.Questions)+len(one.Questions) ||
		d.Variants[0].Parts != 3 || d.Variants[1].Parts != 1 {
		t.Errorf("index: %d questions, %d rows, parts %d and %d; want %d, %d, 3 and 1", len(d.Questions), len(d.Rows),
			d.Variants[0].Parts, d.Variants[1].Parts, len(many.Questions), len(many.Questions)+len(one.Questions))
	}

	// Written again with fewer questions, the pages of the first writing
	// are gone.
	dir := r.dir
	if err := WriteTraces(dir, Traces{Title: "fewer", Variants: []TraceVariant{one}}); err != nil {
		t.Fatal(err)
	}
	if again := readTraces(t, dir); !slices.Equal(again.order, []string{"traces/v-0/part-0001.html"}) {
		t.Errorf("rewritten: got pages %q, want one", again.order)
	}
	// The index's temporary files are gone.
	names := testkit.DirNames(t, dir)
	if want := []string{TracesDir, TracesHTML}; !slices.Equal(names, want) {
		t.Errorf("the folder holds %q, want %q", names, want)
	}
}

func TestTracesFlags(t *testing.T) {
	tr := tracesFixture()
	want := map[string]TraceFlags{
		"full/hp-1":     {},
		"full/hp-2&<x>": {Wrong: true, PrematureStop: true},
		"full/hp-3":     {Wrong: true, Failed: true},
		"no-judge/hp-1": {Exhausted: true},
		"no-judge/tq-9": {Wrong: true, Exhausted: true},
	}
	for _, v := range tr.Variants {
		for _, q := range v.Questions {
			key := v.Name + "/" + q.ID
			if diff := cmp.Diff(want[key], q.Flags()); diff != "" {
				t.Errorf("%s: Flags (-want +got):\n%s", key, diff)
			}
		}
	}

	// The pages carry the same flags as data- attributes.
	for _, n := range renderTraces(t, tr).details(t) {
		key := n.Attrs["data-variant"] + "/" + n.Attrs["data-qid"]
		w, ok := want[key]
		if !ok {
			t.Errorf("unexpected question %s", key)
			continue
		}
		got := TraceFlags{
			Wrong:         n.Attrs["data-wrong"] == "true",
			PrematureStop: n.Attrs["data-premature"] == "true",
			Exhausted:     n.Attrs["data-exhausted"] == "true",
			Failed:        n.Attrs["data-failed"] == "true",
		}
		if diff := cmp.Diff(w, got); diff != "" {
			t.Errorf("%s: data- attributes (-want +got):\n%s", key, diff)
		}
	}
}

func TestTracesFlagRules(t *testing.T) {
	gold := []string{"A", "B"}
	ev := func(titles ...string) []data.Evidence {
		var out []data.Evidence
		for _, ti := range titles {
			out = append(out, data.Evidence{Title: ti, Text: ti + " says x."})
		}
		return out
	}
	tests := []struct {
		name string
		q    TraceQuestion
		want TraceFlags
	}{
		{"sufficient, complete", TraceQuestion{EM: 1, GoldTitles: gold, Golds: []string{"x"},
			States: []data.State{{}, {Round: 1, Evidence: ev("A", "B"), Sufficient: true, IsFinal: true}}}, TraceFlags{}},
		{"sufficient, title missing", TraceQuestion{EM: 1, GoldTitles: gold, Golds: []string{"x"},
			States: []data.State{{}, {Round: 1, Evidence: ev("A"), Sufficient: true, IsFinal: true}}}, TraceFlags{PrematureStop: true}},
		{"sufficient, answer missing", TraceQuestion{EM: 0, GoldTitles: gold, Golds: []string{"y"},
			States: []data.State{{}, {Round: 1, Evidence: ev("A", "B"), Sufficient: true, IsFinal: true}}}, TraceFlags{Wrong: true, PrematureStop: true}},
		{"sufficient, no gold titles", TraceQuestion{EM: 1, Golds: []string{"y"},
			States: []data.State{{}, {Round: 1, Sufficient: true, IsFinal: true}}}, TraceFlags{}},
		{"budget spent", TraceQuestion{EM: 1, GoldTitles: gold, Golds: []string{"x"},
			States: []data.State{{}, {Round: 1}, {Round: 2, Evidence: ev("A"), IsFinal: true}}}, TraceFlags{Exhausted: true}},
		{"failure row", TraceQuestion{GoldTitles: gold,
			States: []data.State{{IsFinal: true, Failure: "boom"}}}, TraceFlags{Wrong: true, Failed: true}},
		{"states then failure row", TraceQuestion{GoldTitles: gold,
			States: []data.State{{}, {Round: 1}, {IsFinal: true, Failure: "boom"}}}, TraceFlags{Wrong: true, Failed: true}},
		{"no final state", TraceQuestion{EM: 1, States: []data.State{{}}}, TraceFlags{Failed: true}},
		{"no states", TraceQuestion{}, TraceFlags{Wrong: true, Failed: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.q.Flags()); diff != "" {
				t.Errorf("Flags (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTracesJSON(t *testing.T) {
	tr := tracesFixture()
	got := renderTraces(t, tr).data(t)
	want := traceData{
		Title: tr.Title, Dir: TracesDir, PartSize: TracePartSize, PerPage: traceRowsPerPage,
		Variants: []traceVariantData{
			{Name: "full", Anchor: "v-0", Questions: 3, Parts: 1, EM: 1.0 / 3, F1: 1.0 / 3, Wrong: 2, PrematureStop: 1, Failed: 1},
			{Name: "no-judge", Anchor: "v-1", Questions: 2, Parts: 1, EM: 0.5, F1: (1 + 2.0/3) / 2, Wrong: 1, Exhausted: 2},
		},
		Questions: []traceIndexQuestion{
			{ID: "hp-1", Text: tr.Variants[0].Questions[0].Question},
			{ID: "hp-2&<x>", Text: "Which 'country' hosts the tower?"},
			{ID: "hp-3", Text: "Who failed?"},
			{ID: "tq-9", Text: "Name the city of light"},
		},
		Rows: []traceRow{
			{Variant: 0, Question: 0, EM: 1, F1: 1, Rounds: 1, States: 2, Index: 0},
			{Variant: 0, Question: 1, Flags: traceFlagWrong | traceFlagPremature, Rounds: 1, States: 2, Index: 1},
			{Variant: 0, Question: 2, Flags: traceFlagWrong | traceFlagFailed, Index: 2},
			{Variant: 1, Question: 0, EM: 1, F1: 1, Flags: traceFlagExhausted, Rounds: 2, States: 3, Index: 0},
			{Variant: 1, Question: 3, F1: 2.0 / 3, Flags: traceFlagWrong | traceFlagExhausted, Rounds: 1, States: 2, Index: 1},
		},
	}
	// Means may differ from the hand-worked ones in the last bit.
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
		t.Errorf("embedded JSON (-want +got):\n%s", diff)
	}
	// The numbers are the input's, bit for bit.
	k := 0
	for _, v := range tr.Variants {
		for _, q := range v.Questions {
			if g := got.Rows[k]; g.EM != q.EM || g.F1 != q.F1 {
				t.Errorf("%s/%s: got EM %v F1 %v, want %v %v", v.Name, q.ID, g.EM, g.F1, q.EM, q.F1)
			}
			k++
		}
	}
}

func TestTracesGolden(t *testing.T) {
	r := renderTraces(t, tracesFixture())
	testkit.Golden(t, "traces.html.golden", string(r.index))
	testkit.Golden(t, "traces_part.html.golden", string(r.parts["traces/v-0/part-0001.html"]))
}

func TestTracesEmpty(t *testing.T) {
	for _, tr := range []Traces{{}, {Title: "none", Variants: []TraceVariant{{Name: "full"}}}} {
		r := renderTraces(t, tr)
		checkPageSafe(t, TracesHTML, r.index, 2)
		if d := r.data(t); len(d.Rows) != 0 || len(d.Variants) != len(tr.Variants) || len(r.order) != 0 {
			t.Errorf("%+v: got %d rows, %d variants, pages %q; want none, %d, none", tr, len(d.Rows), len(d.Variants), r.order, len(tr.Variants))
		}
	}
}

func TestTracesErrors(t *testing.T) {
	tr := tracesFixture()
	tr.Variants[0].Questions[1].F1 = math.NaN()
	dir := t.TempDir()
	if err := WriteTraces(dir, tr); err == nil || !strings.Contains(err.Error(), "hp-2") {
		t.Errorf("NaN F1: got error %v, want one naming the question", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a failed writing left %d entries in the folder", len(entries))
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteTraces(file, tracesFixture()); err == nil {
		t.Error("writing into a file: got no error")
	}
	w, err := NewTraceWriter(t.TempDir(), "x")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	if err := w.Add(TraceQuestion{ID: "q"}); err == nil {
		t.Error("a question before any variant: got no error")
	}
}

func TestTraceText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"tab\tnew\nline\rok", "tab\tnew\nline\rok"},
		{"nul\x00 bell\x07 ff\f", "nul\uFFFD bell\uFFFD ff\uFFFD"},
		{"bad \xff utf8", "bad \uFFFD utf8"},
		{"nonchar \uFFFE", "nonchar \uFFFD"},
		{"é 日本 😀", "é 日本 😀"},
	}
	for _, tt := range tests {
		if got := traceText(tt.in); got != tt.want {
			t.Errorf("traceText(%q): got %q, want %q", tt.in, got, tt.want)
		}
	}
}

// BenchmarkWriteTraces writes the pages of 500 questions (100 copies of
// the fixture's variants).
func BenchmarkWriteTraces(b *testing.B) {
	tr := tracesFixture()
	base := tr.Variants
	tr.Variants = nil
	for range 100 {
		tr.Variants = append(tr.Variants, base...)
	}
	n := 0
	for _, v := range tr.Variants {
		n += len(v.Questions)
	}
	dir := b.TempDir()
	b.ReportAllocs()
	for b.Loop() {
		if err := WriteTraces(dir, tr); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "questions/s")
}

// tracesDOMStub runs the index page's script against a minimal stand-in
// for the DOM, drives its filters and pager and prints, per scenario, the
// rows shown (cells and link), the count line and the pager. Input on
// stdin: {"data", "script"}; the data's per_page is set to 2 so that a
// few questions make several pages.
const tracesDOMStub = `
const input = JSON.parse(require("fs").readFileSync(0, "utf8"));
const data = JSON.parse(input.data);
data.per_page = 2;
function el(tag, props) {
  const n = Object.assign({tagName: tag, hidden: false, disabled: false, className: "", attrs: {}, children: [], listeners: {},
    _text: "",
    get textContent() { return this._text + this.children.map(c => c.textContent).join(""); },
    set textContent(v) { this._text = String(v); this.children = []; },
    setAttribute(k, v) { this.attrs[k] = String(v); },
    appendChild(c) { this.children.push(c); return c; },
    addEventListener(t, f) { (this.listeners[t] = this.listeners[t] || []).push(f); },
    fire(t) { (this.listeners[t] || []).forEach(f => f({preventDefault() {}})); }}, props);
  return n;
}
const byId = {};
for (const id of ["filters", "results", "rows", "pager", "p-info", "p-prev", "p-next", "f-count"]) byId[id] = el("x");
byId["trace-data"] = el("script");
byId["trace-data"].textContent = JSON.stringify(data);
byId["f-variant"] = el("select", {value: ""});
byId["f-text"] = el("input", {value: ""});
for (const b of ["f-wrong", "f-premature", "f-exhausted", "f-failed"]) byId[b] = el("input", {checked: false});
byId["filters"].hidden = true;
const root = el("html");
global.document = {getElementById: id => byId[id] || null, createElement: t => el(t), documentElement: root};
eval(input.script);
function snap(name) {
  return {name: name, form_hidden: byId["filters"].hidden, table_hidden: byId["results"].hidden,
    rows: byId["rows"].children.map(tr => tr.children.map(td => td.children.length && td.children[0].tagName === "a" ?
      td.children[0].attrs.href + " " + td.textContent : td.textContent).join(" | ")),
    count: byId["f-count"].textContent, page: byId["p-info"].textContent,
    prev: !byId["p-prev"].disabled, next: !byId["p-next"].disabled,
    ready: "data-ready-ms" in root.attrs};
}
function set(changes) {
  byId["f-variant"].value = changes.variant || "";
  byId["f-text"].value = changes.text || "";
  for (const b of ["wrong", "premature", "exhausted", "failed"]) byId["f-" + b].checked = !!changes[b];
  byId["filters"].fire("change");
}
const out = [snap("initial")];
byId["p-next"].fire("click"); out.push(snap("next"));
byId["p-next"].fire("click"); out.push(snap("next again"));
byId["p-next"].fire("click"); out.push(snap("past the end"));
byId["p-prev"].fire("click"); out.push(snap("previous"));
for (const [name, c] of [
  ["wrong", {wrong: true}], ["wrong no-judge", {wrong: true, variant: "1"}],
  ["premature", {premature: true}], ["exhausted", {exhausted: true}], ["failed", {failed: true}],
  ["text", {text: "  EIFFEL "}], ["text markup", {text: "<script>"}], ["id", {text: "TQ-9"}], ["nothing", {text: "no such question"}],
]) { set(c); out.push(snap(name)); }
console.log(JSON.stringify(out));
`

// TestTracesScript checks the index page's filters and pager by running
// its script in Node against a stand-in DOM; it is skipped where node is
// not installed. (make e2e-browser runs the page in a real browser.)
func TestTracesScript(t *testing.T) {
	nodeBin, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed")
	}
	r := renderTraces(t, tracesFixture())
	var in struct {
		Data   string `json:"data"`
		Script string `json:"script"`
	}
	parseTracesXML(t, r.index).walk(func(n *tracesNode) {
		switch {
		case n.Name == "script" && n.Attrs["id"] == "trace-data":
			in.Data = n.Text
		case n.Name == "script":
			in.Script = n.Text
		}
	})
	stdin, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), nodeBin, "-e", tracesDOMStub)
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	type snap struct {
		Name        string   `json:"name"`
		FormHidden  bool     `json:"form_hidden"`
		TableHidden bool     `json:"table_hidden"`
		Rows        []string `json:"rows"`
		Count       string   `json:"count"`
		Page        string   `json:"page"`
		Prev        bool     `json:"prev"`
		Next        bool     `json:"next"`
		Ready       bool     `json:"ready"`
	}
	var got []snap
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("node output: %v\n%s", err, out)
	}
	q1 := tracesFixture().Variants[0].Questions[0].Question
	row := map[string]string{
		"full/hp-1":     "full | traces/v-0/part-0001.html#q-0-0 " + q1 + " | hp-1 | 1.00 | 1.00 |  | 1",
		"full/hp-2":     "full | traces/v-0/part-0001.html#q-0-1 Which 'country' hosts the tower? | hp-2&<x> | 0.00 | 0.00 | wrongpremature stop | 1",
		"full/hp-3":     "full | traces/v-0/part-0001.html#q-0-2 Who failed? | hp-3 | 0.00 | 0.00 | wrongfailed | 0",
		"no-judge/hp-1": "no-judge | traces/v-1/part-0001.html#q-1-0 " + q1 + " | hp-1 | 1.00 | 1.00 | budget spent | 2",
		"no-judge/tq-9": "no-judge | traces/v-1/part-0001.html#q-1-1 Name the city of light | tq-9 | 0.00 | 0.67 | wrongbudget spent | 1",
	}
	all := "5 of 5 questions shown, EM 40.0, F1 53.3"
	wrong := "3 of 5 questions shown, EM 0.0, F1 22.2"
	want := []snap{
		{"initial", false, false, []string{row["full/hp-1"], row["full/hp-2"]}, all, "1-2 of 5", false, true, true},
		{"next", false, false, []string{row["full/hp-3"], row["no-judge/hp-1"]}, all, "3-4 of 5", true, true, true},
		{"next again", false, false, []string{row["no-judge/tq-9"]}, all, "5-5 of 5", true, false, true},
		{"past the end", false, false, []string{row["no-judge/tq-9"]}, all, "5-5 of 5", true, false, true},
		{"previous", false, false, []string{row["full/hp-3"], row["no-judge/hp-1"]}, all, "3-4 of 5", true, true, true},
		{"wrong", false, false, []string{row["full/hp-2"], row["full/hp-3"]}, wrong, "1-2 of 3", false, true, true},
		{"wrong no-judge", false, false, []string{row["no-judge/tq-9"]}, "1 of 5 questions shown, EM 0.0, F1 66.7", "1-1 of 1", false, false, true},
		{"premature", false, false, []string{row["full/hp-2"]}, "1 of 5 questions shown, EM 0.0, F1 0.0", "1-1 of 1", false, false, true},
		{"exhausted", false, false, []string{row["no-judge/hp-1"], row["no-judge/tq-9"]}, "2 of 5 questions shown, EM 50.0, F1 83.3", "1-2 of 2", false, false, true},
		{"failed", false, false, []string{row["full/hp-3"]}, "1 of 5 questions shown, EM 0.0, F1 0.0", "1-1 of 1", false, false, true},
		{"text", false, false, []string{row["full/hp-1"], row["no-judge/hp-1"]}, "2 of 5 questions shown, EM 100.0, F1 100.0", "1-2 of 2", false, false, true},
		{"text markup", false, false, []string{row["full/hp-1"], row["no-judge/hp-1"]}, "2 of 5 questions shown, EM 100.0, F1 100.0", "1-2 of 2", false, false, true},
		{"id", false, false, []string{row["no-judge/tq-9"]}, "1 of 5 questions shown, EM 0.0, F1 66.7", "1-1 of 1", false, false, true},
		{"nothing", false, true, nil, "0 of 5 questions shown", "", false, false, true},
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("filters (-want +got):\n%s", diff)
	}
}

// TestTracesNumbered: pages written with the questions numbered by the
// caller (as a benchmark's report numbers them with its score table) are
// the pages Add writes; a number past the next one is an error.
func TestTracesNumbered(t *testing.T) {
	tr := tracesFixture()
	byID := t.TempDir()
	if err := WriteTraces(byID, tr); err != nil {
		t.Fatal(err)
	}
	numbered := t.TempDir()
	w, err := NewTraceWriter(numbered, tr.Title)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	ids := newQuestionIDs()
	for _, v := range tr.Variants {
		if err := w.StartVariant(v.Name); err != nil {
			t.Fatal(err)
		}
		for _, q := range v.Questions {
			k, _, err := ids.number(q.ID)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.add(q, int(k)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.add(tr.Variants[0].Questions[0], ids.len()+1); err == nil || !strings.Contains(err.Error(), "numbered") {
		t.Errorf("a number past the next: got %v, want an error", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files := func(dir string) map[string]string {
		out := map[string]string{}
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(path)
			rel, _ := filepath.Rel(dir, path)
			out[rel] = string(b)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	want, got := files(byID), files(numbered)
	if len(want) == 0 || !cmp.Equal(want, got) {
		t.Errorf("numbered pages differ from Add's: %d files vs %d", len(got), len(want))
	}
}
