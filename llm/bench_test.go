package llm

import (
	"context"
	"testing"

	"github.com/distill-rag/distill/llm/llmtest"
)

// BenchmarkChat measures the client's own cost against the test server at
// zero latency: requests per second through the bare client and through
// the recommended stack (no cache, so every call reaches the server).
func BenchmarkChat(b *testing.B) {
	s := newServer(b, llmtest.Options{})
	schema, err := SchemaFor[verdict]("verdict")
	if err != nil {
		b.Fatal(err)
	}
	client := newClient(b, s.URL(), Config{Model: "gpt-4o-mini"})
	stacked, err := Stack(client, StackOptions{Limits: LimitOptions{MaxConcurrent: 64}})
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		c    Chatter
	}{{"client", client}, {"stack", stacked}} {
		b.Run(bc.name, func(b *testing.B) {
			req := userRequest("Question: who wrote it?\n\nEvidence:\n[Title]\nA sentence of evidence.")
			req.Schema = &schema
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					var v verdict
					if _, err := DecodeJSON(context.Background(), bc.c, req, &v); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "requests/s")
		})
	}
}

func BenchmarkExtractJSON(b *testing.B) {
	text := "Sure, here is the verdict:\n```json\n{\"sufficient\": false, \"gap_items\": [{\"category\": \"bridge_entity\", \"target\": \"Ada Lovelace\", \"slot\": \"father\", \"description\": \"\"}]}\n```\nLet me know."
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, ok := ExtractJSON(text); !ok {
			b.Fatal("no object")
		}
	}
}
