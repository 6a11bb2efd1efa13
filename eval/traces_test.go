package eval

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os/exec"
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

func renderTraces(t *testing.T, tr Traces) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := WriteTraces(&b, tr); err != nil {
		t.Fatalf("WriteTraces: %v", err)
	}
	return b.Bytes()
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
func parseTracesXML(t *testing.T, page []byte) *tracesNode {
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

func TestTracesWellFormed(t *testing.T) {
	tr := tracesFixture()
	page := renderTraces(t, tr)
	root := parseTracesXML(t, page)

	if !bytes.HasPrefix(page, []byte("<!DOCTYPE html>\n")) {
		t.Errorf("page does not start with the HTML doctype")
	}
	ids := map[string]bool{}
	var scripts []*tracesNode
	root.walk(func(n *tracesNode) {
		if id, ok := n.Attrs["id"]; ok {
			if ids[id] {
				t.Errorf("id %q used twice", id)
			}
			ids[id] = true
		}
		// Self-contained: no resource from elsewhere.
		switch n.Name {
		case "link", "img", "iframe", "object", "embed", "audio", "video", "source":
			t.Errorf("external resource element <%s>", n.Name)
		case "script":
			scripts = append(scripts, n)
		}
		for k, v := range n.Attrs {
			switch {
			case k == "src":
				t.Errorf("<%s src=%q>", n.Name, v)
			case (k == "href" || k == "action") && !strings.HasPrefix(v, "#"):
				t.Errorf("<%s %s=%q>: want a link inside the page", n.Name, k, v)
			case strings.HasPrefix(k, "on"):
				t.Errorf("<%s %s>: inline event handler", n.Name, k)
			}
		}
		if n.Name == "style" && strings.Contains(n.Text, "url(") {
			t.Errorf("style loads a resource: %q", n.Text)
		}
	})
	if len(scripts) != 2 {
		t.Fatalf("got %d script elements, want 2 (data, code)", len(scripts))
	}
	if got := scripts[0].Attrs["type"]; got != "application/json" {
		t.Errorf("first script: got type %q, want application/json", got)
	}
	if got := scripts[1].Attrs["type"]; got != "" {
		t.Errorf("second script: got type %q, want none (JavaScript)", got)
	}

	// The injected markup never appears raw, anywhere (text, attributes,
	// the JSON or the script).
	if bytes.Contains(page, []byte(tracesInjection)) {
		t.Errorf("page holds %q unescaped", tracesInjection)
	}
	if n := bytes.Count(page, []byte("<script")); n != 2 {
		t.Errorf("got %d <script in the page, want 2", n)
	}
	if n := bytes.Count(page, []byte("</script")); n != 2 {
		t.Errorf("got %d </script in the page, want 2", n)
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
			t.Errorf("script body holds %q at %d: %q", body[i], i, body[max(0, i-40):min(len(body), i+40)])
		}
	}
	if bytes.Contains(page, []byte("\x01")) {
		t.Errorf("page holds a control character")
	}

	// Every question is a <details> block whose texts read back as given
	// (escaped once, not twice).
	var details []*tracesNode
	root.walk(func(n *tracesNode) {
		if n.Name == "details" {
			details = append(details, n)
		}
	})
	var want []string
	for _, v := range tr.Variants {
		for _, q := range v.Questions {
			want = append(want, v.Name+"/"+q.ID)
		}
	}
	var got []string
	for _, d := range details {
		got = append(got, d.Attrs["data-variant"]+"/"+d.Attrs["data-qid"])
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("details blocks (-want +got):\n%s", diff)
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
	text := root.allText()
	for _, s := range []string{
		"Control\uFFFDchar and " + tracesInjection + " here.", // evidence, control character replaced
		`the tower's "city" <where>`,                          // gap description
		"oops </script><script>alert(1)</script>",             // raw judge output of a parse error
		"judge at round 0: status 500 <html>",                 // failure reason
		`no "Answer:" line`,                                   // reader parse error
		`{"evidence_global_ids": [1, 1`,                       // raw extractor output of a parse error
		"Odd & <Title>",
	} {
		if !strings.Contains(text, s) {
			t.Errorf("page does not show %q", s)
		}
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

	// The page carries the same flags as data- attributes.
	root := parseTracesXML(t, renderTraces(t, tr))
	root.walk(func(n *tracesNode) {
		if n.Name != "details" {
			return
		}
		key := n.Attrs["data-variant"] + "/" + n.Attrs["data-qid"]
		w, ok := want[key]
		if !ok {
			t.Errorf("unexpected question %s", key)
			return
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
	})
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
	root := parseTracesXML(t, renderTraces(t, tr))
	var raw string
	root.walk(func(n *tracesNode) {
		if n.Name == "script" && n.Attrs["id"] == "trace-data" {
			raw = n.Text
		}
	})
	var got traceData
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("embedded JSON: %v\n%s", err, raw)
	}
	want := traceData{
		Title: tr.Title,
		Variants: []traceVariantData{
			{Name: "full", Questions: 3, EM: 1.0 / 3, F1: 1.0 / 3, Wrong: 2, PrematureStop: 1, Failed: 1},
			{Name: "no-judge", Questions: 2, EM: 0.5, F1: (1 + 2.0/3) / 2, Wrong: 1, Exhausted: 2},
		},
		Questions: []traceQuestionData{
			{Anchor: "q-0-0", Variant: "full", ID: "hp-1", EM: 1, F1: 1, Rounds: 1, States: 2, EndReason: EndSufficient},
			{Anchor: "q-0-1", Variant: "full", ID: "hp-2&<x>", Rounds: 1, States: 2, EndReason: EndSufficient,
				TraceFlags: TraceFlags{Wrong: true, PrematureStop: true}},
			{Anchor: "q-0-2", Variant: "full", ID: "hp-3", EndReason: EndFailed, TraceFlags: TraceFlags{Wrong: true, Failed: true}},
			{Anchor: "q-1-0", Variant: "no-judge", ID: "hp-1", EM: 1, F1: 1, Rounds: 2, States: 3, EndReason: EndBudget,
				TraceFlags: TraceFlags{Exhausted: true}},
			{Anchor: "q-1-1", Variant: "no-judge", ID: "tq-9", F1: 2.0 / 3, Rounds: 1, States: 2, EndReason: EndBudget,
				TraceFlags: TraceFlags{Wrong: true, Exhausted: true}},
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
			if g := got.Questions[k]; g.EM != q.EM || g.F1 != q.F1 {
				t.Errorf("%s/%s: got EM %v F1 %v, want %v %v", v.Name, q.ID, g.EM, g.F1, q.EM, q.F1)
			}
			k++
		}
	}
}

func TestTracesGolden(t *testing.T) {
	page := renderTraces(t, tracesFixture())
	testkit.Golden(t, "traces.html.golden", string(page))
}

func TestTracesEmpty(t *testing.T) {
	for _, tr := range []Traces{{}, {Title: "none", Variants: []TraceVariant{{Name: "full"}}}} {
		page := renderTraces(t, tr)
		root := parseTracesXML(t, page)
		var raw string
		root.walk(func(n *tracesNode) {
			if n.Attrs["id"] == "trace-data" {
				raw = n.Text
			}
		})
		var got traceData
		if err := json.Unmarshal([]byte(raw), &got); err != nil {
			t.Errorf("%+v: embedded JSON: %v", tr, err)
		}
	}
}

func TestTracesErrors(t *testing.T) {
	tr := tracesFixture()
	tr.Variants[0].Questions[1].F1 = math.NaN()
	if err := WriteTraces(io.Discard, tr); err == nil || !strings.Contains(err.Error(), "hp-2") {
		t.Errorf("NaN F1: got error %v, want one naming the question", err)
	}
	werr := errors.New("disk full")
	if err := WriteTraces(tracesFailingWriter{werr}, tracesFixture()); !errors.Is(err, werr) {
		t.Errorf("failing writer: got error %v, want %v", err, werr)
	}
}

type tracesFailingWriter struct{ err error }

func (w tracesFailingWriter) Write([]byte) (int, error) { return 0, w.err }

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
	b.ReportAllocs()
	for b.Loop() {
		if err := WriteTraces(io.Discard, tr); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "questions/s")
}

// tracesDOMStub runs the page's script against a minimal stand-in for the
// DOM built from the page's elements, drives its filters and prints, per
// scenario, the questions shown, the hidden variant sections, the count
// line and the open questions. Input on stdin: {"data", "script",
// "questions": [{"id", "section", "attrs"}], "sections": [ids], "hash"}.
const tracesDOMStub = `
const input = JSON.parse(require("fs").readFileSync(0, "utf8"));
const byId = {};
function node(id, props) {
  const n = Object.assign({id: id, hidden: false, open: false, listeners: {}, attrs: {},
    getAttribute(k) { return k in this.attrs ? this.attrs[k] : null; },
    addEventListener(t, f) { (this.listeners[t] = this.listeners[t] || []).push(f); },
    fire(t) { (this.listeners[t] || []).forEach(f => f({preventDefault() {}})); }}, props);
  byId[id] = n;
  return n;
}
node("trace-data", {textContent: input.data});
const form = node("filters", {hidden: true});
node("f-variant", {value: ""});
node("f-text", {value: ""});
node("f-count", {textContent: ""});
for (const b of ["f-wrong", "f-premature", "f-exhausted", "f-failed"]) node(b, {checked: false});
node("f-open", {});
node("f-close", {});
const questions = input.questions.map(q => node(q.id, {tagName: "DETAILS", attrs: q.attrs, section: q.section}));
const sections = input.sections.map(id => node(id, {tagName: "SECTION",
  querySelector(sel) {
    if (sel !== "details.question:not([hidden])") throw new Error("unexpected selector " + sel);
    return questions.find(q => q.section === id ? !q.hidden : false) || null;
  }}));
global.document = {
  getElementById: id => byId[id] || null,
  querySelectorAll(sel) {
    if (sel === "details.question") return questions;
    if (sel === "section.variant") return sections;
    throw new Error("unexpected selector " + sel);
  },
};
global.location = {hash: input.hash};
global.window = {addEventListener() {}};
eval(input.script);
function snap(name) {
  return {name: name, form_hidden: form.hidden,
    shown: questions.filter(q => !q.hidden).map(q => q.id),
    hidden_sections: sections.filter(s => s.hidden).map(s => s.id),
    count: byId["f-count"].textContent,
    open: questions.filter(q => q.open).map(q => q.id)};
}
function set(changes) {
  byId["f-variant"].value = changes.variant || "";
  byId["f-text"].value = changes.text || "";
  for (const b of ["wrong", "premature", "exhausted", "failed"]) byId["f-" + b].checked = !!changes[b];
  form.fire("change");
}
const out = [snap("initial")];
for (const [name, c] of [
  ["wrong", {wrong: true}], ["wrong no-judge", {wrong: true, variant: "no-judge"}],
  ["premature", {premature: true}], ["exhausted", {exhausted: true}], ["failed", {failed: true}],
  ["text", {text: "  EIFFEL "}], ["text markup", {text: "<script>"}], ["nothing", {text: "no such question"}],
]) { set(c); out.push(snap(name)); }
set({wrong: true});
byId["f-open"].fire("click");
out.push(snap("open shown"));
byId["f-close"].fire("click");
out.push(snap("close all"));
console.log(JSON.stringify(out));
`

// TestTracesScript checks the page's filters by running its script in
// Node against a stand-in DOM; it is skipped where node is not installed.
func TestTracesScript(t *testing.T) {
	nodeBin, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed")
	}
	root := parseTracesXML(t, renderTraces(t, tracesFixture()))
	type question struct {
		ID      string            `json:"id"`
		Section string            `json:"section"`
		Attrs   map[string]string `json:"attrs"`
	}
	in := struct {
		Data      string     `json:"data"`
		Script    string     `json:"script"`
		Questions []question `json:"questions"`
		Sections  []string   `json:"sections"`
		Hash      string     `json:"hash"`
	}{Hash: "#q-0-1"}
	root.walk(func(n *tracesNode) {
		switch {
		case n.Name == "script" && n.Attrs["id"] == "trace-data":
			in.Data = n.Text
		case n.Name == "script":
			in.Script = n.Text
		case n.Name == "section":
			in.Sections = append(in.Sections, n.Attrs["id"])
			for _, d := range n.Children {
				if d.Name == "details" {
					in.Questions = append(in.Questions, question{ID: d.Attrs["id"], Section: n.Attrs["id"], Attrs: d.Attrs})
				}
			}
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
		Name           string   `json:"name"`
		FormHidden     bool     `json:"form_hidden"`
		Shown          []string `json:"shown"`
		HiddenSections []string `json:"hidden_sections"`
		Count          string   `json:"count"`
		Open           []string `json:"open"`
	}
	var got []snap
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("node output: %v\n%s", err, out)
	}
	all := []string{"q-0-0", "q-0-1", "q-0-2", "q-1-0", "q-1-1"}
	none := []string{}
	want := []snap{
		{"initial", false, all, none, "5 of 5 questions shown, EM 40.0, F1 53.3", []string{"q-0-1"}},
		{"wrong", false, []string{"q-0-1", "q-0-2", "q-1-1"}, none, "3 of 5 questions shown, EM 0.0, F1 22.2", []string{"q-0-1"}},
		{"wrong no-judge", false, []string{"q-1-1"}, []string{"v-0"}, "1 of 5 questions shown, EM 0.0, F1 66.7", []string{"q-0-1"}},
		{"premature", false, []string{"q-0-1"}, []string{"v-1"}, "1 of 5 questions shown, EM 0.0, F1 0.0", []string{"q-0-1"}},
		{"exhausted", false, []string{"q-1-0", "q-1-1"}, []string{"v-0"}, "2 of 5 questions shown, EM 50.0, F1 83.3", []string{"q-0-1"}},
		{"failed", false, []string{"q-0-2"}, []string{"v-1"}, "1 of 5 questions shown, EM 0.0, F1 0.0", []string{"q-0-1"}},
		{"text", false, []string{"q-0-0", "q-1-0"}, none, "2 of 5 questions shown, EM 100.0, F1 100.0", []string{"q-0-1"}},
		{"text markup", false, []string{"q-0-0", "q-1-0"}, none, "2 of 5 questions shown, EM 100.0, F1 100.0", []string{"q-0-1"}},
		{"nothing", false, none, []string{"v-0", "v-1"}, "0 of 5 questions shown", []string{"q-0-1"}},
		{"open shown", false, []string{"q-0-1", "q-0-2", "q-1-1"}, none, "3 of 5 questions shown, EM 0.0, F1 22.2", []string{"q-0-1", "q-0-2", "q-1-1"}},
		{"close all", false, []string{"q-0-1", "q-0-2", "q-1-1"}, none, "3 of 5 questions shown, EM 0.0, F1 22.2", none},
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("filters (-want +got):\n%s", diff)
	}
}
