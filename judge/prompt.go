package judge

import (
	"strings"

	"github.com/distill-rag/distill/data"
)

// The judge prompt, written for this project from the facts of the method.
// Changing either text changes TemplateHash, which every recorded judge
// output carries.
const (
	judgeSystem = `You are the sufficiency judge of a question answering system that retrieves evidence step by step. You read a question and the evidence gathered for it so far, and you decide whether that evidence alone is enough to answer the question. When it is not, you say precisely what is missing, as structured gap items; the next search query is written from them.

Rules:
- Use only the evidence shown. Do not use your own knowledge and do not guess: if a fact the answer needs is not stated in the evidence, the evidence is not sufficient.
- If the evidence is sufficient, set "sufficient" to true and give an empty "gap_items" list.
- If it is not, set "sufficient" to false and give one gap item for each missing piece of information, most important first:
  - "category": one of "bridge_entity" (an intermediate entity that must be identified first), "attribute" (a property of a known entity, such as a date, a place or a number), "relation" (how two entities are connected), "evidence_span" (a statement that must be found to confirm or compare facts), "other".
  - "target": the entity the missing information is about, named as in the question or the evidence.
  - "slot": the missing property or relation, in a few words.
  - "description": one short sentence saying what must be found.
- Reply with one JSON object and nothing else, in this form:
{"sufficient": false, "gap_items": [{"category": "attribute", "target": "...", "slot": "...", "description": "..."}]}`

	judgeUser = `Question: {question}

Evidence:
{evidence}

Is the evidence sufficient to answer the question? Reply with the JSON object only.`

	// noEvidence stands for the empty context in the judge prompt.
	noEvidence = "(no evidence yet)"
)

// TemplateHash is the hex SHA-256 of the judge prompt template (its system
// text, a NUL byte, its user text; data.TemplateHash): every output of a
// judge shown Prompt records it, and a trained judge records the one of
// its training data. Treat it as a constant.
var TemplateHash = data.TemplateHash(judgeSystem, judgeUser)

// Prompt renders the judge prompt for a question and a rendered evidence
// context (data.Context.Render). It is the one rendering of (question,
// evidence) the judge sees: the loop, the teacher and SFT export all use it,
// so that the judge is trained on exactly what it is shown when used.
func Prompt(question, renderedContext string) data.Prompt {
	evidence := renderedContext
	if strings.TrimSpace(evidence) == "" {
		evidence = noEvidence
	}
	return data.Prompt{System: judgeSystem, User: fill(judgeUser, data.OneLine(question), evidence)}
}

// fill replaces the {question} and {evidence} placeholders of a template in
// one pass over the template.
func fill(template, question, evidence string) string {
	var b strings.Builder
	b.Grow(len(template) + len(question) + len(evidence))
	for {
		i := strings.IndexByte(template, '{')
		if i < 0 {
			b.WriteString(template)
			return b.String()
		}
		b.WriteString(template[:i])
		rest := template[i:]
		switch {
		case strings.HasPrefix(rest, "{question}"):
			b.WriteString(question)
			template = rest[len("{question}"):]
		case strings.HasPrefix(rest, "{evidence}"):
			b.WriteString(evidence)
			template = rest[len("{evidence}"):]
		default:
			b.WriteByte('{')
			template = rest[1:]
		}
	}
}
