package judge

import (
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/testkit"
)

// TestContract runs every judge of this package through what the contract
// of Judge promises, from many goroutines at once (for the race detector):
// the same answer as alone, arguments left as they were, a model name and
// a template hash on every result, and a parse failure that is a result,
// not an error.
func TestContract(t *testing.T) {
	s := scripted(t, `{"sufficient": false, "gap_items": [{"category": "attribute", "target": "Orla Venn", "slot": "birthplace", "description": "d"}]}`)
	linear, err := LoadLinear(writeLinearModel(t, t.TempDir(), TemplateHash))
	if err != nil {
		t.Fatal(err)
	}
	judges := map[string]Judge{
		"lexical": Lexical{},
		"never":   Never{},
		"always":  Always{},
		"linear":  linear,
		"llm":     NewLLM(client(t, s.URL(), "judge-model"), "judge-model"),
	}
	contexts := []data.Context{{}, testkit.Blocks(testkit.FilmBlock), testkit.Blocks(testkit.FilmBlock, testkit.DirectorBlock)}
	for name, j := range judges {
		t.Run(name, func(t *testing.T) {
			want := make([]Result, len(contexts))
			for i, c := range contexts {
				r, err := j.Judge(t.Context(), testkit.BridgeQuestion, c)
				if err != nil {
					t.Fatal(err)
				}
				if r.Model == "" || r.TemplateHash == "" || r.ParseError != "" {
					t.Errorf("context %d: got model %q, template %q, parse error %q; want a model and a template, no parse error", i, r.Model, r.TemplateHash, r.ParseError)
				}
				want[i] = r
			}
			before := make([][]data.Evidence, len(contexts))
			for i, c := range contexts {
				before[i] = c.Evidence()
			}
			var wg sync.WaitGroup
			errs := make([]error, 8)
			for g := range errs {
				wg.Go(func() {
					for range 5 {
						for i, c := range contexts {
							r, err := j.Judge(t.Context(), testkit.BridgeQuestion, c)
							if err != nil {
								errs[g] = err
								return
							}
							if diff := cmp.Diff(want[i].Verdict, r.Verdict); diff != "" || r.Model != want[i].Model || r.TemplateHash != want[i].TemplateHash {
								t.Errorf("goroutine %d, context %d: differs from alone (-alone +concurrent):\n%s", g, i, diff)
								return
							}
						}
					}
				})
			}
			wg.Wait()
			for g, err := range errs {
				if err != nil {
					t.Errorf("goroutine %d: %v", g, err)
				}
			}
			for i, c := range contexts {
				if diff := cmp.Diff(before[i], c.Evidence()); diff != "" {
					t.Errorf("context %d changed (-before +after):\n%s", i, diff)
				}
			}
		})
	}
}

func TestContractParseFailure(t *testing.T) {
	s := scripted(t, "I cannot tell.")
	r, err := NewLLM(client(t, s.URL(), "judge-model"), "judge-model").Judge(t.Context(), testkit.BridgeQuestion, testkit.Blocks(testkit.FilmBlock))
	if err != nil {
		t.Fatalf("got error %v, want an unparseable answer as a result", err)
	}
	if r.ParseError == "" || r.Raw != "I cannot tell." || r.Verdict.Sufficient {
		t.Errorf("got %+v, want the raw answer, a parse error and no sufficient verdict", r)
	}
}
