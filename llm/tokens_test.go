package llm

import (
	"sync"
	"testing"
)

func TestCountTokens(t *testing.T) {
	tests := []struct {
		model, text string
		want        int
	}{
		// Counts as OpenAI's tiktoken gives them.
		{"gpt-4", "hello world", 2},
		{"gpt-4", "tiktoken is great!", 6},
		{"gpt-4o-mini", "tiktoken is great!", 6},
		{"gpt-4o", "", 0},
		{"meta-llama/Meta-Llama-3-8B-Instruct", "hello world", 2},
	}
	for _, tt := range tests {
		if got := CountTokens(tt.model, tt.text); got != tt.want {
			t.Errorf("CountTokens(%q, %q): got %d, want %d", tt.model, tt.text, got, tt.want)
		}
	}
}

func TestCountTokensConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			model := "gpt-4.1"
			if i%2 == 0 {
				model = "gpt-3.5-turbo"
			}
			if got := CountTokens(model, "hello world"); got != 2 {
				t.Errorf("%s: got %d, want 2", model, got)
			}
		})
	}
	wg.Wait()
}

// TestTokenMemo: a memo counts what CountTokens counts, whatever repeats
// or changes at each position.
func TestTokenMemo(t *testing.T) {
	prompts := [][]string{
		{"You are a judge.", "Question one?"},
		{"You are a judge.", "Question two, longer than the first?"},
		{"You are a judge.", "Question two, longer than the first?"},
		{"", "Question two, longer than the first?", "and a third message"},
		{"You are another judge.", "Question one?"},
	}
	for _, model := range []string{"gpt-4o-mini", "llama-3"} {
		m := TokenMemo{Model: model}
		for i, p := range prompts {
			for pos, text := range p {
				if got, want := m.Count(pos, text), CountTokens(model, text); got != want {
					t.Errorf("%s, prompt %d, message %d: got %d tokens, want %d", model, i, pos, got, want)
				}
			}
		}
	}
}
