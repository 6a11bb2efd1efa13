package data

import (
	"crypto/sha256"
	"encoding/hex"
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

// TemplateHash returns the hex SHA-256 of a prompt template's parts joined by
// NUL bytes: the value recorded as the template hash of a model's output.
func TemplateHash(parts ...string) string {
	h := sha256.New()
	for i, p := range parts {
		if i > 0 {
			h.Write([]byte{0})
		}
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))
}
