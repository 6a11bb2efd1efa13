package synth

import (
	"math/rand/v2"
	"strconv"
	"strings"
)

// Names and words: how entities are named uniquely from small word pools,
// and how numbers and names are written in sentences.

// plural makes the plural of a title noun.
func plural(noun string) string {
	if strings.HasSuffix(noun, "s") {
		return noun + "es"
	}
	return noun + "s"
}

// unique draws names until one is free and takes it. Every caller draws from
// a space far larger than the entities it makes, so a few draws suffice;
// after many, a numbered variant is taken instead.
func (g *generator) unique(draw func() string) string {
	var name string
	for range 64 {
		if name = draw(); !g.taken[name] {
			g.taken[name] = true
			return name
		}
	}
	return g.numbered(name)
}

// uniqueTitle is unique for works, whose word pools are small on purpose
// (similar titles make retrieval harder): when they run out, sequels follow.
func (g *generator) uniqueTitle(draw func() string) string {
	var title string
	for range 8 {
		if title = draw(); !g.taken[title] {
			g.taken[title] = true
			return title
		}
	}
	return g.numbered(title)
}

// numbered takes the first free name among "name 2", "name 3", ...
func (g *generator) numbered(name string) string {
	for k := 2; ; k++ {
		if s := name + " " + strconv.Itoa(k); !g.taken[s] {
			g.taken[s] = true
			return s
		}
	}
}

// stem builds a capitalised made-up word of k syllables.
func (g *generator) stem(k int) string {
	var b strings.Builder
	for i := range k {
		b.WriteString(pick(g.rng, onsets))
		if g.rng.IntN(6) == 0 {
			b.WriteString(pick(g.rng, diphthongs))
		} else {
			b.WriteString(pick(g.rng, vowels))
		}
		if (i == k-1 && g.rng.IntN(2) == 0) || g.rng.IntN(5) == 0 {
			b.WriteString(pick(g.rng, codas))
		}
	}
	return capital(b.String())
}

// name builds a made-up name of one or two syllables with an ending that
// starts with a vowel or a consonant as it fits.
func (g *generator) name(ends []string) string {
	s := g.stem(1 + g.rng.IntN(2))
	end := pick(g.rng, ends)
	if end != "" && isVowel(end[0]) == isVowel(s[len(s)-1]) {
		if isVowel(end[0]) {
			s += pick(g.rng, codas)
		} else {
			s += pick(g.rng, vowels)
		}
	}
	return s + end
}

func isVowel(c byte) bool { return strings.IndexByte("aeiouy", c) >= 0 }

func pick[T any](rng *rand.Rand, from []T) T { return from[rng.IntN(len(from))] }

// the adds the article that names like "University of X" take in a sentence.
func the(name string) string {
	if strings.HasPrefix(name, "University of ") {
		return "the " + name
	}
	return name
}

// capital upper-cases the first letter, for a name that starts a sentence.
func capital(s string) string { return strings.ToUpper(s[:1]) + s[1:] }

func ordinal(n int) string {
	words := []string{"first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth"}
	if n <= len(words) {
		return words[n-1]
	}
	suffix := "th"
	if n%100 < 11 || n%100 > 13 {
		switch n % 10 {
		case 1:
			suffix = "st"
		case 2:
			suffix = "nd"
		case 3:
			suffix = "rd"
		}
	}
	return strconv.Itoa(n) + suffix
}

// thousands formats n with comma separators: 1,234,567.
func thousands(n int) string {
	s := strconv.Itoa(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Word pools. They are small on purpose: shared words across titles make the
// corpus harder to search.
var (
	onsets      = []string{"b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "dr", "gr", "st", "tr", "th", "sh", "w", "j"}
	vowels      = []string{"a", "e", "i", "o", "u", "a", "e", "o"}
	diphthongs  = []string{"ai", "ea", "ou", "au"}
	codas       = []string{"n", "r", "l", "s", "m", "nd", "rt", "st"}
	surnameEnds = []string{"", "", "son", "berg", "ley", "ton", "wick", "mann", "ard", "ez", "ovic", "er", "sky", "ini"}
	maleEnds    = []string{"", "", "o", "an", "us", "ard", "en", "ik"}
	femaleEnds  = []string{"a", "ina", "elle", "ia", "ette", "ine"}
	cityEnds    = []string{"ford", "haven", "burg", "mouth", "field", "port", "stad", "ville", "bridge", "holm", "dale", "ton"}
	countryEnds = []string{"ia", "ania", "ovia", "aria", "esia"}
	riverEnds   = []string{"", "a", "el", "es", "in"}
	adjectives  = []string{"Silent", "Crimson", "Hollow", "Golden", "Broken", "Distant", "Quiet", "Burning", "Frozen", "Hidden",
		"Last", "Long", "Velvet", "Iron", "Paper", "Glass", "Midnight", "Scarlet", "Wandering", "Forgotten",
		"Bitter", "Bright", "Lonely", "Savage", "Secret", "Wild", "Winter", "Summer", "Northern", "Electric"}
	nouns = []string{"Harbour", "River", "Garden", "Mirror", "Lantern", "Road", "Crown", "Letter", "Island", "Storm",
		"Bridge", "Shadow", "Tide", "Orchard", "Station", "Fortune", "Compass", "Tower", "Song", "Season",
		"Witness", "Stranger", "Promise", "Kingdom", "Voyage", "Signal", "Frontier", "Heart", "Window", "Horizon"}
	genres = []string{"drama", "comedy", "thriller", "crime", "war", "romance", "science fiction", "horror", "musical", "western"}
	// trades pairs an industry with a word for company names.
	trades = [][2]string{{"automotive", "Motors"}, {"steel", "Steel"}, {"food", "Foods"}, {"software", "Systems"},
		{"shipping", "Shipping"}, {"textile", "Textiles"}, {"chemical", "Chemicals"}, {"mining", "Mining"}}
)
