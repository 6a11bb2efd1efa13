package synth

import "fmt"

// The entities of a world and how they are linked: people, companies,
// bands and works, with the years that keep the facts consistent.

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
