package judge

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/testkit"
)

func TestPromptGolden(t *testing.T) {
	var c data.Context
	c.Append([]data.Evidence{
		{DocID: "d1", Title: "The Electric Frontier", Index: 0, Text: "The Electric Frontier is a 1987 drama film directed by Thirta Grupoustaton."},
		{DocID: "d2", Title: "Thirta Grupoustaton", Index: 1, Text: "He was born in Standafield, Tovamesia, and grew up in Zargolastad."},
	})
	c.Append([]data.Evidence{{DocID: "d2", Title: "Thirta Grupoustaton", Index: 0, Text: "Thirta Grupoustaton (born 1 September 1956) is a film director."}})
	q := "In which city was the director of The Electric Frontier born?"
	p := Prompt(q, c.Render())
	testkit.Golden(t, "prompt.golden", "=== system\n"+p.System+"\n=== user\n"+p.User+"\n")

	empty := Prompt(q, "")
	testkit.Golden(t, "prompt_empty.golden", "=== system\n"+empty.System+"\n=== user\n"+empty.User+"\n")
}

func TestPrompt(t *testing.T) {
	t.Run("placeholders in the input are not expanded", func(t *testing.T) {
		p := Prompt("What is {evidence}?", "[T]\nsays {question}")
		want := "Question: What is {evidence}?\n\nEvidence:\n[T]\nsays {question}\n\n"
		if !strings.HasPrefix(p.User, want) {
			t.Errorf("got user prompt %q, want it to start with %q", p.User, want)
		}
	})
	t.Run("same rendering, same prompt", func(t *testing.T) {
		var a, b data.Context
		a.Append([]data.Evidence{{DocID: "id-A", Title: "A", Index: 0, Text: "a0."}})
		b.Append([]data.Evidence{{DocID: "id-A", Title: "A", Index: 0, Text: "a0."}})
		if diff := cmp.Diff(Prompt("q?", a.Render()), Prompt("q?", b.Render())); diff != "" {
			t.Error(diff)
		}
	})
	t.Run("schema and categories are stated", func(t *testing.T) {
		p := Prompt("q?", "")
		for _, want := range append(data.GapCategories(), `"sufficient"`, `"gap_items"`, `"target"`, `"slot"`, `"description"`, "Use only the evidence shown") {
			if !strings.Contains(p.System, want) {
				t.Errorf("system prompt lacks %q", want)
			}
		}
	})
}

func TestTemplateHash(t *testing.T) {
	if got := TemplateHash; len(got) != 64 || strings.Trim(got, "0123456789abcdef") != "" {
		t.Fatalf("got TemplateHash %q, want 64 lower-case hex digits", got)
	}
	if got, want := TemplateHash, data.TemplateHash(judgeSystem, judgeUser); got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// TestTemplateHashPinned fails when the prompt texts change: every recorded
// judge output and every trained judge carries this hash, so a change must
// be deliberate (update the value, and expect trained judges to be refused).
func TestTemplateHashPinned(t *testing.T) {
	const want = "d86ad3d7b8277572bb2288f7b9ea78d0568f69001280d089425f652596e5e4a2"
	if TemplateHash != want {
		t.Errorf("got TemplateHash %s, want %s", TemplateHash, want)
	}
}
