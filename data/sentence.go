package data

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Span is a sentence's place in the text it was split from: byte offsets,
// End exclusive.
type Span struct {
	Start, End int
}

// SplitSentences splits English prose into sentences. The spans come in
// order, do not overlap, are trimmed of white space, are never empty, and
// together cover every non-space character of text.
//
// A sentence ends at a run of terminal punctuation (. ! ? …), with any
// closing quotes and brackets that follow it, when white space and then a
// sentence start follow: an upper-case or caseless letter, a digit, a
// currency sign, or an opening quote or bracket. So "3.14", "v2.0" and
// "wait... and see" stay whole. A single period never ends a sentence after a
// title that precedes a name ("Dr.", "Gen.", "Prof."). After other
// abbreviations ("Inc.", "etc.", "No.", "Jan.", "St."), single-letter initials
// ("J. R. R. Tolkien") and dotted forms ("U.S.", "e.g.", "Ph.D.") it ends one
// only when the next word is a common sentence opener ("The", "He", "In",
// ...): "U.S. Army" stays whole, "Acme Inc. The firm" is two sentences. A
// blank line always ends a sentence.
//
// The splitter is a single pass over the bytes with no regular expressions,
// as it runs over whole corpora.
func SplitSentences(text string) []Span {
	var spans []Span
	start := skipWhite(text, 0)
	i := start
	for {
		i = nextSplitByte(text, i)
		if i == len(text) {
			break
		}
		switch {
		case text[i] == '\n':
			if next, ok := blankLine(text, i); ok {
				spans = appendTrimmed(spans, text, start, i)
				start = next
				i = next
				continue
			}
			i++
		default:
			n := terminalLen(text, i)
			if n == 0 {
				i++
				continue
			}
			end, next, ok := sentenceEnd(text, i)
			if ok {
				spans = appendTrimmed(spans, text, start, end)
				start = next
				i = next
				continue
			}
			i = end
		}
	}
	return appendTrimmed(spans, text, start, len(text))
}

// Sentences returns the texts of the spans SplitSentences finds.
func Sentences(text string) []string {
	spans := SplitSentences(text)
	out := make([]string, len(spans))
	for i, s := range spans {
		out[i] = text[s.Start:s.End]
	}
	return out
}

// splitBytes marks the bytes the main loop must look at: newlines, ASCII
// terminal punctuation and the lead byte of '…'.
var splitBytes = [256]bool{'\n': true, '.': true, '!': true, '?': true, 0xE2: true}

// nextSplitByte returns the offset of the first byte at or after i that
// splitBytes marks, or len(text).
func nextSplitByte(text string, i int) int {
	for ; i < len(text); i++ {
		if splitBytes[text[i]] {
			return i
		}
	}
	return len(text)
}

// appendTrimmed appends text[start:end] trimmed of trailing white space, unless
// nothing is left. start is already past any leading white space.
func appendTrimmed(spans []Span, text string, start, end int) []Span {
	for end > start {
		r, size := utf8.DecodeLastRuneInString(text[start:end])
		if !isWhite(r, size) {
			break
		}
		end -= size
	}
	if end > start {
		spans = append(spans, Span{Start: start, End: end})
	}
	return spans
}

// isWhite reports whether a decoded rune is white space; an invalid byte
// (RuneError of size 1) is not.
func isWhite(r rune, size int) bool {
	if r < utf8.RuneSelf {
		return asciiWhite[r]
	}
	return size > 1 && unicode.IsSpace(r)
}

var asciiWhite = [utf8.RuneSelf]bool{' ': true, '\t': true, '\n': true, '\v': true, '\f': true, '\r': true}

// skipWhite returns the offset of the first non-space rune at or after i.
func skipWhite(text string, i int) int {
	for i < len(text) {
		if c := text[i]; c < utf8.RuneSelf {
			if !asciiWhite[c] {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		if !isWhite(r, size) {
			return i
		}
		i += size
	}
	return i
}

// blankLine reports whether the newline at i starts a blank line (another
// newline follows after only white space) and where the text after it
// resumes.
func blankLine(text string, i int) (next int, ok bool) {
	for j := i + 1; j < len(text); j++ {
		switch text[j] {
		case '\n':
			return skipWhite(text, j), true
		case ' ', '\t', '\r', '\v', '\f':
		default:
			return 0, false
		}
	}
	return 0, false
}

// The marks the splitter looks for.
var (
	terminalMarks = newMarkSet(".!?…")
	closerMarks   = newMarkSet("\"')]}’”»")
	openerMarks   = newMarkSet("\"'([{‘“«¡¿")
)

// terminalLen returns the byte length of the terminal punctuation mark at i,
// or 0 when there is none.
func terminalLen(text string, i int) int { return terminalMarks.len(text, i) }

// closerLen returns the byte length of the closing quote or bracket at i, or 0.
func closerLen(text string, i int) int { return closerMarks.len(text, i) }

// openerLen returns the byte length of the opening quote, bracket or
// inverted mark at i, or 0.
func openerLen(text string, i int) int { return openerMarks.len(text, i) }

// markSet is a set of punctuation marks, ASCII ones in a table as the
// splitter meets them most.
type markSet struct {
	ascii [utf8.RuneSelf]bool
	wide  string // the others
}

func newMarkSet(marks string) *markSet {
	m := &markSet{}
	for _, r := range marks {
		if r < utf8.RuneSelf {
			m.ascii[r] = true
		} else {
			m.wide += string(r)
		}
	}
	return m
}

// len returns the byte length of the rune at i when it is in m, or 0.
func (m *markSet) len(text string, i int) int {
	if c := text[i]; c < utf8.RuneSelf {
		if m.ascii[c] {
			return 1
		}
		return 0
	}
	r, size := utf8.DecodeRuneInString(text[i:])
	if r == utf8.RuneError || !strings.ContainsRune(m.wide, r) {
		return 0
	}
	return size
}

// sentenceEnd decides whether the terminal punctuation at i ends a sentence.
// end is the offset just past the punctuation run and its closers; when ok,
// next is where the following sentence starts.
func sentenceEnd(text string, i int) (end, next int, ok bool) {
	end = i
	marks := 0
	for end < len(text) {
		n := terminalLen(text, end)
		if n == 0 {
			break
		}
		end += n
		marks++
	}
	for end < len(text) {
		n := closerLen(text, end)
		if n == 0 {
			break
		}
		end += n
	}
	if end == len(text) {
		return end, end, false // the final span ends here anyway
	}
	r, size := utf8.DecodeRuneInString(text[end:])
	if !isWhite(r, size) {
		return end, 0, false
	}
	next = skipWhite(text, end)
	if next == len(text) || !startsSentence(text, next) {
		return end, 0, false
	}
	if marks == 1 && text[i] == '.' {
		switch abbreviationBefore(text, i) {
		case abbrTitle:
			return end, 0, false
		case abbrOther:
			if !startsWithOpeningWord(text, next) {
				return end, 0, false
			}
		}
	}
	return end, next, true
}

// startsSentence reports whether a sentence may start at text[i], which is
// not white space.
func startsSentence(text string, i int) bool {
	c := text[i]
	switch {
	case c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '$':
		return true
	case c >= 'a' && c <= 'z':
		return false
	}
	if openerLen(text, i) > 0 {
		return true
	}
	if c < utf8.RuneSelf {
		return false
	}
	r, size := utf8.DecodeRuneInString(text[i:])
	if size == 1 {
		return false
	}
	switch {
	case unicode.IsUpper(r), unicode.IsTitle(r), unicode.IsDigit(r), unicode.Is(unicode.Sc, r):
		return true
	case unicode.IsLetter(r):
		return !unicode.IsLower(r) // caseless scripts
	}
	return false
}

type abbrKind uint8

const (
	abbrNone abbrKind = iota
	// abbrTitle precedes a name and never ends a sentence.
	abbrTitle
	// abbrOther may end a sentence; it does when a common opener follows.
	abbrOther
)

// maxAbbrLen bounds the word looked at before a period; longer words are
// never abbreviations.
const maxAbbrLen = 16

// abbreviations maps lower-case abbreviations, without their final period, to
// their kind. Dotted forms (u.s, e.g, ph.d) and single letters are
// recognised by shape and need not be listed.
var abbreviations = map[string]abbrKind{
	// Titles and ranks.
	"mr": abbrTitle, "mrs": abbrTitle, "ms": abbrTitle, "messrs": abbrTitle,
	"mme": abbrTitle, "mlle": abbrTitle, "dr": abbrTitle, "prof": abbrTitle,
	"gen": abbrTitle, "col": abbrTitle, "capt": abbrTitle, "cpt": abbrTitle,
	"lt": abbrTitle, "sgt": abbrTitle, "cpl": abbrTitle, "maj": abbrTitle,
	"adm": abbrTitle, "cmdr": abbrTitle, "brig": abbrTitle, "rev": abbrTitle,
	"hon": abbrTitle, "gov": abbrTitle, "sen": abbrTitle, "rep": abbrTitle,
	"pres": abbrTitle, "supt": abbrTitle, "insp": abbrTitle, "atty": abbrTitle,
	// Titles that may also end a sentence ("Main St.", "Martin Luther King Jr.").
	"st": abbrOther, "mt": abbrOther, "ft": abbrOther, "pt": abbrOther,
	"sr": abbrOther, "jr": abbrOther,
	// Organisations.
	"inc": abbrOther, "ltd": abbrOther, "co": abbrOther, "corp": abbrOther,
	"bros": abbrOther, "assn": abbrOther, "dept": abbrOther, "univ": abbrOther,
	"plc": abbrOther, "llc": abbrOther,
	// References, numbers and Latin.
	"no": abbrOther, "nos": abbrOther, "nr": abbrOther, "vol": abbrOther,
	"vols": abbrOther, "pp": abbrOther, "fig": abbrOther, "figs": abbrOther,
	"ch": abbrOther, "sec": abbrOther, "op": abbrOther, "art": abbrOther,
	"ed": abbrOther, "eds": abbrOther, "vs": abbrOther, "etc": abbrOther,
	"cf": abbrOther, "al": abbrOther, "approx": abbrOther, "ca": abbrOther,
	"est": abbrOther, "esp": abbrOther, "incl": abbrOther, "viz": abbrOther,
	"ibid": abbrOther, "var": abbrOther,
	// Places and streets.
	"ave": abbrOther, "blvd": abbrOther, "rd": abbrOther, "hwy": abbrOther,
	"mts": abbrOther, "sts": abbrOther, "ste": abbrOther,
	// Months.
	"jan": abbrOther, "feb": abbrOther, "mar": abbrOther, "apr": abbrOther,
	"jun": abbrOther, "jul": abbrOther, "aug": abbrOther, "sep": abbrOther,
	"sept": abbrOther, "oct": abbrOther, "nov": abbrOther, "dec": abbrOther,
}

// abbreviationBefore classifies the word that ends just before the period at
// text[dot].
func abbreviationBefore(text string, dot int) abbrKind {
	// The word is the run of letters and dots before the period, so that
	// "(J.", "non-U.S." and "<br>M." are seen as "J", "U.S" and "M".
	start := dot
	for start > 0 && dot-start < maxAbbrLen {
		c := text[start-1]
		if c < utf8.RuneSelf {
			switch {
			case c == '.', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
				start--
				continue
			case c >= '0' && c <= '9':
				return abbrNone // "1950s." or "4th."
			}
			break
		}
		r, size := utf8.DecodeLastRuneInString(text[:start])
		if !unicode.IsLetter(r) {
			if unicode.IsDigit(r) {
				return abbrNone
			}
			break
		}
		start -= size
	}
	if dot-start >= maxAbbrLen {
		return abbrNone // too long to be an abbreviation
	}
	word := text[start:dot]
	if word == "" {
		return abbrNone
	}
	if r, size := utf8.DecodeRuneInString(word); size == len(word) && unicode.IsLetter(r) {
		return abbrOther // an initial: "J. R. R. Tolkien"
	}
	var buf [maxAbbrLen]byte
	dotted := false
	for k := 0; k < len(word); k++ {
		c := word[k]
		switch {
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		case c >= 'a' && c <= 'z':
		case c == '.':
			dotted = true
		default:
			return abbrNone
		}
		buf[k] = c
	}
	if kind, ok := abbreviations[string(buf[:len(word)])]; ok {
		return kind
	}
	if dotted && shortSegments(word) {
		return abbrOther // "U.S", "e.g", "Ph.D"
	}
	return abbrNone
}

// shortSegments reports whether every dot-separated part of word has one or
// two letters, as in "U.S.A" or "Ph.D".
func shortSegments(word string) bool {
	n := 0
	for k := 0; k < len(word); k++ {
		if word[k] == '.' {
			if n == 0 {
				return false
			}
			n = 0
			continue
		}
		n++
		if n > 2 {
			return false
		}
	}
	return n > 0
}

// openingWords are capitalised words that commonly begin a sentence; after an
// abbreviation they signal that the abbreviation also ended the sentence.
var openingWords = map[string]bool{
	"The": true, "A": true, "An": true, "He": true, "She": true, "It": true,
	"They": true, "We": true, "You": true, "His": true, "Her": true, "Its": true,
	"Their": true, "Our": true, "This": true, "That": true, "These": true,
	"Those": true, "There": true, "In": true, "On": true, "At": true, "By": true,
	"For": true, "From": true, "With": true, "After": true, "Before": true,
	"During": true, "When": true, "While": true, "Since": true, "As": true,
	"But": true, "However": true, "Although": true, "Though": true,
	"Following": true, "Today": true, "Then": true, "Also": true, "Both": true,
	"Some": true, "Many": true, "Most": true, "Each": true, "All": true,
	"If": true, "Other": true, "Later": true,
}

// startsWithOpeningWord reports whether the word at text[i] is one of openingWords,
// followed by something other than a period (so the initial "A." is not the
// article "A").
func startsWithOpeningWord(text string, i int) bool {
	const longest = len("Following")
	j := i
	for j < len(text) {
		c := text[j]
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') {
			break
		}
		if j-i == longest {
			return false
		}
		j++
	}
	if j == i || (j < len(text) && text[j] == '.') {
		return false
	}
	return openingWords[text[i:j]]
}
