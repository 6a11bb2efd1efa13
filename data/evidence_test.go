package data

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func ev(title string, index int32, text string) Evidence {
	return Evidence{DocID: "id-" + title, Title: title, Index: index, Text: text}
}

func TestContextAppend(t *testing.T) {
	tests := []struct {
		name   string
		rounds [][]Evidence
		added  []int
		want   string
		// wantEvidence lists the texts of Evidence(), in order.
		wantEvidence []string
	}{
		{
			name:   "empty",
			rounds: nil,
			want:   "",
		},
		{
			name:   "empty round adds nothing",
			rounds: [][]Evidence{{}},
			added:  []int{0},
			want:   "",
		},
		{
			name:         "one block",
			rounds:       [][]Evidence{{ev("Paris", 0, "Paris is the capital of France."), ev("Paris", 2, "It lies on the Seine.")}},
			added:        []int{1},
			want:         "[Paris]\nParis is the capital of France.\nIt lies on the Seine.",
			wantEvidence: []string{"Paris is the capital of France.", "It lies on the Seine."},
		},
		{
			name: "grouped by title in order of first appearance",
			rounds: [][]Evidence{{
				ev("B", 3, "b3."), ev("A", 0, "a0."), ev("B", 1, "b1."), ev("C", 0, "c0."), ev("A", 1, "a1."),
			}},
			added:        []int{3},
			want:         "[B]\nb3.\nb1.\n\n[A]\na0.\na1.\n\n[C]\nc0.",
			wantEvidence: []string{"b3.", "b1.", "a0.", "a1.", "c0."},
		},
		{
			name: "second round appends after a blank line",
			rounds: [][]Evidence{
				{ev("A", 0, "a0.")},
				{ev("B", 0, "b0.")},
			},
			added:        []int{1, 1},
			want:         "[A]\na0.\n\n[B]\nb0.",
			wantEvidence: []string{"a0.", "b0."},
		},
		{
			name: "a block already there is not added again",
			rounds: [][]Evidence{
				{ev("A", 0, "a0."), ev("A", 1, "a1.")},
				{ev("A", 0, "a0."), ev("A", 1, "a1."), ev("B", 0, "b0.")},
			},
			added:        []int{1, 1},
			want:         "[A]\na0.\na1.\n\n[B]\nb0.",
			wantEvidence: []string{"a0.", "a1.", "b0."},
		},
		{
			name: "a block contained in a larger one is not added",
			rounds: [][]Evidence{
				{ev("A", 0, "a0."), ev("A", 1, "a1.")},
				{ev("A", 0, "a0.")},
			},
			added:        []int{1, 0},
			want:         "[A]\na0.\na1.",
			wantEvidence: []string{"a0.", "a1."},
		},
		{
			name: "a block with a new sentence is added whole",
			rounds: [][]Evidence{
				{ev("A", 0, "a0.")},
				{ev("A", 0, "a0."), ev("A", 1, "a1.")},
			},
			added:        []int{1, 1},
			want:         "[A]\na0.\n\n[A]\na0.\na1.",
			wantEvidence: []string{"a0.", "a0.", "a1."},
		},
		{
			name: "containment is of whole lines",
			rounds: [][]Evidence{
				{ev("A", 0, "He was born in 1950 in Rome.")},
				{ev("A", 0, "He was born in 1950")},
			},
			added:        []int{1, 1},
			want:         "[A]\nHe was born in 1950 in Rome.\n\n[A]\nHe was born in 1950",
			wantEvidence: []string{"He was born in 1950 in Rome.", "He was born in 1950"},
		},
		{
			name: "containment does not start mid-line",
			rounds: [][]Evidence{
				{ev("XA", 0, "a0.")},
				{ev("A", 0, "a0.")},
			},
			added:        []int{1, 1},
			want:         "[XA]\na0.\n\n[A]\na0.",
			wantEvidence: []string{"a0.", "a0."},
		},
		{
			name:         "line breaks shown as spaces, text kept verbatim",
			rounds:       [][]Evidence{{ev("Two\nlines", 0, " first\nsecond\r\nthird ")}},
			added:        []int{1},
			want:         "[Two lines]\nfirst second  third",
			wantEvidence: []string{" first\nsecond\r\nthird "},
		},
		{
			name:         "blank sentences ignored",
			rounds:       [][]Evidence{{ev("A", 0, "  "), ev("B", 0, "b0."), ev("A", 1, "")}},
			added:        []int{1},
			want:         "[B]\nb0.",
			wantEvidence: []string{"b0."},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Context
			var added []int
			for _, r := range tt.rounds {
				added = append(added, c.Append(r))
			}
			if diff := cmp.Diff(tt.added, added); diff != "" {
				t.Errorf("blocks added per round (-want +got):\n%s", diff)
			}
			if got := c.Render(); got != tt.want {
				t.Errorf("got rendering %q, want %q", got, tt.want)
			}
			var texts []string
			for _, e := range c.Evidence() {
				texts = append(texts, e.Text)
			}
			if diff := cmp.Diff(tt.wantEvidence, texts); diff != "" {
				t.Errorf("evidence (-want +got):\n%s", diff)
			}
			if got, want := c.Len(), len(tt.wantEvidence); got != want {
				t.Errorf("got Len() %d, want %d", got, want)
			}
			if got, want := c.Blocks(), sum(tt.added); got != want {
				t.Errorf("got Blocks() %d, want %d", got, want)
			}
			checkRendering(t, c)
		})
	}
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

func TestContextProvenance(t *testing.T) {
	var c Context
	in := []Evidence{
		{DocID: "d2", Title: "B", Index: 4, Text: "b4."},
		{DocID: "d1", Title: "A", Index: 0, Text: "a0."},
		{DocID: "d2", Title: "B", Index: 0, Text: "b0."},
	}
	c.Append(in)
	want := []Evidence{in[0], in[2], in[1]}
	if diff := cmp.Diff(want, c.Evidence()); diff != "" {
		t.Errorf("evidence in rendering order (-want +got):\n%s", diff)
	}
}

// TestContextCopies checks that a copied Context is a snapshot.
func TestContextCopies(t *testing.T) {
	var c Context
	c.Append([]Evidence{ev("A", 0, "a0.")})
	snap := c
	c.Append([]Evidence{ev("B", 0, "b0.")})
	other := snap
	other.Append([]Evidence{ev("C", 0, "c0.")})
	checks := []struct {
		name string
		c    Context
		want string
		n    int
	}{
		{"snapshot", snap, "[A]\na0.", 1},
		{"original", c, "[A]\na0.\n\n[B]\nb0.", 2},
		{"other copy", other, "[A]\na0.\n\n[C]\nc0.", 2},
	}
	for _, tt := range checks {
		if got := tt.c.Render(); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
		if got := tt.c.Len(); got != tt.n {
			t.Errorf("%s: got Len() %d, want %d", tt.name, got, tt.n)
		}
		ev := tt.c.Evidence()
		if got := ev[len(ev)-1].Text; !strings.HasSuffix(tt.want, got) {
			t.Errorf("%s: last evidence %q is not the last line of %q", tt.name, got, tt.want)
		}
	}
}

func TestContainsLines(t *testing.T) {
	tests := []struct {
		text, block string
		want        bool
	}{
		{"", "[A]", false},
		{"[A]\nx", "[A]\nx", true},
		{"[A]\nx\ny", "[A]\nx", true},
		{"[B]\nz\n\n[A]\nx", "[A]\nx", true},
		{"[A]\nxy", "[A]\nx", false},
		{"[XA]\nx", "[A]\nx", false},
		{"[A]\nxy\n\n[A]\nx", "[A]\nx", true},
		{"[A]\nx y", "x", false},
	}
	for _, tt := range tests {
		if got := containsLines(tt.text, tt.block); got != tt.want {
			t.Errorf("containsLines(%q, %q): got %v, want %v", tt.text, tt.block, got, tt.want)
		}
	}
}

// FuzzContext appends fuzzed rounds and checks the invariants that tie the
// structured evidence to its rendering.
func FuzzContext(f *testing.F) {
	f.Add("A\x1fa0.\x1eB\x1fb0.\x1eA\x1fa1.", "A\x1fa0.\x1eA\x1fa1.\x1eC\x1fc\nd")
	f.Add("", "T\x1f")
	f.Add("[x]\x1f[y]", "[x]\x1f[y]\x1ex\x1fy")
	f.Fuzz(func(t *testing.T, round1, round2 string) {
		var c Context
		for _, round := range []string{round1, round2, round1} {
			in := parseRound(round)
			before := c
			added := c.Append(in)
			if added < 0 || c.Blocks() != before.Blocks()+added {
				t.Fatalf("added %d blocks, Blocks went from %d to %d", added, before.Blocks(), c.Blocks())
			}
			if added == 0 && c.Render() != before.Render() {
				t.Fatalf("no block added but the rendering changed")
			}
			if !strings.HasPrefix(c.Render(), before.Render()) {
				t.Fatalf("rendering %q does not extend %q", c.Render(), before.Render())
			}
			// Every non-blank sentence appended is now shown, as a line, in a
			// block of its title.
			for _, e := range in {
				if strings.TrimSpace(e.Text) == "" {
					continue
				}
				if !containsLines(c.Render(), "["+OneLine(e.Title)+"]") || !containsLines(c.Render(), OneLine(e.Text)) {
					t.Fatalf("sentence %q of %q missing from %q", e.Text, e.Title, c.Render())
				}
			}
			// Appending the same round again adds nothing.
			again := c
			if n := again.Append(in); n != 0 {
				t.Fatalf("appending a round twice added %d blocks the second time", n)
			}
			checkRendering(t, c)
		}
	})
}

// checkRendering checks that a context's rendering is its evidence, block
// by block: blocks split at empty lines, a title line, then one line per
// sentence of that title.
func checkRendering(t *testing.T, c Context) {
	t.Helper()
	evidence := c.Evidence()
	if c.Render() == "" {
		if len(evidence) != 0 || c.Blocks() != 0 {
			t.Fatalf("empty rendering with %d sentences in %d blocks", len(evidence), c.Blocks())
		}
		return
	}
	blocks := strings.Split(c.Render(), "\n\n")
	if len(blocks) != c.Blocks() {
		t.Fatalf("rendering has %d blocks, Blocks() says %d:\n%s", len(blocks), c.Blocks(), c.Render())
	}
	i := 0
	for _, block := range blocks {
		lines := strings.Split(block, "\n")
		if len(lines) < 2 {
			t.Fatalf("block %q has no sentence", block)
		}
		for _, line := range lines[1:] {
			if i == len(evidence) {
				t.Fatalf("rendering has more sentences than the evidence (%d)", len(evidence))
			}
			e := evidence[i]
			if want := "[" + OneLine(e.Title) + "]"; lines[0] != want {
				t.Fatalf("sentence %d is shown under %q, want %q", i, lines[0], want)
			}
			if want := OneLine(e.Text); line != want {
				t.Fatalf("sentence %d is shown as %q, want %q", i, line, want)
			}
			i++
		}
	}
	if i != len(evidence) {
		t.Fatalf("rendering shows %d sentences, evidence has %d", i, len(evidence))
	}
}

// parseRound reads a fuzz round: records separated by 0x1e, title and text
// by 0x1f.
func parseRound(s string) []Evidence {
	if s == "" {
		return nil
	}
	var out []Evidence
	for i, rec := range strings.Split(s, "\x1e") {
		title, text, _ := strings.Cut(rec, "\x1f")
		out = append(out, Evidence{DocID: title, Title: title, Index: int32(i), Text: text})
	}
	return out
}

func TestTemplateHash(t *testing.T) {
	if got := TemplateHash("a", "b"); len(got) != 64 || strings.Trim(got, "0123456789abcdef") != "" {
		t.Fatalf("got TemplateHash %q, want 64 lower-case hex digits", got)
	}
	if TemplateHash("ab", "c") == TemplateHash("a", "bc") {
		t.Error("TemplateHash does not separate its parts")
	}
}
