package synth

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/google/go-cmp/cmp"

	"github.com/distill-rag/distill/data"
)

func TestGenerateDeterministic(t *testing.T) {
	tests := []Config{
		{Seed: 1, Questions: 1},
		{Seed: 7, Questions: 25},
		{Seed: DefaultSeed, Questions: DefaultQuestions},
	}
	for _, cfg := range tests {
		t.Run(fmt.Sprintf("seed %d questions %d", cfg.Seed, cfg.Questions), func(t *testing.T) {
			first, err := Generate(cfg)
			if err != nil {
				t.Fatalf("Generate(%+v): got error %v, want nil", cfg, err)
			}
			second, err := Generate(cfg)
			if err != nil {
				t.Fatalf("Generate(%+v) again: got error %v, want nil", cfg, err)
			}
			if diff := cmp.Diff(first, second); diff != "" {
				t.Errorf("Generate(%+v) twice: worlds differ (-first +second):\n%s", cfg, diff)
			}
			other := cfg
			other.Seed++
			third, err := Generate(other)
			if err != nil {
				t.Fatalf("Generate(%+v): got error %v, want nil", other, err)
			}
			if cmp.Equal(first, third) {
				t.Errorf("Generate(%+v) and Generate(%+v): got the same world, want different ones", cfg, other)
			}
		})
	}
}

func TestGenerateBadConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"zero questions", Config{Seed: 1, Questions: 0}},
		{"negative questions", Config{Seed: 1, Questions: -5}},
		{"too many questions", Config{Seed: 1, Questions: MaxQuestions + 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := Generate(tt.cfg)
			if !errors.Is(err, ErrQuestions) {
				t.Errorf("Generate(%+v): got error %v, want %v", tt.cfg, err, ErrQuestions)
			}
			if w != nil {
				t.Errorf("Generate(%+v): got a world, want nil", tt.cfg)
			}
		})
	}
}

func TestGenerateWorlds(t *testing.T) {
	tests := []Config{
		{Seed: 3, Questions: 1},
		{Seed: 4, Questions: 2},
		{Seed: 5, Questions: 7},
		{Seed: 6, Questions: 60},
		{Seed: DefaultSeed, Questions: DefaultQuestions},
		{Seed: 8, Questions: 2000},
	}
	for _, cfg := range tests {
		t.Run(fmt.Sprintf("seed %d questions %d", cfg.Seed, cfg.Questions), func(t *testing.T) {
			w, err := Generate(cfg)
			if err != nil {
				t.Fatalf("Generate(%+v): got error %v, want nil", cfg, err)
			}
			if got := len(w.Questions); got != cfg.Questions {
				t.Errorf("got %d questions, want %d", got, cfg.Questions)
			}
			if got, least := len(w.Passages), 4*cfg.Questions; got < least {
				t.Errorf("got %d passages for %d questions, want at least %d", got, cfg.Questions, least)
			}
			checkWorld(t, w, DatasetName(cfg))
		})
	}
}

func TestSample(t *testing.T) {
	w := Sample()
	want, err := Generate(Config{Seed: DefaultSeed, Questions: DefaultQuestions})
	if err != nil {
		t.Fatalf("Generate(defaults): got error %v, want nil", err)
	}
	if diff := cmp.Diff(want, w); diff != "" {
		t.Errorf("Sample() differs from Generate(defaults) (-want +got):\n%s", diff)
	}
	counts := make(map[string]int)
	for _, q := range w.Questions {
		counts[q.Type]++
		if q.Type == "comparison" {
			counts[q.Answers[0]]++ // yes or no, or a name counted once
		}
	}
	for _, key := range []string{"bridge", "comparison", "yes", "no"} {
		if counts[key] == 0 {
			t.Errorf("questions of kind %q in the sample: got 0, want some (counts %v)", key, counts)
		}
	}
	t.Logf("sample: %d questions (%d bridge, %d comparison), %d passages", len(w.Questions), counts["bridge"], counts["comparison"], len(w.Passages))
}

// TestSampleDistractors checks that the corpus is not trivially searchable:
// for most questions some passage other than the gold ones shares a name
// word with the question (a surname, a city, a title word).
func TestSampleDistractors(t *testing.T) {
	w := Sample()
	byWord := make(map[string]int) // passages whose title or text holds the word
	for _, p := range w.Passages {
		seen := make(map[string]bool)
		for _, word := range words(p.Title + " " + p.Text) {
			if !seen[word] {
				seen[word] = true
				byWord[word]++
			}
		}
	}
	shared := 0
	for _, q := range w.Questions {
		for _, word := range words(q.Text) {
			if unicode.IsUpper(rune(word[0])) && byWord[word] > 2 && !commonWord[word] {
				shared++
				break
			}
		}
	}
	share := float64(shared) / float64(len(w.Questions))
	t.Logf("questions sharing a name word with a non-gold passage: %d/%d = %.1f%%", shared, len(w.Questions), 100*share)
	if share < 0.8 {
		t.Errorf("share of questions with a name word in a distractor: got %.2f, want at least 0.80", share)
	}
}

var commonWord = map[string]bool{"The": true, "In": true, "Who": true, "Which": true, "What": true, "When": true, "Are": true, "A": true}

// checkWorld checks everything a consumer of the sample relies on; name is
// the world's dataset.
func checkWorld(t *testing.T, w *World, name string) {
	t.Helper()
	byTitle := make(map[string]data.Passage, len(w.Passages))
	ids := make(map[string]bool, len(w.Passages))
	for _, p := range w.Passages {
		if _, dup := byTitle[p.Title]; dup {
			t.Errorf("passage title %q: got it twice, want unique titles", p.Title)
		}
		byTitle[p.Title] = p
		if ids[p.ID] {
			t.Errorf("passage id %s (%q): got it twice, want unique ids", p.ID, p.Title)
		}
		ids[p.ID] = true
		if got, want := p.ID, data.DocID(p.Title, p.Text); got != want {
			t.Errorf("passage %q: got id %s, want DocID %s", p.Title, got, want)
		}
		if n := len(p.Sentences); n < 3 || n > 6 {
			t.Errorf("passage %q: got %d sentences, want 3 to 6", p.Title, n)
		}
		if got, want := p.Text, strings.Join(p.Sentences, " "); got != want {
			t.Errorf("passage %q: got text %q, want its sentences joined %q", p.Title, got, want)
		}
		if diff := cmp.Diff(p.Sentences, data.Sentences(p.Text)); diff != "" {
			t.Errorf("passage %q: data.Sentences disagrees with the given split (-given +split):\n%s", p.Title, diff)
		}
	}

	for i, q := range w.Questions {
		if want := fmt.Sprintf("%s-%06d", name, i+1); q.ID != want {
			t.Errorf("question %d: got id %q, want %q", i, q.ID, want)
		}
		if q.Dataset != name {
			t.Errorf("question %s: got dataset %q, want %q", q.ID, q.Dataset, name)
		}
		if q.Text == "" || len(q.Answers) == 0 || q.Answers[0] == "" {
			t.Errorf("question %s: got text %q and answers %q, want both non-empty", q.ID, q.Text, q.Answers)
			continue
		}
		if len(q.GoldTitles) != 2 || q.GoldTitles[0] == q.GoldTitles[1] {
			t.Errorf("question %s: got gold titles %q, want two different titles", q.ID, q.GoldTitles)
			continue
		}
		var golds []data.Passage
		for k, title := range q.GoldTitles {
			p, ok := byTitle[title]
			if !ok {
				t.Errorf("question %s: gold title %q: got no such passage, want one", q.ID, title)
				continue
			}
			golds = append(golds, p)
			if k >= len(q.GoldDocIDs) || q.GoldDocIDs[k] != p.ID {
				t.Errorf("question %s: got gold doc ids %q, want %s at %d", q.ID, q.GoldDocIDs, p.ID, k)
			}
		}
		if len(golds) != 2 {
			continue
		}

		var support []string
		for _, f := range q.SupportingFacts {
			p, ok := byTitle[f.Title]
			if !ok || f.Sentence < 0 || int(f.Sentence) >= len(p.Sentences) {
				t.Errorf("question %s: supporting fact %+v: got no such passage sentence, want one", q.ID, f)
				continue
			}
			if !slices.Contains(q.GoldTitles, f.Title) {
				t.Errorf("question %s: supporting fact %+v: got a title outside gold %q, want a gold one", q.ID, f, q.GoldTitles)
			}
			support = append(support, p.Sentences[f.Sentence])
		}
		if len(q.SupportingFacts) != 2 {
			t.Errorf("question %s: got %d supporting facts, want 2", q.ID, len(q.SupportingFacts))
		}

		answer := q.Answers[0]
		yesNo := answer == "yes" || answer == "no"
		if !yesNo && !slices.ContainsFunc(support, func(s string) bool { return strings.Contains(s, answer) }) {
			t.Errorf("question %s: answer %q: got it in none of the supporting sentences %q, want it in one", q.ID, answer, support)
		}
		switch q.Type {
		case "bridge":
			for _, a := range q.Answers {
				if hasWords(q.Text, a) {
					t.Errorf("question %s %q: got answer %q in the question, want it absent", q.ID, q.Text, a)
				}
			}
		case "comparison":
			for _, title := range q.GoldTitles {
				if !strings.Contains(q.Text, title) {
					t.Errorf("question %s %q: got no mention of %q, want both compared entities named", q.ID, q.Text, title)
				}
			}
			// The answer of a comparison is yes, no or one of the two
			// options, which the question names by necessity.
			if !yesNo && !slices.Contains(q.GoldTitles, answer) {
				t.Errorf("question %s: got answer %q, want yes, no or one of %q", q.ID, answer, q.GoldTitles)
			}
		default:
			t.Errorf("question %s: got type %q, want bridge or comparison", q.ID, q.Type)
		}
	}
}

// words splits s into its letter-and-digit words.
func words(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// hasWords reports whether the words of needle occur in a row among the words
// of s, ignoring case.
func hasWords(s, needle string) bool {
	hay, want := words(strings.ToLower(s)), words(strings.ToLower(needle))
	if len(want) == 0 {
		return false
	}
	for i := 0; i+len(want) <= len(hay); i++ {
		if slices.Equal(hay[i:i+len(want)], want) {
			return true
		}
	}
	return false
}

func TestHasWords(t *testing.T) {
	tests := []struct {
		s, needle string
		want      bool
	}{
		{"Born in Kelford?", "Kelford", true},
		{"Born in Kelfordton?", "Kelford", false},
		{"Born in Kelford, Arvania", "kelford, arvania", true},
		{"Nothing here", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.s+"/"+tt.needle, func(t *testing.T) {
			if got := hasWords(tt.s, tt.needle); got != tt.want {
				t.Errorf("hasWords(%q, %q): got %v, want %v", tt.s, tt.needle, got, tt.want)
			}
		})
	}
}

func BenchmarkSample(b *testing.B) {
	b.ReportAllocs()
	passages := 0
	for b.Loop() {
		passages += len(Sample().Passages)
	}
	b.ReportMetric(float64(passages)/b.Elapsed().Seconds(), "passages/s")
}

// TestDatasetName: only the bundled sample is "sample"; every other world
// has a name of its own, so that no two worlds share a question id.
func TestDatasetName(t *testing.T) {
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{Seed: DefaultSeed, Questions: DefaultQuestions}, "sample"},
		{Config{Seed: DefaultSeed, Questions: 1000}, "synth-42-1000"},
		{Config{Seed: 7, Questions: DefaultQuestions}, "synth-7-200"},
	}
	for _, tt := range tests {
		if got := DatasetName(tt.cfg); got != tt.want {
			t.Errorf("DatasetName(%+v): got %q, want %q", tt.cfg, got, tt.want)
		}
	}
}
