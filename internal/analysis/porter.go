package analysis

// porterStem stems a lower-case word with Porter's original algorithm
// (M.F. Porter, "An algorithm for suffix stripping", 1980), as Lucene's
// PorterStemFilter does: with the two departures of Porter's own reference
// implementation ("-bli" -> "-ble", "-logi" -> "-log" in step 2), words of
// up to two letters left as they are, and every character but a, e, i, o,
// u (and y after a consonant) a consonant. make e2e-opensearch holds it
// against OpenSearch's porter_stem filter on every passage of the shared
// corpora.
func porterStem(word string) string {
	if len(word) <= 2 {
		return word
	}
	p := porter{b: []rune(word)}
	p.k = len(p.b) - 1
	if p.k <= 1 {
		return word
	}
	p.step1ab()
	if p.k > 0 {
		p.step1c()
		p.step2()
		p.step3()
		p.step4()
		p.step5()
	}
	return string(p.b[:p.k+1])
}

// porter is the state of one word: b[0..k] is the word so far, and j marks
// the end of the stem before the suffix that ends last matched.
type porter struct {
	b    []rune
	k, j int
}

// cons reports whether b[i] is a consonant.
func (p *porter) cons(i int) bool {
	switch p.b[i] {
	case 'a', 'e', 'i', 'o', 'u':
		return false
	case 'y':
		return i == 0 || !p.cons(i-1)
	}
	return true
}

// m is the number of vowel-consonant sequences in b[0..j].
func (p *porter) m() int {
	n, i := 0, 0
	for ; i <= p.j && p.cons(i); i++ {
	}
	for i <= p.j {
		for ; i <= p.j && !p.cons(i); i++ {
		}
		if i > p.j {
			break
		}
		n++
		for ; i <= p.j && p.cons(i); i++ {
		}
	}
	return n
}

// vowelInStem reports whether b[0..j] holds a vowel.
func (p *porter) vowelInStem() bool {
	for i := 0; i <= p.j; i++ {
		if !p.cons(i) {
			return true
		}
	}
	return false
}

// doubleCons reports whether b[i-1..i] is a double consonant.
func (p *porter) doubleCons(i int) bool {
	return i >= 1 && p.b[i] == p.b[i-1] && p.cons(i)
}

// cvc reports whether b[i-2..i] is consonant-vowel-consonant and b[i] is
// not w, x or y.
func (p *porter) cvc(i int) bool {
	if i < 2 || !p.cons(i) || p.cons(i-1) || !p.cons(i-2) {
		return false
	}
	c := p.b[i]
	return c != 'w' && c != 'x' && c != 'y'
}

// ends reports whether b[0..k] ends with s, and then sets j before it.
func (p *porter) ends(s string) bool {
	n := len(s)
	if n > p.k+1 {
		return false
	}
	for i := range n {
		if p.b[p.k-n+1+i] != rune(s[i]) {
			return false
		}
	}
	p.j = p.k - n
	return true
}

// setTo replaces b[j+1..k] with s.
func (p *porter) setTo(s string) {
	p.b = append(p.b[:p.j+1], []rune(s)...)
	p.k = p.j + len(s)
}

// r replaces the suffix ends matched with s when m() > 0.
func (p *porter) r(s string) {
	if p.m() > 0 {
		p.setTo(s)
	}
}

// step1ab removes plurals and -ed or -ing.
func (p *porter) step1ab() {
	if p.b[p.k] == 's' {
		switch {
		case p.ends("sses"):
			p.k -= 2
		case p.ends("ies"):
			p.setTo("i")
		case p.b[p.k-1] != 's':
			p.k--
		}
	}
	if p.ends("eed") {
		if p.m() > 0 {
			p.k--
		}
		return
	}
	if !(p.ends("ed") || p.ends("ing")) || !p.vowelInStem() {
		return
	}
	p.k = p.j
	switch {
	case p.ends("at"):
		p.setTo("ate")
	case p.ends("bl"):
		p.setTo("ble")
	case p.ends("iz"):
		p.setTo("ize")
	case p.doubleCons(p.k):
		if c := p.b[p.k]; c != 'l' && c != 's' && c != 'z' {
			p.k--
		}
	default:
		p.j = p.k
		if p.m() == 1 && p.cvc(p.k) {
			p.setTo("e")
		}
	}
}

// step1c turns a final y into i when the stem holds a vowel.
func (p *porter) step1c() {
	if p.ends("y") && p.vowelInStem() {
		p.b[p.k] = 'i'
	}
}

// suffixRule replaces a suffix by another.
type suffixRule struct{ from, to string }

// step2Rules map double suffixes to single ones, by the word's
// next-to-last letter.
var step2Rules = map[rune][]suffixRule{
	'a': {{"ational", "ate"}, {"tional", "tion"}},
	'c': {{"enci", "ence"}, {"anci", "ance"}},
	'e': {{"izer", "ize"}},
	'l': {{"bli", "ble"}, {"alli", "al"}, {"entli", "ent"}, {"eli", "e"}, {"ousli", "ous"}},
	'o': {{"ization", "ize"}, {"ation", "ate"}, {"ator", "ate"}},
	's': {{"alism", "al"}, {"iveness", "ive"}, {"fulness", "ful"}, {"ousness", "ous"}},
	't': {{"aliti", "al"}, {"iviti", "ive"}, {"biliti", "ble"}},
	'g': {{"logi", "log"}},
}

// step3Rules deal with -ic-, -full, -ness etc., by the word's last letter.
var step3Rules = map[rune][]suffixRule{
	'e': {{"icate", "ic"}, {"ative", ""}, {"alize", "al"}},
	'i': {{"iciti", "ic"}},
	'l': {{"ical", "ic"}, {"ful", ""}},
	's': {{"ness", ""}},
}

// replaceFirst applies the first rule whose suffix the word ends with.
func (p *porter) replaceFirst(rules []suffixRule) {
	for _, rule := range rules {
		if p.ends(rule.from) {
			p.r(rule.to)
			return
		}
	}
}

func (p *porter) step2() { p.replaceFirst(step2Rules[p.b[p.k-1]]) }

func (p *porter) step3() { p.replaceFirst(step3Rules[p.b[p.k]]) }

// step4Suffixes are removed in a context <c>vcvc<v>, by the word's
// next-to-last letter.
var step4Suffixes = map[rune][]string{
	'a': {"al"}, 'c': {"ance", "ence"}, 'e': {"er"}, 'i': {"ic"}, 'l': {"able", "ible"},
	'n': {"ant", "ement", "ment", "ent"}, 's': {"ism"}, 't': {"ate", "iti"},
	'u': {"ous"}, 'v': {"ive"}, 'z': {"ize"},
}

func (p *porter) step4() {
	found := false
	if p.b[p.k-1] == 'o' {
		// -ion after s or t, then -ou (of -ous, which step 1 cut).
		found = p.ends("ion") && p.j >= 0 && (p.b[p.j] == 's' || p.b[p.j] == 't') || p.ends("ou")
	} else {
		for _, s := range step4Suffixes[p.b[p.k-1]] {
			if p.ends(s) {
				found = true
				break
			}
		}
	}
	if found && p.m() > 1 {
		p.k = p.j
	}
}

// step5 removes a final -e and turns -ll into -l when m() > 1.
func (p *porter) step5() {
	p.j = p.k
	if p.b[p.k] == 'e' {
		if a := p.m(); a > 1 || a == 1 && !p.cvc(p.k-1) {
			p.k--
		}
	}
	if p.b[p.k] == 'l' && p.doubleCons(p.k) && p.m() > 1 {
		p.k--
	}
}
