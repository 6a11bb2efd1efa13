package data

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// The categories of a gap item, as the judge names them.
const (
	// CategoryBridgeEntity is an entity that must be identified or looked
	// up before the question can be answered.
	CategoryBridgeEntity = "bridge_entity"
	// CategoryAttribute is a property of a known entity (a date, a place, a
	// number, a nationality, ...).
	CategoryAttribute = "attribute"
	// CategoryRelation is how two entities are connected.
	CategoryRelation = "relation"
	// CategoryEvidenceSpan is a statement that must be found to confirm or
	// compare facts.
	CategoryEvidenceSpan = "evidence_span"
	// CategoryOther is anything else.
	CategoryOther = "other"
)

// GapCategories returns the gap item categories in the order the judge
// prompt lists them.
func GapCategories() []string {
	return []string{CategoryBridgeEntity, CategoryAttribute, CategoryRelation, CategoryEvidenceSpan, CategoryOther}
}

// GapItem is one piece of information the judge says is missing from the
// evidence. Target is the entity it is about, Slot the missing property or
// relation, Description a short free-text statement of what to find.
type GapItem struct {
	Category    string `parquet:"category" json:"category"`
	Target      string `parquet:"target" json:"target"`
	Slot        string `parquet:"slot" json:"slot"`
	Description string `parquet:"description" json:"description"`
}

// Verdict is the judge's reading of (question, evidence): whether the
// evidence suffices and, if not, what is missing. A sufficient verdict has
// no gap items.
type Verdict struct {
	Sufficient bool      `parquet:"sufficient" json:"sufficient"`
	GapItems   []GapItem `parquet:"gap_items,list" json:"gap_items"`
}

// ErrVerdict is the cause of every ParseVerdict error, for callers that
// count parse failures with errors.Is.
var ErrVerdict = errors.New("bad verdict")

// ParseVerdict reads a verdict from a JSON object of the judge's schema,
// {"sufficient": bool, "gap_items": [{"category", "target", "slot",
// "description"}]}. It is strict where the method is: "sufficient" must be
// present and a boolean, "gap_items" (optional, null meaning none) must be a
// list of objects whose four fields, when present, are strings. Other keys
// are ignored. Gap items of a sufficient verdict are dropped, as the method
// says. Finding the JSON object inside a model's free text is the caller's
// business.
func ParseVerdict(raw []byte) (Verdict, error) {
	var v struct {
		Sufficient json.RawMessage   `json:"sufficient"`
		GapItems   []json.RawMessage `json:"gap_items"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return Verdict{}, fmt.Errorf("%w: %w", ErrVerdict, err)
	}
	var out Verdict
	switch string(bytes.TrimSpace(v.Sufficient)) {
	case "true":
		out.Sufficient = true
	case "false":
	case "", "null":
		return Verdict{}, fmt.Errorf("%w: no \"sufficient\" field", ErrVerdict)
	default:
		return Verdict{}, fmt.Errorf("%w: \"sufficient\" is %s, want true or false", ErrVerdict, truncate(string(v.Sufficient), 40))
	}
	if out.Sufficient {
		return out, nil
	}
	for i, rawItem := range v.GapItems {
		var g GapItem
		if err := json.Unmarshal(rawItem, &g); err != nil || !isObject(rawItem) {
			return Verdict{}, fmt.Errorf("%w: gap item %d is not an object of strings", ErrVerdict, i)
		}
		out.GapItems = append(out.GapItems, g)
	}
	return out, nil
}

// isObject reports whether raw JSON is an object (not null, which
// json.Unmarshal accepts into a struct).
func isObject(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// Evidence is one sentence of the evidence context with its provenance: the
// document it was copied from and its 0-based index among that document's
// sentences. Text is the sentence verbatim.
type Evidence struct {
	DocID string `parquet:"doc_id" json:"doc_id"`
	Title string `parquet:"title" json:"title"`
	Index int32  `parquet:"index" json:"index"`
	Text  string `parquet:"text" json:"text"`
}

// Context is the evidence context C_t of the loop: blocks of sentences, one
// block per title and round, in the order they were added. It keeps the
// structured evidence and its rendering together, so the two never disagree.
//
// The rendering of a block is the line "[title]" followed by one line per
// sentence; blocks are separated by one empty line ("\n\n"), and there is no
// trailing newline. Line breaks inside a title or a sentence are shown as
// spaces, so every sentence is exactly one line (Evidence keeps the text
// verbatim). The empty context renders as "".
//
// The zero value is an empty context. A Context is a value: a copy is a
// snapshot that later Appends to the original (or to the copy) do not change.
type Context struct {
	evidence []Evidence
	rendered string
	blocks   int
}

// Append adds the sentences an extraction round chose (METHOD step 6): it
// groups them by title, in the order each title first appears, keeping the
// given order of sentences within a title, and appends each group as a
// block unless the block's rendering is already contained in the rendered
// context. Containment is of whole lines: the block must start at the start
// of a line and end at the end of one, so a sentence that merely begins
// another does not count. Blank sentences are ignored. Append returns the
// number of blocks it added.
func (c *Context) Append(sentences []Evidence) (added int) {
	if len(sentences) == 0 {
		return 0
	}
	var titles []string
	groups := make(map[string][]Evidence)
	for _, e := range sentences {
		if strings.TrimSpace(e.Text) == "" {
			continue
		}
		if _, ok := groups[e.Title]; !ok {
			titles = append(titles, e.Title)
		}
		groups[e.Title] = append(groups[e.Title], e)
	}
	var b strings.Builder
	for _, title := range titles {
		group := groups[title]
		b.Reset()
		writeBlock(&b, title, group)
		block := b.String()
		if containsLines(c.rendered, block) {
			continue
		}
		if c.rendered != "" {
			c.rendered += blockSeparator + block
		} else {
			c.rendered = block
		}
		// Clipping makes the next append to any copy reallocate, so copies
		// stay independent snapshots.
		c.evidence = slices.Clip(append(c.evidence, group...))
		c.blocks++
		added++
	}
	return added
}

// blockSeparator separates two blocks of a rendered context: one empty line.
const blockSeparator = "\n\n"

// Render returns the context as the judge, the reader and the teacher see
// it; see Context for the layout.
func (c Context) Render() string { return c.rendered }

// Evidence returns a copy of the context's sentences in rendering order.
func (c Context) Evidence() []Evidence { return slices.Clone(c.evidence) }

// Len returns the number of sentences in the context (a sentence added in
// two blocks counts twice, as it is shown twice).
func (c Context) Len() int { return len(c.evidence) }

// Blocks returns the number of blocks in the context.
func (c Context) Blocks() int { return c.blocks }

// writeBlock renders one block.
func writeBlock(b *strings.Builder, title string, group []Evidence) {
	b.WriteByte('[')
	writeLine(b, title)
	b.WriteByte(']')
	for _, e := range group {
		b.WriteByte('\n')
		writeLine(b, e.Text)
	}
}

// writeLine writes s trimmed, with every line break replaced by a space.
func writeLine(b *strings.Builder, s string) {
	s = strings.TrimSpace(s)
	for {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			b.WriteString(s)
			return
		}
		b.WriteString(s[:i])
		b.WriteByte(' ')
		s = s[i+1:]
	}
}

// OneLine returns s as Context renders a title or a sentence: trimmed, with
// line breaks shown as spaces.
func OneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") && s == strings.TrimSpace(s) {
		return s
	}
	var b strings.Builder
	writeLine(&b, s)
	return b.String()
}

// containsLines reports whether block occurs in text as a run of whole lines.
func containsLines(text, block string) bool {
	if len(block) > len(text) {
		return false
	}
	for i := 0; ; {
		j := strings.Index(text[i:], block)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(block)
		if (j == 0 || text[j-1] == '\n') && (end == len(text) || text[end] == '\n') {
			return true
		}
		i = j + 1
	}
}

// Prompt is a chat prompt: a system message and one user message.
type Prompt struct {
	System string
	User   string
}

// The judge prompt, written for this project from the facts of the method.
// Changing either text changes JudgeTemplateHash, which every recorded judge
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

// JudgeTemplateHash is the hex SHA-256 of the judge prompt template (its
// system text, a NUL byte, its user text). Treat it as a constant.
var JudgeTemplateHash = templateHash(judgeSystem, judgeUser)

// TemplateHash returns the hex SHA-256 of a prompt template's parts joined by
// NUL bytes: the value recorded as the template hash of a model's output.
func TemplateHash(parts ...string) string { return templateHash(parts...) }

func templateHash(parts ...string) string {
	h := sha256.New()
	for i, p := range parts {
		if i > 0 {
			h.Write([]byte{0})
		}
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// JudgePrompt renders the judge prompt for a question and a rendered
// evidence context (Context.Render). It is the one rendering of (question,
// evidence) the judge sees: the loop, the teacher and SFT export all use it.
func JudgePrompt(question, renderedContext string) Prompt {
	evidence := renderedContext
	if strings.TrimSpace(evidence) == "" {
		evidence = noEvidence
	}
	return Prompt{System: judgeSystem, User: fill(judgeUser, OneLine(question), evidence)}
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

// VerdictJSON returns the verdict as the judge writes it, the completion of
// a training example: {"sufficient": ..., "gap_items": [{"category",
// "target", "slot", "description"}]} with the members in that order, an
// empty list when there are no gap items (always when sufficient), and no
// HTML escaping. ParseVerdict reads it back to the same verdict.
func VerdictJSON(v Verdict) string {
	type gap struct {
		Category    string `json:"category"`
		Target      string `json:"target"`
		Slot        string `json:"slot"`
		Description string `json:"description"`
	}
	out := struct {
		Sufficient bool  `json:"sufficient"`
		GapItems   []gap `json:"gap_items"`
	}{Sufficient: v.Sufficient, GapItems: []gap{}}
	if !v.Sufficient {
		for _, g := range v.GapItems {
			out.GapItems = append(out.GapItems, gap(g))
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		panic("data: VerdictJSON: " + err.Error()) // strings and a bool always encode
	}
	return strings.TrimSuffix(b.String(), "\n")
}
