package analysis

import (
	"bytes"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
)

// maxTokenBytes caps a token's length; longer runs are cut, as Lucene's
// StandardTokenizer does at 255 characters.
const maxTokenBytes = 255

// stopWords is Lucene's English stop word set (EnglishAnalyzer's default).
var stopWords = map[string]struct{}{
	"a": {}, "an": {}, "and": {}, "are": {}, "as": {}, "at": {}, "be": {}, "but": {}, "by": {},
	"for": {}, "if": {}, "in": {}, "into": {}, "is": {}, "it": {}, "no": {}, "not": {}, "of": {},
	"on": {}, "or": {}, "such": {}, "that": {}, "the": {}, "their": {}, "then": {}, "there": {},
	"these": {}, "they": {}, "this": {}, "to": {}, "was": {}, "will": {}, "with": {},
}

// Analyzer turns text into index terms the way Lucene's EnglishAnalyzer
// does (checked against OpenSearch's, see docs/commands.md): StandardTokenizer's
// Unicode word tokens (letters and digits, keeping "don't", "U.S", "a:b",
// "3.14", "1,000" and "5'9" whole, one token per CJK ideograph, one per
// emoji), the possessive "'s" removed, lower case, English stop words
// dropped, then stemmed. Lucene stems with Porter's original algorithm;
// distill uses Snowball's English (Porter2) stemmer, its refinement, unless
// told Porter, so by default a few rare word forms stem differently.
//
// The zero value is ready to use. An Analyzer is not safe for concurrent
// use: it reuses a buffer between calls.
type Analyzer struct {
	// Stemmer is the stemmer of Terms ("": Porter2).
	Stemmer Stemmer
	buf     []byte
}

// class is what a character is to the word-break rules of Unicode
// (UAX #29), the subset StandardTokenizer acts on.
type class uint8

const (
	other       class = iota
	letter            // ALetter: joins letters, digits and '_'
	digit             // Numeric
	connector         // ExtendNumLet ('_'): joins words, is no word alone
	extend            // Extend, Format, ZWJ: kept inside a token, never start one
	ideograph         // Han and Hiragana: one token each
	pictograph        // Extended_Pictographic: one token each (emoji)
	midLetter         // ':' '·': between two letters
	midNum            // ',' ';': between two digits
	midNumLet         // '.' '’' '‘': between two letters or two digits
	singleQuote       // '\'': between two letters or two digits
)

var asciiClass = func() (t [utf8.RuneSelf]class) {
	for c := range utf8.RuneSelf {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
			t[c] = letter
		case '0' <= c && c <= '9':
			t[c] = digit
		}
	}
	t['_'] = connector
	t[':'] = midLetter
	t[','], t[';'] = midNum, midNum
	t['.'] = midNumLet
	t['\''] = singleQuote
	return t
}()

func classOf(r rune) class {
	if r < utf8.RuneSelf {
		return asciiClass[r]
	}
	switch {
	case unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r):
		return ideograph
	case unicode.IsLetter(r) || unicode.Is(unicode.Nl, r):
		return letter
	case unicode.Is(unicode.Nd, r):
		return digit
	case unicode.In(r, unicode.Mn, unicode.Mc, unicode.Me, unicode.Cf):
		return extend
	case unicode.Is(unicode.Pc, r):
		return connector
	case unicode.Is(pictographs, r) || isSkinTone(r):
		return pictograph
	}
	switch r {
	case '’', '‘', '\u2024', '\uFE52', '\uFF07', '\uFF0E':
		return midNumLet
	case '·', '\u0387', '\u05F4', '\u2027', '\uFE13', '\uFE55', '\uFF1A':
		return midLetter
	case '\u037E', '\u0589', '\u060C', '\u060D', '\u066C', '\u07F8', '\u2044', '\uFE10', '\uFE14', '\uFE50', '\uFE54', '\uFF0C', '\uFF1B':
		return midNum
	}
	return other
}

// joins reports whether a middle character of class mid joins a word
// that ends in a character of class before to one that starts with after.
func joins(mid, before, after class) bool {
	switch mid {
	case midLetter:
		return before == letter && after == letter
	case midNum:
		return before == digit && after == digit
	case midNumLet, singleQuote:
		return before == after && (before == letter || before == digit)
	}
	return false
}

// Each calls fn with every term of text, in order. The byte slice passed to
// fn is the token before stop-word removal and stemming, lower-cased and
// without possessive: callers look it up in a cache (Terms and the index
// builder do) or pass it to Normalize. It is only valid during the call.
func (a *Analyzer) Each(text string, fn func(tok []byte)) {
	i := 0
	for i < len(text) {
		c := text[i]
		if c < utf8.RuneSelf {
			if cl := asciiClass[c]; cl != letter && cl != digit && cl != connector {
				i++
				continue
			}
			if i = a.token(text, i); len(a.buf) > 0 {
				fn(a.buf)
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		switch classOf(r) {
		case letter, digit, connector:
			if i = a.token(text, i); len(a.buf) > 0 {
				fn(a.buf)
			}
		case ideograph:
			a.buf = utf8.AppendRune(a.buf[:0], unicode.ToLower(r))
			fn(a.buf)
			i += size
		case pictograph:
			i = a.emoji(text, i)
			fn(a.buf)
		default:
			i += size
		}
	}
}

// token reads the token that starts at text[i] into a.buf and returns the
// index just past it.
func (a *Analyzer) token(text string, i int) int {
	a.buf = a.buf[:0]
	last := other // the class of the last letter, digit or connector
	word := false // whether the token has a letter or a digit
	for i < len(text) {
		c := text[i]
		r, size := rune(c), 1
		cl := other
		if c < utf8.RuneSelf {
			cl = asciiClass[c]
		} else {
			r, size = utf8.DecodeRuneInString(text[i:])
			cl = classOf(r)
		}
		switch cl {
		case letter, digit, connector:
			if len(a.buf)+size > maxTokenBytes {
				return a.finish(i, word)
			}
			if c < utf8.RuneSelf {
				if 'A' <= c && c <= 'Z' {
					c += 'a' - 'A'
				}
				a.buf = append(a.buf, c)
			} else {
				a.buf = utf8.AppendRune(a.buf, unicode.ToLower(r))
			}
			last = cl
			word = word || cl != connector
			i += size
		case extend:
			if len(a.buf)+size > maxTokenBytes {
				return a.finish(i, word)
			}
			a.buf = utf8.AppendRune(a.buf, r)
			i += size
		case midLetter, midNum, midNumLet, singleQuote:
			if i+size >= len(text) {
				return a.finish(i, word)
			}
			next, nsize := utf8.DecodeRuneInString(text[i+size:])
			if !joins(cl, last, classOf(next)) {
				return a.finish(i, word)
			}
			if len(a.buf)+size+nsize > maxTokenBytes {
				return a.finish(i, word)
			}
			a.buf = utf8.AppendRune(a.buf, r)
			i += size
		default:
			return a.finish(i, word)
		}
	}
	return a.finish(i, word)
}

// emoji reads the emoji sequence that starts at text[i] into a.buf (a
// pictograph, its modifiers and variation selectors, and the pictographs
// joined to it by zero-width joiners) and returns the index just past it.
func (a *Analyzer) emoji(text string, i int) int {
	a.buf = a.buf[:0]
	for i < len(text) {
		r, size := utf8.DecodeRuneInString(text[i:])
		a.buf = utf8.AppendRune(a.buf, r)
		i += size
		for i < len(text) {
			r, size = utf8.DecodeRuneInString(text[i:])
			if classOf(r) != extend && !isSkinTone(r) {
				break
			}
			a.buf = utf8.AppendRune(a.buf, r)
			i += size
		}
		if r, _ := utf8.DecodeLastRune(a.buf); r != zwj || i >= len(text) {
			return i
		}
		if next, _ := utf8.DecodeRuneInString(text[i:]); classOf(next) != pictograph {
			return i
		}
	}
	return i
}

const zwj = '\u200D'

func isSkinTone(r rune) bool { return 0x1F3FB <= r && r <= 0x1F3FF }

// finish strips a trailing possessive from the token in a.buf, and drops
// a token of connectors alone ("_"), as StandardTokenizer does.
func (a *Analyzer) finish(i int, word bool) int {
	b := a.buf
	switch {
	case !word:
		a.buf = b[:0]
	case len(b) > 2 && b[len(b)-1] == 's' && b[len(b)-2] == '\'':
		a.buf = b[:len(b)-2]
	case len(b) > 4 && b[len(b)-1] == 's' && string(b[len(b)-4:len(b)-1]) == "’":
		a.buf = b[:len(b)-4]
	}
	return i
}

// Stemmer names a stemming algorithm for English.
type Stemmer string

const (
	// Porter2 is Snowball's English stemmer, distill's default ("" means
	// it too).
	Porter2 Stemmer = "porter2"
	// Porter is Porter's original algorithm, which Lucene's
	// EnglishAnalyzer (and so Pyserini, Elasticsearch and OpenSearch's
	// "english") applies.
	Porter Stemmer = "porter"
)

// ParseStemmer reads a stemmer's name; "" is Porter2.
func ParseStemmer(name string) (Stemmer, error) {
	switch s := Stemmer(name); s {
	case "", Porter2:
		return Porter2, nil
	case Porter:
		return s, nil
	}
	return "", fmt.Errorf("stemmer %q: want %s or %s", name, Porter2, Porter)
}

// Normalize maps a token from Each to its index term: "" for a stop word,
// the stem by s otherwise.
func (s Stemmer) Normalize(tok []byte) string {
	if s == Porter {
		if _, stop := stopWords[string(tok)]; stop {
			return ""
		}
		return porterStem(string(tok))
	}
	return Normalize(tok)
}

// Normalize maps a token from Each to its index term: "" for a stop word,
// the stem by Porter2 otherwise.
func Normalize(tok []byte) string {
	if _, stop := stopWords[string(tok)]; stop {
		return ""
	}
	if !bytes.ContainsAny(tok, "‘’‛") {
		return english.Stem(string(tok), true)
	}
	// The Snowball package reads curly apostrophes as "'"; Lucene's
	// stemmer leaves them be, and so does this: they go through the
	// stemmer as characters of no meaning to it.
	return fromPrivate.Replace(english.Stem(toPrivate.Replace(string(tok)), true))
}

var (
	toPrivate   = strings.NewReplacer("‘", "\uE018", "’", "\uE019", "‛", "\uE01B")
	fromPrivate = strings.NewReplacer("\uE018", "‘", "\uE019", "’", "\uE01B", "‛")
)

// Terms returns the index terms of text (with repeats, in order).
func (a *Analyzer) Terms(text string) []string {
	var out []string
	a.Each(text, func(tok []byte) {
		if t := a.Stemmer.Normalize(tok); t != "" {
			out = append(out, t)
		}
	})
	return out
}

// pictographs are the characters of Unicode's Extended_Pictographic
// property (emoji-data.txt), which StandardTokenizer makes tokens of.
var pictographs = &unicode.RangeTable{
	R16: []unicode.Range16{
		{0x00A9, 0x00A9, 1}, {0x00AE, 0x00AE, 1}, {0x203C, 0x203C, 1}, {0x2049, 0x2049, 1},
		{0x2122, 0x2122, 1}, {0x2139, 0x2139, 1}, {0x2194, 0x2199, 1}, {0x21A9, 0x21AA, 1},
		{0x231A, 0x231B, 1}, {0x2328, 0x2328, 1}, {0x2388, 0x2388, 1}, {0x23CF, 0x23CF, 1},
		{0x23E9, 0x23F3, 1}, {0x23F8, 0x23FA, 1}, {0x24C2, 0x24C2, 1}, {0x25AA, 0x25AB, 1},
		{0x25B6, 0x25B6, 1}, {0x25C0, 0x25C0, 1}, {0x25FB, 0x25FE, 1}, {0x2600, 0x2605, 1},
		{0x2607, 0x2612, 1}, {0x2614, 0x2685, 1}, {0x2690, 0x2705, 1}, {0x2708, 0x2712, 1},
		{0x2714, 0x2714, 1}, {0x2716, 0x2716, 1}, {0x271D, 0x271D, 1}, {0x2721, 0x2721, 1},
		{0x2728, 0x2728, 1}, {0x2733, 0x2734, 1}, {0x2744, 0x2744, 1}, {0x2747, 0x2747, 1},
		{0x274C, 0x274C, 1}, {0x274E, 0x274E, 1}, {0x2753, 0x2755, 1}, {0x2757, 0x2757, 1},
		{0x2763, 0x2767, 1}, {0x2795, 0x2797, 1}, {0x27A1, 0x27A1, 1}, {0x27B0, 0x27B0, 1},
		{0x27BF, 0x27BF, 1}, {0x2934, 0x2935, 1}, {0x2B05, 0x2B07, 1}, {0x2B1B, 0x2B1C, 1},
		{0x2B50, 0x2B50, 1}, {0x2B55, 0x2B55, 1}, {0x3030, 0x3030, 1}, {0x303D, 0x303D, 1},
		{0x3297, 0x3297, 1}, {0x3299, 0x3299, 1},
	},
	R32: []unicode.Range32{
		{0x1F000, 0x1F0FF, 1}, {0x1F10D, 0x1F10F, 1}, {0x1F12F, 0x1F12F, 1}, {0x1F16C, 0x1F171, 1},
		{0x1F17E, 0x1F17F, 1}, {0x1F18E, 0x1F18E, 1}, {0x1F191, 0x1F19A, 1}, {0x1F1AD, 0x1F1E5, 1},
		{0x1F201, 0x1F20F, 1}, {0x1F21A, 0x1F21A, 1}, {0x1F22F, 0x1F22F, 1}, {0x1F232, 0x1F23A, 1},
		{0x1F23C, 0x1F23F, 1}, {0x1F249, 0x1F3FA, 1}, {0x1F400, 0x1F53D, 1}, {0x1F546, 0x1F64F, 1},
		{0x1F680, 0x1F6FF, 1}, {0x1F774, 0x1F77F, 1}, {0x1F7D5, 0x1F7FF, 1}, {0x1F80C, 0x1F80F, 1},
		{0x1F848, 0x1F84F, 1}, {0x1F85A, 0x1F85F, 1}, {0x1F888, 0x1F88F, 1}, {0x1F8AE, 0x1F8FF, 1},
		{0x1F90C, 0x1F93A, 1}, {0x1F93C, 0x1F945, 1}, {0x1F947, 0x1FAFF, 1}, {0x1FC00, 0x1FFFD, 1},
	},
}
