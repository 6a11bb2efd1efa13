package data

import (
	"strings"
	"unicode"
)

// NormalizeAnswer applies the SQuAD answer normalisation the method's
// metrics use: lower case, ASCII punctuation removed (Python's
// string.punctuation, as the official script; other characters are kept),
// the articles a, an and the dropped, white space collapsed to single
// spaces.
func NormalizeAnswer(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range strings.ToLower(s) {
		switch {
		case r < 0x80 && strings.ContainsRune(asciiPunctuation, r):
		case unicode.IsSpace(r):
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	words := strings.Fields(b.String())
	kept := words[:0]
	for _, w := range words {
		if w != "a" && w != "an" && w != "the" {
			kept = append(kept, w)
		}
	}
	return strings.Join(kept, " ")
}

const asciiPunctuation = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

// ContainsAnswer reports whether one of the answers appears in text, both
// normalised with NormalizeAnswer, on word boundaries ("1905" is not found
// in "19050"). Empty answers are never found.
func ContainsAnswer(text string, answers []string) bool {
	hay := " " + NormalizeAnswer(text) + " "
	for _, a := range answers {
		if n := NormalizeAnswer(a); n != "" && strings.Contains(hay, " "+n+" ") {
			return true
		}
	}
	return false
}

// Strength classifies a state by retrieval truth, as the method's filtering
// rules do.
type Strength int

// The classes of retrieval truth.
const (
	// Neither is a state that retrieval truth does not settle.
	Neither Strength = iota
	// StrongPositive: at least 70% of the gold titles are in the evidence
	// and a gold answer string appears in it.
	StrongPositive
	// StrongNegative: at most 10% of the gold titles are in the evidence
	// and no gold answer string appears in it.
	StrongNegative
)

func (s Strength) String() string {
	switch s {
	case StrongPositive:
		return "strong-positive"
	case StrongNegative:
		return "strong-negative"
	}
	return "neither"
}

// The thresholds of the method's reference filtering rules.
const (
	StrongPositiveTitles = 0.7
	StrongNegativeTitles = 0.1
)

// Truth is what a dataset's gold evidence says about an evidence context.
type Truth struct {
	// GoldTitles is the number of the question's gold titles and
	// TitlesFound how many of them are titles of evidence sentences.
	GoldTitles, TitlesFound int
	// MissingTitles lists the gold titles not in the evidence, in the
	// question's order.
	MissingTitles []string
	// AnswerFound reports whether a gold answer appears in the evidence
	// text (ContainsAnswer).
	AnswerFound bool
	// Complete is true when every gold title is in the evidence and the
	// answer appears: the gold evidence is all there (the method's
	// calibration counts judgments against it).
	Complete bool
	// Strength is the class the filtering rules use.
	Strength Strength
}

// Coverage is the share of gold titles found (0 without gold titles).
func (t Truth) Coverage() float64 {
	if t.GoldTitles == 0 {
		return 0
	}
	return float64(t.TitlesFound) / float64(t.GoldTitles)
}

// JudgeTruth compares an evidence context with the question's gold titles
// and answers. A question without gold titles is never a strong positive
// or strong negative, as coverage cannot be measured.
func JudgeTruth(q Question, evidence []Evidence) Truth {
	titles := make(map[string]bool, len(evidence))
	var text strings.Builder
	for _, e := range evidence {
		titles[e.Title] = true
		text.WriteString(e.Text)
		text.WriteByte('\n')
	}
	t := Truth{GoldTitles: len(q.GoldTitles), AnswerFound: ContainsAnswer(text.String(), q.Answers)}
	for _, g := range q.GoldTitles {
		if titles[g] {
			t.TitlesFound++
		} else {
			t.MissingTitles = append(t.MissingTitles, g)
		}
	}
	t.Complete = t.GoldTitles > 0 && t.TitlesFound == t.GoldTitles && t.AnswerFound
	if t.GoldTitles > 0 {
		switch c := t.Coverage(); {
		case c >= StrongPositiveTitles && t.AnswerFound:
			t.Strength = StrongPositive
		case c <= StrongNegativeTitles && !t.AnswerFound:
			t.Strength = StrongNegative
		}
	}
	return t
}
