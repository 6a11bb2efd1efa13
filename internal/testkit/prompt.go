package testkit

import "github.com/distill-rag/distill/data"

// PromptQuestion and PromptContext are the fixed input of the golden
// prompts of the model-backed roles: the judge's and the extractor's,
// reader's and summariser's.
const PromptQuestion = "In which city was the director of the film Moon Over Greselle born?"

// PromptContext returns the fixed evidence context of the golden prompts:
// two blocks, the second about the film's director.
func PromptContext() data.Context {
	var c data.Context
	c.Append([]data.Evidence{
		{DocID: "d1", Title: "Moon Over Greselle", Index: 0, Text: "Moon Over Greselle is a 1961 drama film directed by Orla Venn."},
		{DocID: "d1", Title: "Moon Over Greselle", Index: 2, Text: "It was shot on location in the hills of Tarsk."},
	})
	c.Append([]data.Evidence{
		{DocID: "d2", Title: "Orla Venn", Index: 0, Text: "Orla Venn (1920 - 1988) was a film director."},
	})
	return c
}
