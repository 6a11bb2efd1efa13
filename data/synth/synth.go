package synth

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"unicode"

	"github.com/distill-rag/distill/data"
)

const (
	// DefaultSeed seeds the bundled sample.
	DefaultSeed uint64 = 42
	// DefaultQuestions is the size of the bundled sample.
	DefaultQuestions = 200
	// MaxQuestions bounds Config.Questions; the world grows with it (about
	// five passages per question).
	MaxQuestions = 100_000
	// Dataset is the Dataset field of every generated question.
	Dataset = "sample"
)

// ErrQuestions is returned for a question count below 1 or above
// MaxQuestions.
var ErrQuestions = errors.New("question count out of range")

// Config says which world to generate.
type Config struct {
	// Seed fixes the world: the same seed and size give the same world.
	Seed uint64
	// Questions is how many questions to generate, 1 to MaxQuestions.
	Questions int
}

// World is a generated dataset: questions and the corpus that answers them.
type World struct {
	Questions []data.Question
	Passages  []data.Passage
}

// Sample returns the bundled sample: the world of DefaultSeed with
// DefaultQuestions questions. Each call builds a fresh copy.
func Sample() *World {
	w, err := Generate(Config{Seed: DefaultSeed, Questions: DefaultQuestions})
	if err != nil {
		// The defaults are valid and generation is deterministic, so this
		// cannot happen without a bug that TestSample catches.
		panic("synth: default sample: " + err.Error())
	}
	return w
}

// Generate builds the world that cfg describes.
func Generate(cfg Config) (*World, error) {
	if cfg.Questions < 1 || cfg.Questions > MaxQuestions {
		return nil, fmt.Errorf("synth: %d questions, want 1 to %d: %w", cfg.Questions, MaxQuestions, ErrQuestions)
	}
	g := &generator{
		rng:   rand.New(rand.NewPCG(cfg.Seed, pcgStream)),
		taken: make(map[string]bool),
	}
	g.build(cfg.Questions)
	g.describe()
	questions, err := g.ask(cfg.Questions)
	if err != nil {
		return nil, err
	}
	passages := make([]data.Passage, len(g.entries))
	for i, e := range g.entries {
		passages[i] = e.passage
	}
	g.rng.Shuffle(len(passages), func(i, j int) { passages[i], passages[j] = passages[j], passages[i] })
	return &World{Questions: questions, Passages: passages}, nil
}

// pcgStream is the PCG's second seed word; any constant will do.
const pcgStream = 0x5eed_d157_11a5_a3e1

// entry is one entity's passage and where it stands in the output.
type entry struct {
	passage data.Passage
}

func (e *entry) add(sentence string) int {
	e.passage.Sentences = append(e.passage.Sentences, sentence)
	return len(e.passage.Sentences) - 1
}

type country struct {
	index   int
	name    string
	demonym string
	capital *city
	entry
}

type city struct {
	name       string
	country    *country
	river      string
	population int
	entry
}

type date struct{ year, month, day int }

var months = [...]string{"January", "February", "March", "April", "May", "June", "July",
	"August", "September", "October", "November", "December"}

func (d date) String() string { return fmt.Sprintf("%d %s %d", d.day, months[d.month-1], d.year) }

// american is the alias form of the date: "May 3, 1950".
func (d date) american() string { return fmt.Sprintf("%s %d, %d", months[d.month-1], d.day, d.year) }

func (d date) before(o date) bool {
	if d.year != o.year {
		return d.year < o.year
	}
	if d.month != o.month {
		return d.month < o.month
	}
	return d.day < o.day
}

type job int

const (
	director job = iota
	novelist
	singer
	actor
	founder
	otherJob
	numJobs
)

var otherOccupations = []string{"physicist", "painter", "politician", "architect", "chemist", "journalist"}

type person struct {
	first, surname string
	female         bool
	country        *country
	born           date
	birthplace     *city
	home           *city
	job            job
	occupation     string
	university     *org
	works          []*work // films directed or novels written
	starred        []*work
	band           *org
	founded        *org
	entry
	// Sentence indexes of the facts that questions ask about.
	sIntro, sBirthplace, sUniversity int
}

func (p *person) name() string { return p.first + " " + p.surname }

func (p *person) pronoun() string {
	if p.female {
		return "She"
	}
	return "He"
}

type orgKind int

const (
	studio orgKind = iota
	publisher
	label
	firm
	university
	band
	numOrgKinds
)

type org struct {
	kind     orgKind
	name     string
	year     int
	city     *city
	founder  *person // companies only, may be nil
	singer   *person // bands only
	industry string
	size     int
	albums   []*work
	entry
	sFounded, sCity, sFounder int
}

type workKind int

const (
	film workKind = iota
	novel
	album
	numWorkKinds
)

type work struct {
	kind    workKind
	title   string
	year    int
	creator *person // director or author
	band    *org    // albums
	company *org    // studio, publisher or label
	setting *city
	genre   string
	stars   []*person
	entry
	sCreator, sCompany int
}

type generator struct {
	rng      *rand.Rand
	taken    map[string]bool // every entity name, so titles are unique
	surnames []string
	firsts   [2][]string // male, female

	countries []*country
	cities    []*city
	people    []*person
	byJob     [numJobs][]*person
	byCountry [][]*person // people by country index
	citiesIn  [][]*city   // cities by country index
	orgs      [numOrgKinds][]*org
	companies []*org // studios, publishers, labels and firms
	founders  int    // founders given a company so far
	works     [numWorkKinds][]*work
	entries   []*entry
}

// scaled returns per*n rounded, and at least least.
func scaled(n int, per float64, least int) int {
	return max(least, int(per*float64(n)+0.5))
}

// build creates the entities and their links, sized for n questions.
func (g *generator) build(n int) {
	nCountries := min(16, 4+n/40)
	nCities := scaled(n, 0.6, 10)
	nFilms := scaled(n, 0.8, 6)
	nNovels := scaled(n, 0.4, 4)
	nBands := scaled(n, 0.15, 3)
	nAlbums := scaled(n, 0.3, 4)
	nOrgs := [numOrgKinds]int{
		studio:     scaled(n, 0.1, 2),
		publisher:  scaled(n, 0.07, 2),
		label:      scaled(n, 0.06, 2),
		firm:       scaled(n, 0.12, 3),
		university: scaled(n, 0.2, 3),
	}
	nJobs := [numJobs]int{
		director: max(2, nFilms*7/10),
		novelist: max(2, nNovels*8/10),
		singer:   nBands,
		actor:    max(4, nFilms/2),
		founder:  max(2, (nOrgs[studio]+nOrgs[publisher]+nOrgs[label]+nOrgs[firm])*6/10),
	}
	named := 0
	for _, k := range nJobs {
		named += k
	}
	nJobs[otherJob] = max(4, scaled(n, 2.0, 24)-named)

	g.surnames = make([]string, max(8, (named+nJobs[otherJob])/3))
	for i := range g.surnames {
		g.surnames[i] = g.name(surnameEnds)
	}
	for sex, ends := range [2][]string{maleEnds, femaleEnds} {
		g.firsts[sex] = make([]string, max(8, (named+nJobs[otherJob])/4))
		for i := range g.firsts[sex] {
			g.firsts[sex][i] = g.name(ends)
		}
	}

	for i := range nCountries {
		name := g.unique(func() string { return g.name(countryEnds) })
		g.countries = append(g.countries, &country{index: i, name: name, demonym: name + "n"})
	}
	g.byCountry = make([][]*person, nCountries)
	g.citiesIn = make([][]*city, nCountries)
	for i := range nCities {
		c := &city{
			name:       g.unique(func() string { return g.name(cityEnds) }),
			country:    g.countries[i%nCountries], // every country has a city
			river:      g.name(riverEnds),
			population: 5_000 + g.rng.IntN(2_000_000),
		}
		if c.country.capital == nil {
			c.country.capital = c
		}
		g.cities = append(g.cities, c)
		g.citiesIn[c.country.index] = append(g.citiesIn[c.country.index], c)
	}

	for j := range numJobs {
		for range nJobs[j] {
			g.addPerson(j)
		}
	}

	for kind := range numOrgKinds {
		if kind == band {
			continue
		}
		for range nOrgs[kind] {
			g.addCompany(kind)
		}
	}
	for _, kind := range []orgKind{studio, publisher, label, firm} {
		g.companies = append(g.companies, g.orgs[kind]...)
	}
	for i := range nBands {
		g.addBand(g.byJob[singer][i])
	}
	for i := range nFilms {
		g.addFilm(i)
	}
	for i := range nNovels {
		g.addNovel(i)
	}
	for range nAlbums {
		g.addAlbum()
	}
	for _, p := range g.people {
		if g.rng.IntN(100) < 55 {
			p.university = pick(g.rng, g.orgs[university])
		}
	}
}

func (g *generator) addPerson(j job) {
	p := &person{
		female:  g.rng.IntN(2) == 1,
		country: pick(g.rng, g.countries),
		born:    date{year: 1900 + g.rng.IntN(96), month: 1 + g.rng.IntN(12), day: 1 + g.rng.IntN(28)},
		job:     j,
		home:    pick(g.rng, g.cities),
	}
	sex := 0
	if p.female {
		sex = 1
	}
	for attempt := 0; ; attempt++ {
		p.first, p.surname = pick(g.rng, g.firsts[sex]), pick(g.rng, g.surnames)
		if attempt > 64 {
			p.first = g.name([2][]string{maleEnds, femaleEnds}[sex])
		}
		if !g.taken[p.name()] {
			g.taken[p.name()] = true
			break
		}
	}
	p.birthplace = pick(g.rng, g.cities)
	if g.rng.IntN(100) < 85 {
		p.birthplace = pick(g.rng, g.citiesIn[p.country.index]) // most are born at home
	}
	switch j {
	case director:
		p.occupation = "film director"
	case novelist:
		p.occupation = "novelist"
	case singer:
		p.occupation = "singer"
	case actor:
		p.occupation = "actor"
		if p.female {
			p.occupation = "actress"
		}
	case founder:
		p.occupation = "businessman"
		if p.female {
			p.occupation = "businesswoman"
		}
	default:
		p.occupation = pick(g.rng, otherOccupations)
	}
	g.people = append(g.people, p)
	g.byJob[j] = append(g.byJob[j], p)
	g.byCountry[p.country.index] = append(g.byCountry[p.country.index], p)
}

func (g *generator) addCompany(kind orgKind) {
	o := &org{kind: kind, city: pick(g.rng, g.cities), size: 50 + g.rng.IntN(20_000)}
	switch kind {
	case studio:
		o.industry = "film production"
		o.name = g.unique(func() string {
			switch g.rng.IntN(3) {
			case 0:
				return pick(g.rng, g.surnames) + " Pictures"
			case 1:
				return pick(g.rng, g.cities).name + " Films"
			default:
				return pick(g.rng, adjectives) + " " + pick(g.rng, nouns) + " Studios"
			}
		})
	case publisher:
		o.industry = "publishing"
		o.name = g.unique(func() string {
			switch g.rng.IntN(3) {
			case 0:
				return pick(g.rng, g.surnames) + " & " + pick(g.rng, g.surnames)
			case 1:
				return pick(g.rng, g.cities).name + " Press"
			default:
				return pick(g.rng, g.surnames) + " Books"
			}
		})
	case label:
		o.industry = "record"
		o.name = g.unique(func() string {
			if g.rng.IntN(2) == 0 {
				return pick(g.rng, nouns) + " Records"
			}
			return pick(g.rng, g.surnames) + " Music"
		})
	case firm:
		trade := pick(g.rng, trades)
		o.industry = trade[0]
		o.name = g.unique(func() string {
			if g.rng.IntN(2) == 0 {
				return pick(g.rng, g.surnames) + " " + trade[1]
			}
			return pick(g.rng, g.cities).name + " " + trade[1]
		})
	case university:
		o.size = 1_000 + g.rng.IntN(60_000)
		o.name = g.unique(func() string {
			switch g.rng.IntN(4) {
			case 0, 1:
				return "University of " + o.city.name
			case 2:
				return o.city.name + " Institute of Technology"
			default:
				return pick(g.rng, g.surnames) + " University"
			}
		})
		o.year = 1650 + g.rng.IntN(340)
	}
	if kind != university {
		o.year = 1860 + g.rng.IntN(150)
		// The first companies go to the founders, one each, so that every
		// founder founded something; the rest have no known founder.
		if g.founders < len(g.byJob[founder]) {
			f := g.byJob[founder][g.founders]
			g.founders++
			o.founder, f.founded = f, o
			o.year = g.yearAfter(f.born.year+22, 30)
		}
	}
	g.orgs[kind] = append(g.orgs[kind], o)
}

func (g *generator) addBand(lead *person) {
	o := &org{
		kind:   band,
		city:   pick(g.rng, g.cities),
		year:   g.yearAfter(lead.born.year+18, 15),
		singer: lead,
		name: g.unique(func() string {
			if g.rng.IntN(3) == 0 {
				return pick(g.rng, nouns) + " " + pick(g.rng, nouns)
			}
			return "The " + pick(g.rng, adjectives) + " " + plural(pick(g.rng, nouns))
		}),
	}
	lead.band = o
	g.orgs[band] = append(g.orgs[band], o)
}

// creator deals the first works to each creator in turn, then picks at
// random, so that every director and novelist has a work.
func (g *generator) creator(j job, i int) *person {
	if i < len(g.byJob[j]) {
		return g.byJob[j][i]
	}
	return pick(g.rng, g.byJob[j])
}

func (g *generator) addFilm(i int) {
	d := g.creator(director, i)
	w := &work{
		kind:    film,
		creator: d,
		year:    g.yearAfter(d.born.year+25, 40),
		setting: pick(g.rng, g.cities),
		genre:   pick(g.rng, genres),
	}
	w.company = g.companyBefore(studio, w.year)
	w.title = g.uniqueTitle(func() string {
		switch g.rng.IntN(6) {
		case 0, 1:
			return "The " + pick(g.rng, adjectives) + " " + pick(g.rng, nouns)
		case 2:
			return pick(g.rng, adjectives) + " " + pick(g.rng, nouns)
		case 3:
			return "The " + pick(g.rng, nouns) + " of " + pick(g.rng, g.cities).name
		case 4:
			return "Return to " + pick(g.rng, g.cities).name
		default:
			return plural(pick(g.rng, nouns)) + " of the " + pick(g.rng, adjectives) + " " + pick(g.rng, nouns)
		}
	})
	for attempt := 0; len(w.stars) < 2; attempt++ {
		a := pick(g.rng, g.byJob[actor])
		if a.born.year+8 > w.year && attempt < 32 {
			continue // the actor was not born yet, or a child
		}
		if len(w.stars) == 0 || w.stars[0] != a {
			w.stars = append(w.stars, a)
			a.starred = append(a.starred, w)
		}
	}
	d.works = append(d.works, w)
	g.works[film] = append(g.works[film], w)
}

func (g *generator) addNovel(i int) {
	a := g.creator(novelist, i)
	w := &work{
		kind:    novel,
		creator: a,
		year:    g.yearAfter(a.born.year+22, 45),
		setting: pick(g.rng, g.cities),
	}
	w.company = g.companyBefore(publisher, w.year)
	w.title = g.uniqueTitle(func() string {
		switch g.rng.IntN(4) {
		case 0:
			return "The " + pick(g.rng, nouns) + "'s " + pick(g.rng, nouns)
		case 1:
			return "A " + pick(g.rng, nouns) + " for " + pick(g.rng, g.firsts[g.rng.IntN(2)])
		case 2:
			return "The " + pick(g.rng, adjectives) + " " + pick(g.rng, nouns)
		default:
			return pick(g.rng, adjectives) + " " + plural(pick(g.rng, nouns))
		}
	})
	a.works = append(a.works, w)
	g.works[novel] = append(g.works[novel], w)
}

func (g *generator) addAlbum() {
	b := pick(g.rng, g.orgs[band])
	w := &work{
		kind:    album,
		band:    b,
		year:    g.yearAfter(b.year+1, 20),
		setting: pick(g.rng, g.cities),
	}
	w.company = g.companyBefore(label, w.year)
	w.title = g.uniqueTitle(func() string {
		switch g.rng.IntN(3) {
		case 0:
			return pick(g.rng, adjectives) + " " + plural(pick(g.rng, nouns))
		case 1:
			return pick(g.rng, nouns) + " and " + pick(g.rng, nouns)
		default:
			return "Songs from " + pick(g.rng, g.cities).name
		}
	})
	b.albums = append(b.albums, w)
	g.works[album] = append(g.works[album], w)
}

// lastYear is the latest year anything in the world happens.
const lastYear = 2024

// yearAfter draws a year from first to first+span-1, no later than lastYear.
func (g *generator) yearAfter(first, span int) int {
	if first >= lastYear {
		return lastYear
	}
	return first + g.rng.IntN(min(span, lastYear-first+1))
}

// companyBefore draws a company of kind founded by year, if a few draws find
// one.
func (g *generator) companyBefore(kind orgKind, year int) *org {
	var o *org
	for range 16 {
		if o = pick(g.rng, g.orgs[kind]); o.year <= year {
			break
		}
	}
	return o
}

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

// describe writes every entity's passage.
func (g *generator) describe() {
	for _, c := range g.countries {
		e := g.open(&c.entry, c.name)
		e.add(fmt.Sprintf("%s is a country whose citizens are known as %ss.", c.name, c.demonym))
		e.add(fmt.Sprintf("Its capital is %s.", c.capital.name))
		e.add(fmt.Sprintf("The %s River flows through it.", c.capital.river))
	}
	for _, c := range g.cities {
		e := g.open(&c.entry, c.name)
		e.add(fmt.Sprintf("%s is a city in %s.", c.name, c.country.name))
		e.add(fmt.Sprintf("It lies on the %s River.", c.river))
		e.add(fmt.Sprintf("It has a population of about %s.", thousands(c.population)))
		if c.country.capital == c {
			e.add(fmt.Sprintf("It is the capital of %s.", c.country.name))
		}
	}
	for _, p := range g.people {
		g.describePerson(p)
	}
	for kind := range numOrgKinds {
		for _, o := range g.orgs[kind] {
			g.describeOrg(o)
		}
	}
	for kind := range numWorkKinds {
		for _, w := range g.works[kind] {
			g.describeWork(w)
		}
	}
	for _, e := range g.entries {
		e.passage.Text = strings.Join(e.passage.Sentences, " ")
		e.passage.ID = data.DocID(e.passage.Title, e.passage.Text)
	}
}

func (g *generator) open(e *entry, title string) *entry {
	e.passage.Title = title
	g.entries = append(g.entries, e)
	return e
}

const maxSentences = 6

func (g *generator) describePerson(p *person) {
	e := g.open(&p.entry, p.name())
	he := p.pronoun()
	p.sIntro = e.add(fmt.Sprintf("%s (born %s) is a %s %s.", p.name(), p.born, p.country.demonym, p.occupation))
	if p.home == p.birthplace {
		p.sBirthplace = e.add(fmt.Sprintf("%s was born and raised in %s, %s.", he, p.birthplace.name, p.birthplace.country.name))
	} else {
		p.sBirthplace = e.add(fmt.Sprintf("%s was born in %s, %s, and grew up in %s.", he, p.birthplace.name, p.birthplace.country.name, p.home.name))
	}
	p.sUniversity = -1
	if p.university != nil {
		p.sUniversity = e.add(fmt.Sprintf("%s studied at %s.", he, the(p.university.name)))
	}
	var facts []string
	for i, w := range p.works {
		switch {
		case w.kind == film:
			facts = append(facts, fmt.Sprintf("%s directed the %s film %s (%d).", he, w.genre, w.title, w.year))
		case i == 0:
			facts = append(facts, fmt.Sprintf("%s is best known for the novel %s.", he, w.title))
		default:
			facts = append(facts, fmt.Sprintf("%s also wrote %s (%d).", he, w.title, w.year))
		}
	}
	for _, w := range p.starred {
		facts = append(facts, fmt.Sprintf("%s appeared in %s (%d).", he, w.title, w.year))
	}
	if p.band != nil {
		facts = append(facts, fmt.Sprintf("%s is the lead singer of %s.", he, p.band.name))
	}
	if p.founded != nil {
		facts = append(facts, fmt.Sprintf("%s founded %s in %d.", he, p.founded.name, p.founded.year))
	}
	if len(facts) == 0 {
		facts = append(facts, fmt.Sprintf("%s worked in %s for many years.", he, p.home.name))
	}
	for _, f := range facts {
		if len(e.passage.Sentences) == maxSentences {
			break
		}
		e.add(f)
	}
	if len(e.passage.Sentences) < 3 {
		e.add(fmt.Sprintf("%s lives in %s.", p.surname, p.home.name))
	}
}

func (g *generator) describeOrg(o *org) {
	e := g.open(&o.entry, o.name)
	o.sFounder = -1
	switch o.kind {
	case university:
		o.sFounded = e.add(fmt.Sprintf("%s is a public university in %s, %s, founded in %d.", capital(the(o.name)), o.city.name, o.city.country.name, o.year))
		o.sCity = o.sFounded
		e.add(fmt.Sprintf("It has about %s students.", thousands(o.size)))
		e.add(fmt.Sprintf("Its main campus lies beside the %s River.", o.city.river))
	case band:
		o.sFounded = e.add(fmt.Sprintf("%s is a rock band formed in %s in %d.", o.name, o.city.name, o.year))
		o.sCity = o.sFounded
		e.add(fmt.Sprintf("The band's lead singer is %s.", o.singer.name()))
		if len(o.albums) > 0 {
			titles := make([]string, 0, 2)
			for _, a := range o.albums[:min(2, len(o.albums))] {
				titles = append(titles, a.title)
			}
			e.add(fmt.Sprintf("Its albums include %s.", strings.Join(titles, " and ")))
		} else {
			e.add(fmt.Sprintf("The band has toured widely in %s.", o.city.country.name))
		}
	default:
		o.sFounded = e.add(fmt.Sprintf("%s is a %s %s company founded in %d.", o.name, o.city.country.demonym, o.industry, o.year))
		o.sCity = e.add(fmt.Sprintf("It is headquartered in %s.", o.city.name))
		if o.founder != nil {
			o.sFounder = e.add(fmt.Sprintf("It was founded by %s.", o.founder.name()))
		}
		e.add(fmt.Sprintf("It employs about %s people.", thousands(o.size)))
	}
}

func (g *generator) describeWork(w *work) {
	e := g.open(&w.entry, w.title)
	switch w.kind {
	case film:
		w.sCreator = e.add(fmt.Sprintf("%s is a %d %s film directed by %s.", w.title, w.year, w.genre, w.creator.name()))
		w.sCompany = e.add(fmt.Sprintf("It was produced by %s and stars %s and %s.", w.company.name, w.stars[0].name(), w.stars[1].name()))
		e.add(fmt.Sprintf("The film is set in %s.", w.setting.name))
		if w.year%2 == 0 {
			e.add(fmt.Sprintf("It premiered at the %s Film Festival.", w.company.city.name))
		}
	case novel:
		w.sCreator = e.add(fmt.Sprintf("%s is a novel by %s, first published in %d.", w.title, w.creator.name(), w.year))
		w.sCompany = e.add(fmt.Sprintf("It was published by %s.", w.company.name))
		e.add(fmt.Sprintf("The story is set in %s.", w.setting.name))
	case album:
		nth := 0
		for nth < len(w.band.albums) && w.band.albums[nth] != w {
			nth++
		}
		w.sCreator = e.add(fmt.Sprintf("%s is the %s studio album by the band %s.", w.title, ordinal(nth+1), w.band.name))
		w.sCompany = e.add(fmt.Sprintf("It was released in %d on %s.", w.year, w.company.name))
		e.add(fmt.Sprintf("It was recorded in %s.", w.setting.name))
	}
}

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

// fact is one gold sentence: a passage and a sentence index in it.
type fact struct {
	e        *entry
	sentence int
}

// draft is a question before it gets its id.
type draft struct {
	text    string
	answers []string
	typ     string
	facts   [2]fact
}

// maxAttempts bounds the draws for one question; a draw fails when its
// question repeats an earlier one or gives its answer away.
const maxAttempts = 1000

// ask writes n questions: three bridge questions for every two comparison
// questions.
func (g *generator) ask(n int) ([]data.Question, error) {
	seen := make(map[string]bool, n)
	questions := make([]data.Question, 0, n)
	for i := range n {
		bridge := i%5 == 0 || i%5 == 2 || i%5 == 4
		var d draft
		for attempt := 0; ; attempt++ {
			if attempt == maxAttempts {
				return nil, fmt.Errorf("synth: question %d: no new question after %d draws", i+1, maxAttempts)
			}
			ok := false
			if bridge {
				d, ok = g.bridge()
			} else {
				d, ok = g.comparison()
			}
			if ok && !seen[d.text] {
				seen[d.text] = true
				break
			}
		}
		q := data.Question{
			ID:      fmt.Sprintf("%s-%06d", Dataset, i+1),
			Text:    d.text,
			Answers: d.answers,
			Type:    d.typ,
			Dataset: Dataset,
		}
		for _, f := range d.facts {
			q.GoldTitles = append(q.GoldTitles, f.e.passage.Title)
			q.GoldDocIDs = append(q.GoldDocIDs, f.e.passage.ID)
			q.SupportingFacts = append(q.SupportingFacts, data.SupportingFact{Title: f.e.passage.Title, Sentence: int32(f.sentence)})
		}
		questions = append(questions, q)
	}
	return questions, nil
}

// bridge draws a question that goes from a named entity to a linked one.
func (g *generator) bridge() (draft, bool) {
	d := draft{typ: "bridge"}
	switch g.rng.IntN(6) {
	case 0:
		f := pick(g.rng, g.works[film])
		p := f.creator.birthplace
		d.text = fmt.Sprintf("In which city was the director of %s born?", f.title)
		d.answers = []string{p.name, p.name + ", " + p.country.name}
		d.facts = [2]fact{{&f.entry, f.sCreator}, {&f.creator.entry, f.creator.sBirthplace}}
	case 1:
		w := pick(g.rng, g.works[novel])
		a := w.creator
		d.text = fmt.Sprintf("What is the nationality of the author of %s?", w.title)
		d.answers = []string{a.country.demonym, a.country.name}
		d.facts = [2]fact{{&w.entry, w.sCreator}, {&a.entry, a.sIntro}}
	case 2:
		f := pick(g.rng, g.works[film])
		s := f.company
		d.text = fmt.Sprintf("In which city is the company that produced %s headquartered?", f.title)
		d.answers = []string{s.city.name}
		d.facts = [2]fact{{&f.entry, f.sCompany}, {&s.entry, s.sCity}}
	case 3:
		a := pick(g.rng, g.works[album])
		b := a.band
		d.text = fmt.Sprintf("In which city was the band that released %s formed?", a.title)
		d.answers = []string{b.city.name}
		d.facts = [2]fact{{&a.entry, a.sCreator}, {&b.entry, b.sCity}}
	case 4:
		p := pick(g.rng, g.people)
		u := p.university
		if u == nil {
			return d, false
		}
		d.text = fmt.Sprintf("In what year was the university where %s studied founded?", p.name())
		d.answers = []string{strconv.Itoa(u.year)}
		d.facts = [2]fact{{&p.entry, p.sUniversity}, {&u.entry, u.sFounded}}
	default:
		f := pick(g.rng, g.byJob[founder])
		c := f.founded
		if c == nil {
			return d, false
		}
		d.text = fmt.Sprintf("When was the founder of %s born?", c.name)
		d.answers = []string{f.born.String(), f.born.american()}
		d.facts = [2]fact{{&c.entry, c.sFounder}, {&f.entry, f.sIntro}}
	}
	for _, a := range d.answers {
		if containsWords(d.text, a) {
			return d, false // the question would give its answer away
		}
	}
	return d, true
}

// comparison draws a question that compares two entities of a kind.
func (g *generator) comparison() (draft, bool) {
	d := draft{typ: "comparison"}
	switch g.rng.IntN(5) {
	case 0:
		a, b := pick(g.rng, g.people), pick(g.rng, g.people)
		if a == b || a.born == b.born {
			return d, false
		}
		d.text = fmt.Sprintf("Who was born first, %s or %s?", a.name(), b.name())
		d.answers = []string{earlier(a.born.before(b.born), a.name(), b.name())}
		d.facts = [2]fact{{&a.entry, a.sIntro}, {&b.entry, b.sIntro}}
	case 1:
		pool := g.companies
		if g.rng.IntN(3) == 0 {
			pool = g.orgs[university]
		}
		x, y := pick(g.rng, pool), pick(g.rng, pool)
		if x.year == y.year {
			return d, false
		}
		d.text = fmt.Sprintf("Which was founded earlier, %s or %s?", x.name, y.name)
		d.answers = []string{earlier(x.year < y.year, x.name, y.name)}
		d.facts = [2]fact{{&x.entry, x.sFounded}, {&y.entry, y.sFounded}}
	case 2:
		a := pick(g.rng, g.people)
		b := pick(g.rng, g.people)
		if g.rng.IntN(2) == 0 {
			b = pick(g.rng, g.byCountry[a.country.index]) // balance yes and no
		}
		if a == b {
			return d, false
		}
		d.text = fmt.Sprintf("Are %s and %s of the same nationality?", a.name(), b.name())
		d.answers = []string{"no"}
		if a.country == b.country {
			d.answers = []string{"yes"}
		}
		d.facts = [2]fact{{&a.entry, a.sIntro}, {&b.entry, b.sIntro}}
	case 3:
		x, y := pick(g.rng, g.works[film]), pick(g.rng, g.works[film])
		if x.year == y.year {
			return d, false
		}
		d.text = fmt.Sprintf("Which film came out first, %s or %s?", x.title, y.title)
		d.answers = []string{earlier(x.year < y.year, x.title, y.title)}
		d.facts = [2]fact{{&x.entry, x.sCreator}, {&y.entry, y.sCreator}}
	default:
		x, y := pick(g.rng, g.orgs[band]), pick(g.rng, g.orgs[band])
		if x.year == y.year {
			return d, false
		}
		d.text = fmt.Sprintf("Which band was formed first, %s or %s?", x.name, y.name)
		d.answers = []string{earlier(x.year < y.year, x.name, y.name)}
		d.facts = [2]fact{{&x.entry, x.sFounded}, {&y.entry, y.sFounded}}
	}
	return d, true
}

func earlier(firstIsEarlier bool, first, second string) string {
	if firstIsEarlier {
		return first
	}
	return second
}

// containsWords reports whether needle occurs in s as whole words, ignoring
// case: "Kelford" is in "born in Kelford?" but not in "Kelfordton".
func containsWords(s, needle string) bool {
	s, needle = strings.ToLower(s), strings.ToLower(needle)
	for i := 0; ; {
		j := strings.Index(s[i:], needle)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(needle)
		if (start == 0 || !isWordByte(s[start-1])) && (end == len(s) || !isWordByte(s[end])) {
			return true
		}
		i = start + 1
	}
}

func isWordByte(c byte) bool {
	return c >= 0x80 || unicode.IsLetter(rune(c)) || unicode.IsDigit(rune(c))
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
