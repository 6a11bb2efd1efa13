package data

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestContextReferenceLayout holds the authors' evidence text, as
// METHOD.md states it: one block per document, "[Title] EVIDENCE:" then
// "- sentence" lines; a round's blocks joined by a line "---" between
// empty lines; a round left out only when its whole text is already in the
// context.
func TestContextReferenceLayout(t *testing.T) {
	paris := func(i int32, text string) Evidence {
		return Evidence{DocID: "d1", Title: "Paris", Index: i, Text: text}
	}
	// A second document of the same title is a block of its own.
	paris2 := Evidence{DocID: "d2", Title: "Paris", Index: 0, Text: "Paris, Texas is a city."}
	seine := Evidence{DocID: "d3", Title: "Seine", Index: 4, Text: "The Seine\nflows north."}
	blank := Evidence{DocID: "d4", Title: "Blank", Text: "  "}

	c := NewContext(LayoutReference)
	if c.Layout() != LayoutReference || (Context{}).Layout() != LayoutDistill {
		t.Fatalf("layouts: got %q and %q", c.Layout(), (Context{}).Layout())
	}
	c.StartRound("q1")
	if got := c.Append([]Evidence{paris(0, "Paris is the capital."), paris(2, "It lies on the Seine."), seine, paris2, blank}); got != 3 {
		t.Errorf("first round: %d blocks added, want 3", got)
	}
	round1 := "[Paris] EVIDENCE:\n- Paris is the capital.\n- It lies on the Seine.\n\n---\n\n[Seine] EVIDENCE:\n- The Seine flows north.\n\n---\n\n[Paris] EVIDENCE:\n- Paris, Texas is a city."
	if got := c.Render(); got != round1 {
		t.Errorf("after round 1:\n%q\nwant\n%q", got, round1)
	}
	snapshot := c

	// The whole round is in the context already: left out, but recorded.
	c.StartRound("q2")
	if got := c.Append([]Evidence{seine}); got != 0 {
		t.Errorf("round 2: %d blocks added, want 0 (its text is in the context)", got)
	}
	// A round whose text is not all there is added whole, its repeated
	// block included.
	c.StartRound("q3")
	if got := c.Append([]Evidence{seine, paris(5, "It has a tower.")}); got != 2 {
		t.Errorf("round 3: %d blocks added, want 2", got)
	}
	round3 := "[Seine] EVIDENCE:\n- The Seine flows north.\n\n---\n\n[Paris] EVIDENCE:\n- It has a tower."
	if got, want := c.Render(), round1+"\n\n"+round3; got != want {
		t.Errorf("after round 3:\n%q\nwant\n%q", got, want)
	}
	c.StartRound("q4") // nothing chosen
	wantRounds := []Round{{"q1", round1}, {"q2", "[Seine] EVIDENCE:\n- The Seine flows north."}, {"q3", round3}, {"q4", ""}}
	if diff := cmp.Diff(wantRounds, c.Rounds()); diff != "" {
		t.Errorf("rounds (-want +got):\n%s", diff)
	}
	if c.Blocks() != 5 || c.Len() != 6 {
		t.Errorf("blocks %d, sentences %d; want 5, 6", c.Blocks(), c.Len())
	}
	if snapshot.Render() != round1 || len(snapshot.Rounds()) != 1 {
		t.Errorf("the snapshot changed: %q, %d rounds", snapshot.Render(), len(snapshot.Rounds()))
	}
	if got := c.BlocksOf([]Evidence{paris(0, "a"), paris2, seine, blank}); got != 3 {
		t.Errorf("BlocksOf: %d, want 3 (one per document)", got)
	}
}

// TestContextDistillRounds checks that the distill layout records each
// round's blocks, those it did not add included, and that a copy's rounds
// stay its own.
func TestContextDistillRounds(t *testing.T) {
	var c Context
	c.StartRound("q1")
	c.Append([]Evidence{ev("Paris", 0, "Paris is the capital.")})
	copied := c
	c.StartRound("q2")
	c.Append([]Evidence{ev("Paris", 0, "Paris is the capital."), ev("Seine", 1, "A river.")})
	want := []Round{{"q1", "[Paris]\nParis is the capital."}, {"q2", "[Paris]\nParis is the capital.\n\n[Seine]\nA river."}}
	if diff := cmp.Diff(want, c.Rounds()); diff != "" {
		t.Errorf("rounds (-want +got):\n%s", diff)
	}
	if got := c.Render(); got != "[Paris]\nParis is the capital.\n\n[Seine]\nA river." {
		t.Errorf("render: %q", got)
	}
	copied.StartRound("other")
	copied.Append([]Evidence{ev("Rome", 0, "Rome is old.")})
	if diff := cmp.Diff(want, c.Rounds()); diff != "" {
		t.Errorf("a copy's rounds changed the original's (-want +got):\n%s", diff)
	}
	if got := c.BlocksOf([]Evidence{ev("Paris", 0, "a"), ev("Paris", 1, "b")}); got != 1 {
		t.Errorf("BlocksOf: %d, want 1 (one per title)", got)
	}
}

func TestParseLayout(t *testing.T) {
	for in, want := range map[string]Layout{"": LayoutDistill, "distill": LayoutDistill, "reference": LayoutReference} {
		if got, err := ParseLayout(in); got != want || err != nil {
			t.Errorf("ParseLayout(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseLayout("authors"); err == nil {
		t.Error("ParseLayout(authors): no error")
	}
}
