package lexical

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/distill-rag/distill/internal/analysis"
)

// The analysis sees text as words: runs of letters and digits, joined
// across an apostrophe or a period between two word characters ("don't",
// "U.S", "3.14") and across a comma between digits ("1,000"). Each word has
// the index term the BM25 analyzer gives it (analysis.Normalize: lower case,
// possessive removed, Lucene English stop words dropped, Snowball stem), so
// that the built-in roles match words the way retrieval does. Hyphens split
// words.

// word is one word of a text.
type word struct {
	start, end int    // byte offsets in the text
	stem       string // index term; "" for a stop word
	upper      bool   // begins with an upper-case letter
	digit      bool   // begins with a digit
	function   bool   // a function word (functionWords)
}

// lexer holds the scratch of the analysis and caches: lower-cased word to
// stem (stemming dominates analysis, and the same words recur in every
// round), text to its words (the judge and the reader see the same evidence
// sentences at every round, and documents recur across questions), and the
// last question parsed (a question's calls come one after the other). It
// is not safe for concurrent use: each entry point takes one from the pool
// for the length of a call. Cached values are never modified.
type lexer struct {
	buf   []byte
	info  map[string]wordInfo
	texts map[string][]word
	last  *question
}

type wordInfo struct {
	stem     string
	function bool
}

// Bounds of a lexer's caches; a full cache is dropped and refilled.
const (
	maxWordCache = 1 << 13
	maxTextCache = 1 << 11
)

// lexers pools lexers across calls and entry points: a cache of analysis
// scratch, not configuration.
var lexers = sync.Pool{New: func() any {
	return &lexer{info: make(map[string]wordInfo, 1024), texts: make(map[string][]word, 1024)}
}}

func getLexer() *lexer   { return lexers.Get().(*lexer) }
func putLexer(lx *lexer) { lexers.Put(lx) }

// textWords returns the words of text from the cache, analysing it on a
// miss. The result is shared: callers must not modify it.
func (lx *lexer) textWords(text string) []word {
	if ws, ok := lx.texts[text]; ok {
		return ws
	}
	if len(lx.texts) >= maxTextCache {
		clear(lx.texts)
	}
	ws := lx.words(text, nil)
	ws = ws[:len(ws):len(ws)]
	lx.texts[text] = ws
	return ws
}

// words appends the words of text to dst.
func (lx *lexer) words(text string, dst []word) []word {
	i := 0
	for i < len(text) {
		r, size := decode(text, i)
		if !isWordRune(r) {
			i += size
			continue
		}
		w := word{start: i, upper: unicode.IsUpper(r), digit: isDigit(r)}
		prevDigit := w.digit
		i += size
		for i < len(text) {
			r, size = decode(text, i)
			if isWordRune(r) {
				prevDigit = isDigit(r)
				i += size
				continue
			}
			if (r == '\'' || r == '’' || r == '.' || (r == ',' && prevDigit)) && i+size < len(text) {
				next, nsize := decode(text, i+size)
				if isWordRune(next) && (r != ',' || isDigit(next)) {
					prevDigit = isDigit(next)
					i += size + nsize
					continue
				}
			}
			break
		}
		w.end = i
		info := lx.analyse(text[w.start:w.end])
		w.stem, w.function = info.stem, info.function
		dst = append(dst, w)
	}
	return dst
}

// analyse returns the stem of a word and whether it is a function word.
func (lx *lexer) analyse(s string) wordInfo {
	b := lx.buf[:0]
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			b = append(b, c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		b = utf8.AppendRune(b, unicode.ToLower(r))
		i += size
	}
	switch {
	case len(b) > 2 && b[len(b)-1] == 's' && b[len(b)-2] == '\'':
		b = b[:len(b)-2]
	case len(b) > 4 && b[len(b)-1] == 's' && string(b[len(b)-4:len(b)-1]) == "’":
		b = b[:len(b)-4]
	}
	lx.buf = b
	if info, ok := lx.info[string(b)]; ok {
		return info
	}
	if len(lx.info) >= maxWordCache {
		clear(lx.info)
	}
	_, function := functionWords[string(b)]
	info := wordInfo{stem: analysis.Normalize(b), function: function}
	lx.info[string(b)] = info
	return info
}

func decode(s string, i int) (rune, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)
}

func isDigit(r rune) bool {
	if r < utf8.RuneSelf {
		return '0' <= r && r <= '9'
	}
	return unicode.IsDigit(r)
}

// lower returns the lower-case form of a word of text.
func lower(text string, w word) string { return strings.ToLower(text[w.start:w.end]) }

func set(words ...string) map[string]struct{} {
	m := make(map[string]struct{}, len(words))
	for _, w := range words {
		m[w] = struct{}{}
	}
	return m
}

// functionWords are words that carry no content of their own: question
// words, auxiliaries, pronouns, determiners, prepositions and conjunctions.
var functionWords = set(
	"a", "an", "the", "and", "or", "but", "nor", "if", "then", "than", "so", "as", "of", "in", "on", "at",
	"by", "for", "to", "from", "with", "without", "into", "onto", "upon", "about", "after", "before",
	"over", "under", "between", "through", "during", "within", "against", "among", "along", "across",
	"around", "until", "since", "while", "because", "though", "although", "via", "per",
	"which", "what", "who", "whom", "whose", "when", "where", "why", "how", "whether",
	"is", "are", "was", "were", "be", "been", "being", "am", "do", "does", "did", "done", "has", "have",
	"had", "having", "can", "could", "would", "should", "will", "shall", "may", "might", "must",
	"i", "me", "my", "we", "us", "our", "you", "your", "he", "him", "his", "she", "her", "hers", "it",
	"its", "they", "them", "their", "this", "that", "these", "those", "there", "here", "such", "some",
	"any", "each", "every", "either", "neither", "other", "another", "own", "only", "just", "not", "no",
	"yes", "too", "very", "also", "both", "all", "one",
)

// frameWords frame a question without being facts the evidence states:
// comparatives and superlatives, and words such as "same" or "name". The
// lexical judge does not require them to be covered.
var frameWords = set(
	"first", "last", "earlier", "earliest", "later", "latest", "older", "oldest", "younger", "youngest",
	"newer", "newest", "recent", "sooner", "larger", "largest", "smaller", "smallest", "bigger", "biggest",
	"longer", "longest", "shorter", "shortest", "higher", "highest", "lower", "lowest", "taller",
	"tallest", "greater", "greatest", "fewer", "less", "least", "more", "most", "many", "much", "same",
	"different", "name", "named", "known", "called", "number", "located", "based", "common", "share",
	"currently", "originally", "famous", "also", "still",
)

var months = map[string]int{
	"january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7,
	"august": 8, "september": 9, "october": 10, "november": 11, "december": 12,
}

// isMonth reports whether a word of text is a capitalised month name.
func isMonth(text string, w word) bool {
	if !w.upper || w.end-w.start < 3 || w.end-w.start > 9 {
		return false
	}
	_, ok := months[lower(text, w)]
	return ok
}

// span is a run of words of a text, end exclusive.
type span struct {
	from, to int // word indexes
}

// capitalised returns the runs of capitalised words of a sentence: names
// and titles. A run may hold a number after a capitalised word ("Apollo
// 11") and up to three lower-case connectors between two capitalised words
// ("University of Zandeport", "Signals of the Silent Kingdom", "Return to
// Doford"); it breaks at any punctuation. A function word that opens the sentence starts a run
// only when it is an article before a capitalised word ("The Electric
// Frontier is ...").
func capitalised(text string, words []word) []span {
	var out []span
	for i := 0; i < len(words); i++ {
		w := words[i]
		if !w.upper {
			continue
		}
		if i == 0 && w.function && !(isArticle(text, w) && len(words) > 1 && words[1].upper && spaced(text, w, words[1])) {
			continue
		}
		j := i
		for j+1 < len(words) {
			next := words[j+1]
			if !spaced(text, words[j], next) {
				break
			}
			if next.upper || (next.digit && j == i) {
				j++
				continue
			}
			// Up to three connectors may join two capitalised words.
			k := j + 1
			for k < len(words) && k-j <= 3 && isConnector(text, words[k]) && spaced(text, words[k-1], words[k]) {
				k++
			}
			if k > j+1 && k < len(words) && k-j <= 4 && words[k].upper && spaced(text, words[k-1], words[k]) {
				j = k
				continue
			}
			break
		}
		out = append(out, span{from: i, to: j + 1})
		i = j
	}
	return out
}

// spaced reports whether only spaces separate two words.
func spaced(text string, a, b word) bool {
	for i := a.end; i < b.start; i++ {
		if text[i] != ' ' {
			return false
		}
	}
	return a.end < b.start
}

func isArticle(text string, w word) bool {
	switch lower(text, w) {
	case "the", "a", "an":
		return true
	}
	return false
}

// connectors may join capitalised words into one name.
var connectors = set("of", "the", "for", "from", "to", "de", "la", "le", "du", "del", "da", "von", "van", "der", "a", "an", "on", "at", "y")

func isConnector(text string, w word) bool {
	if w.upper {
		return false
	}
	_, ok := connectors[lower(text, w)]
	return ok
}

// spanText returns the text a span covers.
func spanText(text string, words []word, s span) string {
	return text[words[s.from].start:words[s.to-1].end]
}

// related reports whether two stems match: equal, or one a prefix of the
// other at least five bytes long ("direct" and "director", "found" and
// "founder"), which catches derived forms the stemmer keeps apart.
func related(a, b string) bool {
	if a == b {
		return true
	}
	if len(a) > len(b) {
		a, b = b, a
	}
	return len(a) >= 5 && strings.HasPrefix(b, a)
}

// termSet is a set of stems.
type termSet map[string]struct{}

func (s termSet) addWords(words []word) {
	for _, w := range words {
		if w.stem != "" {
			s[w.stem] = struct{}{}
		}
	}
}

// has reports whether the set holds a stem related to t.
func (s termSet) has(t string) bool {
	if _, ok := s[t]; ok {
		return true
	}
	if len(t) < 5 {
		return false // too short to be related to anything but itself
	}
	for u := range s {
		if related(t, u) {
			return true
		}
	}
	return false
}
