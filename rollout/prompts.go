package rollout

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/distill-rag/distill/data"
)

// The prompts of the model-backed extractor and reader, written for this
// project from the facts of the method (METHOD steps 2 and 5). The judge's
// prompt is judge.Prompt, the one rendering of (question, evidence)
// shared with the teacher and SFT export. Changing any text below changes
// ExtractorTemplateHash or ReaderTemplateHash, which every recorded output
// of those roles carries.
const (
	extractorSystem = `You are the evidence extractor of a question answering system that retrieves documents step by step. You are shown a question, the information still missing to answer it, and the sentences of the documents just retrieved, one per line as "[id] (title | s#n) sentence". You point at the sentences worth keeping as evidence. They are copied verbatim, so you never rewrite them: you only give their ids.

Rules:
- Keep the sentences that state facts needed to answer the question or to supply the missing information: the entity that leads to the answer, the answer itself, or a fact to compare. A sentence that merely mentions the question's words without such a fact is not needed.
- Give only ids shown in the list, each at most once, most useful first, and no more than the number asked for.
- If no sentence helps, give an empty list.
- Reply with one JSON object and nothing else, in this form:
{"evidence_global_ids": [3, 7]}`

	extractorUser = `Question: {question}

Missing information (one JSON object per item):
{gaps}

Sentences:
{sentences}

Which sentences should be kept as evidence? Give at most {max} ids. Reply with the JSON object only.`

	// extractorNoGaps stands for an empty list of gap items.
	extractorNoGaps = "(none given: keep what helps answer the question)"

	readerSystem = `You answer questions from retrieved evidence. Use only the facts the evidence states, not your own knowledge. Give the shortest answer that settles the question: a name, a date, a number or a short phrase, and yes or no for a yes/no question. If the evidence does not settle the question, give the answer it supports best. Reply with one line and nothing else, in this form:
Answer: <the answer>`

	readerUser = `Question: {question}

Evidence:
{evidence}

Reply with the line "Answer: ..." only.`

	// readerNoEvidence stands for the empty context.
	readerNoEvidence = "(no evidence)"

	// readerRoundsSystem and readerRoundsUser are the reader's prompt
	// under ReaderInputReference: every round's query and evidence, and an
	// answer in two lines, as the authors' code asks for it.
	readerRoundsSystem = `You answer questions from evidence retrieved over several searches. Use only the facts the evidence states, not your own knowledge. Give the shortest answer that settles the question: a name, a date, a number or a short phrase, and yes or no for a yes/no question. Reply with two lines and nothing else, in this form:
Answer: <the answer>
Rationale: <one sentence on the evidence that gives the answer>`

	readerRoundsUser = `Question: {question}

{rounds}

Reply with the two lines "Answer: ..." and "Rationale: ..." only.`

	// readerRound introduces one round's evidence.
	readerRound = "Search {n}: {query}"

	// readerRepair is the reader's second turn when its reply held no
	// answer.
	readerRepair = `Your reply has no line starting with "Answer:". Reply again with one line in the form "Answer: <the answer>" and nothing else.`
)

// ExtractorTemplateHash and ReaderTemplateHash are the hex SHA-256 hashes
// (data.TemplateHash) of the extractor's and the reader's prompt templates,
// placeholder texts included. Treat them as constants.
var (
	ExtractorTemplateHash = data.TemplateHash(extractorSystem, extractorUser, extractorNoGaps)
	ReaderTemplateHash    = data.TemplateHash(readerSystem, readerUser, readerNoEvidence, readerRepair)
	// ReaderRoundsTemplateHash is the reader's under ReaderInputReference.
	ReaderRoundsTemplateHash = data.TemplateHash(readerRoundsSystem, readerRoundsUser, readerRound, readerNoEvidence)
)

// ExtractorPrompt renders the extractor's prompt (METHOD step 5): the
// question on one line, the first ExtractorGaps gap items as one JSON object
// per line (the judge's own schema), the numbered sentences exactly as
// their Line gives them ("[id] (title | s#index) sentence"; NumberedLine
// when Line is empty) and the most ids to give, max.
func ExtractorPrompt(question string, gaps []data.GapItem, sentences []Numbered, max int) data.Prompt {
	var g strings.Builder
	for _, item := range gaps[:min(len(gaps), ExtractorGaps)] {
		if g.Len() > 0 {
			g.WriteByte('\n')
		}
		writeGapJSON(&g, item)
	}
	if g.Len() == 0 {
		g.WriteString(extractorNoGaps)
	}
	var s strings.Builder
	for i, n := range sentences {
		if i > 0 {
			s.WriteByte('\n')
		}
		line := n.Line
		if line == "" {
			line = NumberedLine(n.ID, n.Evidence)
		}
		s.WriteString(line)
	}
	user := strings.NewReplacer(
		"{question}", data.OneLine(question),
		"{gaps}", g.String(),
		"{sentences}", s.String(),
		"{max}", strconv.Itoa(max),
	).Replace(extractorUser)
	return data.Prompt{System: extractorSystem, User: user}
}

// writeGapJSON writes a gap item as one line of JSON, fields in the
// schema's order, without HTML escaping.
func writeGapJSON(b *strings.Builder, g data.GapItem) {
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	// A struct of strings always encodes.
	_ = enc.Encode(g)
	b.WriteString(strings.TrimSuffix(buf.String(), "\n"))
}

// ReaderPrompt renders the reader's prompt: the question on one line and
// the evidence context as rendered (data.Context.Render), the same
// rendering the judge sees.
func ReaderPrompt(question, renderedContext string) data.Prompt {
	evidence := renderedContext
	if strings.TrimSpace(evidence) == "" {
		evidence = readerNoEvidence
	}
	user := strings.NewReplacer(
		"{question}", data.OneLine(question),
		"{evidence}", evidence,
	).Replace(readerUser)
	return data.Prompt{System: readerSystem, User: user}
}

// ReaderPromptRounds renders the reader's prompt under
// ReaderInputReference, as the authors' code builds the reader's input:
// the question, then for each round a line with its query and that
// round's evidence (data.Context.Rounds: a round's evidence is shown even
// when the context already held it), asking for "Answer:" and "Rationale:"
// lines.
func ReaderPromptRounds(question string, rounds []data.Round) data.Prompt {
	var b strings.Builder
	for i, r := range rounds {
		if i > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(strings.NewReplacer("{n}", strconv.Itoa(i+1), "{query}", data.OneLine(r.Query)).Replace(readerRound))
		b.WriteByte('\n')
		if strings.TrimSpace(r.Text) == "" {
			b.WriteString(readerNoEvidence)
		} else {
			b.WriteString(r.Text)
		}
	}
	text := b.String()
	if text == "" {
		text = readerNoEvidence
	}
	user := strings.NewReplacer("{question}", data.OneLine(question), "{rounds}", text).Replace(readerRoundsUser)
	return data.Prompt{System: readerRoundsSystem, User: user}
}

// AnswerNotFound is the answer of a reply that ParseRoundsAnswer cannot
// read, as the authors' code scores it.
const AnswerNotFound = "Answer not found"

// ParseRoundsAnswer reads the answer of a reply to ReaderPromptRounds as
// the authors' code does: the text between the first "Answer:" and the
// first "Rationale:" after it, trimmed. A reply without both gives
// AnswerNotFound and false.
func ParseRoundsAnswer(output string) (string, bool) {
	_, after, ok := strings.Cut(output, "Answer:")
	if !ok {
		return AnswerNotFound, false
	}
	answer, _, ok := strings.Cut(after, "Rationale:")
	if !ok {
		return AnswerNotFound, false
	}
	return strings.TrimSpace(answer), true
}

// AnswerError says why a reader's output holds no answer.
type AnswerError struct {
	Reason string
}

func (e *AnswerError) Error() string { return "no answer: " + e.Reason }

// answerWord is the word that introduces the answer, matched regardless of
// case.
const answerWord = "answer"

// ParseAnswer reads the answer from a reader's output, the text after its
// last marker: "Answer:" or "Answer is:" in any case, with spaces or tabs
// allowed before the colon and around "is" (so "Final answer:", "The
// answer is: X" and "**ANSWER:**" count):
//
//   - white space after the marker is skipped, so the answer may start on
//     the next line; the answer is the rest of that one line;
//   - then, until nothing changes: surrounding white space, "*" and "`"
//     (Markdown emphasis and code) are trimmed, one final "." is dropped
//     (but not an ellipsis "..."), and a pair of matching quotes around the
//     whole answer ("...", '...', curly quotes) is removed when the inside
//     holds no such quote.
//
// The answer is always a substring of output. An output without the marker,
// or with nothing left after it, gives an *AnswerError.
func ParseAnswer(output string) (string, error) {
	end := lastMarker(output)
	if end < 0 {
		return "", &AnswerError{Reason: `the output has no "Answer:"`}
	}
	rest := strings.TrimLeft(output[end:], " \t\r\n")
	line, _, _ := strings.Cut(rest, "\n")
	a := cleanAnswer(line)
	if a == "" {
		return "", &AnswerError{Reason: `nothing after the last "Answer:"`}
	}
	return a, nil
}

// lastMarker returns the index just past the colon of the last answer
// marker of s (see ParseAnswer), or -1.
func lastMarker(s string) int {
	for i := len(s) - len(answerWord); i >= 0; i-- {
		if !equalFoldASCII(s[i:i+len(answerWord)], answerWord) {
			continue
		}
		j := skipBlanks(s, i+len(answerWord))
		if j+2 <= len(s) && equalFoldASCII(s[j:j+2], "is") {
			j = skipBlanks(s, j+2)
		}
		if j < len(s) && s[j] == ':' {
			return j + 1
		}
	}
	return -1
}

// skipBlanks returns the index of the first byte of s at or after i that
// is not a space or a tab.
func skipBlanks(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i
}

// equalFoldASCII reports whether s equals lower (all lower case) with
// ASCII letters of s compared regardless of case.
func equalFoldASCII(s, lower string) bool {
	for i := range len(lower) {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// cleanAnswer trims one line of answer as ParseAnswer describes, to a
// fixed point; every step only shortens it.
func cleanAnswer(s string) string {
	for {
		prev := s
		s = strings.Trim(s, " \t\r\v\f*`")
		if strings.HasSuffix(s, ".") && !strings.HasSuffix(s, "..") {
			s = s[:len(s)-1]
		}
		s = unquote(s)
		if s == prev {
			return s
		}
	}
}

// quotePairs are the quotes unquote removes, opening and closing.
var quotePairs = [][2]string{{`"`, `"`}, {"'", "'"}, {"\u201c", "\u201d"}, {"\u2018", "\u2019"}}

// unquote removes a pair of matching quotes around s when the inside holds
// neither of them.
func unquote(s string) string {
	for _, q := range quotePairs {
		if len(s) < len(q[0])+len(q[1]) || !strings.HasPrefix(s, q[0]) || !strings.HasSuffix(s, q[1]) {
			continue
		}
		inner := s[len(q[0]) : len(s)-len(q[1])]
		if strings.Contains(inner, q[0]) || strings.Contains(inner, q[1]) {
			continue
		}
		return inner
	}
	return s
}
