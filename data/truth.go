package data

import (
	"bytes"
	"strings"
	"unicode"
	"unicode/utf8"
)

// NormalizeAnswer applies the SQuAD answer normalisation the method's
// metrics use, exactly as the official evaluation script does (Python 3):
// lower case (with Python's full mappings: "İ" becomes "i" and a combining
// dot, a final capital sigma "ς"), ASCII punctuation removed (Python's
// string.punctuation; other characters are kept), the articles a, an and
// the replaced by a space wherever they stand between word boundaries
// (re's \b: "“the”" loses its word, "a–b" its "a"), and white space (as
// Python's str.split sees it, \x1c to \x1f included) collapsed to single
// spaces.
func NormalizeAnswer(s string) string {
	return string(appendNormalized(make([]byte, 0, len(s)), s))
}

// appendNormalized appends NormalizeAnswer(s) to dst, in one pass over s
// and without other allocations than dst's growth: label and bench
// normalise every state's evidence, and a copy of it as runes, per word
// strings and fields were most of what they allocated.
func appendNormalized(dst []byte, s string) []byte {
	n := normalizer{out: dst}
	for i, r := range s {
		switch {
		case r < 0x80 && isASCIIPunct[r]:
		case r == 0x130: // İ: Python's full lower-case mapping
			n.lowered('i')
			n.lowered(0x307)
		case r == 0x3a3 && finalSigma(s, i):
			n.lowered(0x3c2)
		default:
			n.lowered(unicode.ToLower(r))
		}
	}
	n.endWord()
	return n.out
}

// normalizer builds NormalizeAnswer's output from the lower-cased runes,
// punctuation already dropped: it replaces the words (maximal runs of word
// runes) a, an and the by a space, and collapses white space as Python's
// ' '.join(s.split()) does.
type normalizer struct {
	out []byte
	// space is set when white space came since the last rune written.
	space bool
	// inWord is set within a word, which starts at out[word]; mark is
	// out's length before the word (and the space written before it).
	inWord     bool
	word, mark int
}

func (n *normalizer) lowered(r rune) {
	switch {
	case isWordRune(r):
		if !n.inWord {
			n.inWord, n.mark = true, len(n.out)
			n.emit(r)
			n.word = len(n.out) - utf8.RuneLen(r)
			return
		}
		n.emit(r)
	default:
		n.endWord()
		n.emit(r)
	}
}

// endWord ends the word being read, if any: an article becomes a space.
func (n *normalizer) endWord() {
	if !n.inWord {
		return
	}
	n.inWord = false
	switch string(n.out[n.word:]) {
	case "a", "an", "the":
		n.out, n.space = n.out[:n.mark], true
	}
}

// emit writes r, or notes white space.
func (n *normalizer) emit(r rune) {
	if isPythonSpace(r) {
		n.space = true
		return
	}
	if n.space && len(n.out) > 0 {
		n.out = append(n.out, ' ')
	}
	n.space = false
	n.out = utf8.AppendRune(n.out, r)
}

// isWordRune reports whether r is a word character of Python's re in
// Unicode mode (\w): a letter, a number or the underscore.
func isWordRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r)
}

// isPythonSpace reports whether str.split() splits at r.
func isPythonSpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

// finalSigma reports whether the capital sigma at s[i:] ends a word, so
// that Python lower-cases it to a final sigma: a cased letter comes before
// it and none after it (case-ignorable characters skipped both ways).
func finalSigma(s string, i int) bool {
	cased := func(r rune) bool { return unicode.IsUpper(r) || unicode.IsLower(r) || unicode.IsTitle(r) }
	ignorable := func(r rune) bool {
		return unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk) || r == '\'' || r == '.' || r == ':'
	}
	before := false
	for j := i; j > 0; {
		r, size := utf8.DecodeLastRuneInString(s[:j])
		j -= size
		if ignorable(r) {
			continue
		}
		before = cased(r)
		break
	}
	if !before {
		return false
	}
	for _, r := range s[i+len("Σ"):] {
		if ignorable(r) {
			continue
		}
		return !cased(r)
	}
	return true
}

const asciiPunctuation = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

// isASCIIPunct marks the runes of asciiPunctuation.
var isASCIIPunct = func() (t [0x80]bool) {
	for i := range len(asciiPunctuation) {
		t[asciiPunctuation[i]] = true
	}
	return t
}()

// ContainsAnswer reports whether one of the answers appears in text, both
// normalised with NormalizeAnswer, on word boundaries ("1905" is not found
// in "19050"). Empty answers are never found.
func ContainsAnswer(text string, answers []string) bool {
	hay := append(appendNormalized(append(make([]byte, 0, len(text)+2), ' '), text), ' ')
	var needle []byte
	for _, a := range answers {
		needle = append(appendNormalized(append(needle[:0], ' '), a), ' ')
		if len(needle) > 2 && bytes.Contains(hay, needle) {
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
	// and it states the answer (Truth.Evidenced).
	StrongPositive
	// StrongNegative: at most 10% of the gold titles are in the evidence
	// and it does not state the answer.
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

// ReferenceStrength classifies an evidence context by the authors' code's
// rules (docs/reference.md), not distill's: the share of the gold titles
// found as raw, case-sensitive substrings of the context (headers
// included), and whether the first gold answer is one. At least 70% and
// the answer is a strong positive, at most 10% and no answer a strong
// negative. An empty first answer is not found (their Python would find
// it anywhere).
func ReferenceStrength(goldTitles, answers []string, context string) Strength {
	found := 0
	for _, t := range goldTitles {
		if strings.Contains(context, t) {
			found++
		}
	}
	coverage := 0.0
	if len(goldTitles) > 0 {
		coverage = float64(found) / float64(len(goldTitles))
	}
	answer := len(answers) > 0 && answers[0] != "" && strings.Contains(context, answers[0])
	switch {
	case coverage >= StrongPositiveTitles && answer:
		return StrongPositive
	case coverage <= StrongNegativeTitles && !answer:
		return StrongNegative
	}
	return Neither
}

// Truth is what a dataset's gold evidence says about an evidence context:
// retrieval truth, defined here once for every stage. The built-in teacher
// labels a state sufficient exactly when it is Complete, the filter's rules
// drop labels that contradict its Strength, and the benchmark's calibration
// and premature stops count against Complete; a strong positive is exactly
// a complete state, so the three never disagree.
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
	// AnswerExpected is false when the answer string says nothing about the
	// evidence (AnswerExpected): yes/no answers, comparison questions and
	// answers the question itself names.
	AnswerExpected bool
	// GoldFacts is the number of the question's supporting sentences
	// (SupportingFacts) and FactsFound how many of them are evidence
	// sentences (same title, same sentence index); MissingFacts lists the
	// others.
	GoldFacts, FactsFound int
	MissingFacts          []SupportingFact
	// Evidenced reports whether the evidence states the answer: a gold
	// answer appears in it when one is expected; otherwise every supporting
	// sentence is in it, or, when the dataset has none, every gold title.
	Evidenced bool
	// Complete is true when retrieval truth calls the evidence sufficient:
	// at least 70% of the gold titles are in it (so all of them below four
	// titles) and it is Evidenced. It is never true without gold titles.
	Complete bool
	// Strength is the class the filtering rules use.
	Strength Strength
}

// Sufficient is the verdict retrieval truth gives: the evidence is
// Complete, or, for a question without gold titles, it holds the answer.
// The retrieval-truth teacher labels by it and the oracle judge stops by it.
func (t Truth) Sufficient() bool {
	return t.Complete || (t.GoldTitles == 0 && t.AnswerFound)
}

// Coverage is the share of gold titles found (0 without gold titles).
func (t Truth) Coverage() float64 {
	if t.GoldTitles == 0 {
		return 0
	}
	return float64(t.TitlesFound) / float64(t.GoldTitles)
}

// AnswerExpected reports whether a question's answer string can be
// expected in the evidence that answers it. It cannot for yes/no questions
// ("yes" rarely appears), for comparison questions (dataset types
// "comparison" and "bridge_comparison": the answer is one of the entities
// compared, named whichever side wins) and whenever a gold answer appears in
// the question itself.
func AnswerExpected(q Question) bool {
	switch strings.ToLower(q.Type) {
	case "comparison", "bridge_comparison":
		return false
	}
	for _, a := range q.Answers {
		switch NormalizeAnswer(a) {
		case "yes", "no":
			return false
		}
	}
	return !ContainsAnswer(q.Text, q.Answers)
}

// JudgeTruth compares an evidence context with the question's gold titles,
// supporting sentences and answers (see Truth). A question without gold
// titles is never complete, a strong positive or a strong negative, as
// coverage cannot be measured.
func JudgeTruth(q Question, evidence []Evidence) Truth {
	type sentence struct {
		title string
		index int32
	}
	titles := make(map[string]bool, len(evidence))
	sentences := make(map[sentence]bool, len(evidence))
	var text strings.Builder
	for _, e := range evidence {
		titles[e.Title] = true
		sentences[sentence{e.Title, e.Index}] = true
		text.WriteString(e.Text)
		text.WriteByte('\n')
	}
	t := Truth{GoldTitles: len(q.GoldTitles), AnswerFound: ContainsAnswer(text.String(), q.Answers),
		AnswerExpected: AnswerExpected(q), GoldFacts: len(q.SupportingFacts)}
	for _, g := range q.GoldTitles {
		if titles[g] {
			t.TitlesFound++
		} else {
			t.MissingTitles = append(t.MissingTitles, g)
		}
	}
	for _, f := range q.SupportingFacts {
		if sentences[sentence{f.Title, f.Sentence}] {
			t.FactsFound++
		} else {
			t.MissingFacts = append(t.MissingFacts, f)
		}
	}
	switch {
	case t.AnswerExpected:
		t.Evidenced = t.AnswerFound
	case t.GoldFacts > 0:
		t.Evidenced = t.FactsFound == t.GoldFacts
	default:
		t.Evidenced = t.GoldTitles > 0 && t.TitlesFound == t.GoldTitles
	}
	if t.GoldTitles > 0 {
		switch c := t.Coverage(); {
		case c >= StrongPositiveTitles && t.Evidenced:
			t.Strength = StrongPositive
			t.Complete = true
		case c <= StrongNegativeTitles && !t.Evidenced:
			t.Strength = StrongNegative
		}
	}
	return t
}
