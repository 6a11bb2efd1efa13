package bm25

import (
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
// does: Unicode word tokens (letters and digits, keeping "don't", "U.S",
// "3.14" and "1,000" whole, one token per CJK ideograph), the possessive "'s"
// removed, lower case, English stop words dropped, then stemmed. Lucene stems
// with Porter's original algorithm; distill uses Snowball's English (Porter2)
// stemmer, its refinement, so a few rare word forms stem differently.
//
// The zero value is ready to use. An Analyzer is not safe for concurrent
// use: it reuses a buffer between calls.
type Analyzer struct {
	buf []byte
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
			if !isASCIIWord(c) {
				i++
				continue
			}
		} else {
			r, size := utf8.DecodeRuneInString(text[i:])
			if isIdeograph(r) {
				a.buf = utf8.AppendRune(a.buf[:0], unicode.ToLower(r))
				fn(a.buf)
				i += size
				continue
			}
			if !isWordRune(r) {
				i += size
				continue
			}
		}
		i = a.token(text, i)
		if len(a.buf) > 0 {
			fn(a.buf)
		}
	}
}

// token reads the token that starts at text[i] into a.buf and returns the
// index just past it.
func (a *Analyzer) token(text string, i int) int {
	a.buf = a.buf[:0]
	prevDigit, prevLetter := false, false
	for i < len(text) {
		c := text[i]
		var r rune
		size := 1
		if c < utf8.RuneSelf {
			r = rune(c)
		} else {
			r, size = utf8.DecodeRuneInString(text[i:])
		}
		switch {
		case c < utf8.RuneSelf && isASCIIWord(c):
			if len(a.buf) >= maxTokenBytes {
				return a.finish(i)
			}
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			a.buf = append(a.buf, c)
			prevDigit = '0' <= c && c <= '9'
			prevLetter = !prevDigit
			i++
		case c >= utf8.RuneSelf && isWordRune(r) && !isIdeograph(r):
			if len(a.buf)+size > maxTokenBytes {
				return a.finish(i)
			}
			a.buf = utf8.AppendRune(a.buf, unicode.ToLower(r))
			prevDigit = unicode.IsDigit(r)
			prevLetter = !prevDigit
			i += size
		case isMid(r, prevLetter, prevDigit) && i+size < len(text):
			// A joiner continues the token only between two word characters
			// of the right kind: "don't", "u.s", "3.14", "1,000".
			next, nsize := utf8.DecodeRuneInString(text[i+size:])
			nextDigit := isDigitRune(next)
			nextLetter := !nextDigit && isWordRune(next) && !isIdeograph(next)
			if (prevLetter && nextLetter && r != ',' && r != ';') || (prevDigit && nextDigit && r != '\'' && r != '’') {
				if len(a.buf)+size+nsize > maxTokenBytes {
					return a.finish(i)
				}
				a.buf = utf8.AppendRune(a.buf, r)
				i += size
				continue
			}
			return a.finish(i)
		default:
			return a.finish(i)
		}
	}
	return a.finish(i)
}

// finish strips a trailing possessive from the token in a.buf.
func (a *Analyzer) finish(i int) int {
	b := a.buf
	switch {
	case len(b) > 2 && b[len(b)-1] == 's' && b[len(b)-2] == '\'':
		a.buf = b[:len(b)-2]
	case len(b) > 4 && b[len(b)-1] == 's' && string(b[len(b)-4:len(b)-1]) == "’":
		a.buf = b[:len(b)-4]
	}
	return i
}

// Normalize maps a token from Each to its index term: "" for a stop word,
// the stem otherwise.
func Normalize(tok []byte) string {
	if _, stop := stopWords[string(tok)]; stop {
		return ""
	}
	return english.Stem(string(tok), true)
}

// Terms returns the index terms of text (with repeats, in order).
func (a *Analyzer) Terms(text string) []string {
	var out []string
	a.Each(text, func(tok []byte) {
		if t := Normalize(tok); t != "" {
			out = append(out, t)
		}
	})
	return out
}

func isASCIIWord(c byte) bool {
	return ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9') || c == '_'
}

func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return isASCIIWord(byte(r))
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r)
}

func isDigitRune(r rune) bool {
	if r < utf8.RuneSelf {
		return '0' <= r && r <= '9'
	}
	return unicode.IsDigit(r)
}

// isMid reports whether r may join two word characters (Unicode word break
// classes MidLetter, MidNum and MidNumLet, the subset English text uses).
func isMid(r rune, prevLetter, prevDigit bool) bool {
	switch r {
	case '\'', '’', '.':
		return prevLetter || prevDigit
	case ',', ';':
		return prevDigit
	}
	return false
}

// isIdeograph reports whether r is written without spaces between words, so
// that each character is its own token (as StandardTokenizer does for CJK).
func isIdeograph(r rune) bool {
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r)
}
