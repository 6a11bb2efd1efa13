package data

import (
	"crypto/sha256"
	"encoding/hex"
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

// Evidence is one sentence of the evidence context with its provenance: the
// document it was copied from and its 0-based index among that document's
// sentences. Text is the sentence verbatim.
type Evidence struct {
	DocID string `parquet:"doc_id" json:"doc_id"`
	Title string `parquet:"title" json:"title"`
	Index int32  `parquet:"index" json:"index"`
	Text  string `parquet:"text" json:"text"`
}

// Layout is how a Context renders its evidence.
type Layout string

const (
	// LayoutDistill groups a round's sentences by title, in the order each
	// title first comes: the line "[title]", then one sentence a line.
	// Blocks are separated by one empty line, and a block already in the
	// context is not added again.
	LayoutDistill Layout = "distill"
	// LayoutReference is the authors' code: one block per document, in the
	// order of the sentences given (the loop gives them in retrieval order,
	// each document's in sentence order): the line "[title] EVIDENCE:",
	// then one line "- sentence" a sentence. A round's blocks are joined by
	// a line "---" between empty lines, rounds by one empty line, and a
	// round is left out only when its whole text is already in the context.
	LayoutReference Layout = "reference"
)

// Layouts returns the layouts a Context renders.
func Layouts() []Layout { return []Layout{LayoutDistill, LayoutReference} }

// ParseLayout returns the layout named s ("" is LayoutDistill).
func ParseLayout(s string) (Layout, error) {
	switch l := Layout(s); l {
	case "", LayoutDistill:
		return LayoutDistill, nil
	case LayoutReference:
		return l, nil
	}
	return "", fmt.Errorf("unknown evidence layout %q (want distill or reference)", s)
}

// Round is one retrieval round as a Context records it: the query, and
// the text of the evidence the round chose, rendered in the context's
// layout whether or not the context added it (the authors' reader reads
// every round's evidence again).
type Round struct {
	Query string
	Text  string
}

// Context is the evidence context C_t of the loop: blocks of sentences, in
// the order they were added, rendered in its Layout. It keeps the
// structured evidence and its rendering together, so the two never
// disagree.
//
// In LayoutDistill a block is the line "[title]" followed by one line per
// sentence; blocks are separated by one empty line ("\n\n"), and there is
// no trailing newline. LayoutReference is described with it. Line breaks
// inside a title or a sentence are shown as spaces, so every sentence is
// exactly one line (Evidence keeps the text verbatim). The empty context
// renders as "".
//
// The zero value is an empty context in LayoutDistill; NewContext makes
// one in another. A Context is a value: a copy is a snapshot that later
// Appends to the original (or to the copy) do not change.
type Context struct {
	layout   Layout
	evidence []Evidence
	rendered string
	blocks   int
	rounds   []Round
}

// NewContext returns an empty context that renders in layout.
func NewContext(layout Layout) Context { return Context{layout: layout} }

// Layout returns the context's layout.
func (c Context) Layout() Layout {
	if c.layout == "" {
		return LayoutDistill
	}
	return c.layout
}

// StartRound records a new round and its query; the next Append records
// its evidence text in it.
func (c *Context) StartRound(query string) {
	c.rounds = append(slices.Clip(c.rounds), Round{Query: query})
}

// Rounds returns the rounds StartRound recorded, in order.
func (c Context) Rounds() []Round { return slices.Clone(c.rounds) }

// Append adds the sentences an extraction round chose (METHOD step 6) and
// returns the number of blocks it added. Blank sentences are ignored.
//
// In LayoutDistill it groups them by title, in the order each title first
// appears, keeping the given order of sentences within a title, and
// appends each group as a block unless the block's rendering is already
// contained in the rendered context. Containment is of whole lines: the
// block must start at the start of a line and end at the end of one, so a
// sentence that merely begins another does not count.
//
// In LayoutReference it groups them by document, in the order each
// document first appears, and appends the round's blocks together unless
// the round's whole text is already contained (of whole lines) in the
// rendered context.
func (c *Context) Append(sentences []Evidence) (added int) {
	groups := group(sentences, c.Layout())
	if len(groups) == 0 {
		return 0
	}
	if c.Layout() == LayoutReference {
		return c.appendRound(groups)
	}
	var round []string
	var b strings.Builder
	for _, group := range groups {
		b.Reset()
		writeBlock(&b, group[0].Title, group)
		block := b.String()
		round = append(round, block)
		if containsLines(c.rendered, block) {
			continue
		}
		c.add(block, blockSeparator, group)
		c.blocks++
		added++
	}
	c.recordRound(strings.Join(round, blockSeparator))
	return added
}

// appendRound appends a round of LayoutReference, whose groups are its
// documents' sentences.
func (c *Context) appendRound(groups [][]Evidence) int {
	var b strings.Builder
	for i, group := range groups {
		if i > 0 {
			b.WriteString(referenceBlockSeparator)
		}
		b.WriteByte('[')
		writeLine(&b, group[0].Title)
		b.WriteString("] EVIDENCE:")
		for _, e := range group {
			b.WriteString("\n- ")
			writeLine(&b, e.Text)
		}
	}
	text := b.String()
	c.recordRound(text)
	if containsLines(c.rendered, text) {
		return 0
	}
	var all []Evidence
	for _, group := range groups {
		all = append(all, group...)
	}
	c.add(text, blockSeparator, all)
	c.blocks += len(groups)
	return len(groups)
}

// add appends text to the rendering, after sep when there is text before
// it, and the sentences to the evidence.
func (c *Context) add(text, sep string, sentences []Evidence) {
	if c.rendered != "" {
		c.rendered += sep + text
	} else {
		c.rendered = text
	}
	// Clipping makes the next append to any copy reallocate, so copies
	// stay independent snapshots.
	c.evidence = slices.Clip(append(c.evidence, sentences...))
}

// recordRound sets the evidence text of the round StartRound began, when
// there is one that has none yet.
func (c *Context) recordRound(text string) {
	n := len(c.rounds)
	if n == 0 || c.rounds[n-1].Text != "" {
		return
	}
	// A new array, so that a copy's rounds stay as they were.
	c.rounds = append(slices.Clip(c.rounds[:n-1]), Round{Query: c.rounds[n-1].Query, Text: text})
}

// group splits sentences into the groups that make a layout's blocks: by
// title (LayoutDistill) or by document (LayoutReference), in order of first
// appearance, without the blank ones.
func group(sentences []Evidence, layout Layout) [][]Evidence {
	var keys []string
	groups := make(map[string][]Evidence)
	for _, e := range sentences {
		if strings.TrimSpace(e.Text) == "" {
			continue
		}
		key := e.Title
		if layout == LayoutReference {
			key = e.DocID
		}
		if _, ok := groups[key]; !ok {
			keys = append(keys, key)
		}
		groups[key] = append(groups[key], e)
	}
	out := make([][]Evidence, len(keys))
	for i, k := range keys {
		out[i] = groups[k]
	}
	return out
}

// BlocksOf returns the number of blocks sentences make in the context's
// layout.
func (c Context) BlocksOf(sentences []Evidence) int { return len(group(sentences, c.Layout())) }

// blockSeparator separates two blocks of a rendered context: one empty
// line. In LayoutReference it separates rounds.
const blockSeparator = "\n\n"

// referenceBlockSeparator separates the blocks of one round in
// LayoutReference: a line "---" between empty lines.
const referenceBlockSeparator = "\n\n---\n\n"

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
