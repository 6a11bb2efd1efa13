package synth

import (
	"fmt"
	"strings"

	"github.com/distill-rag/distill/data"
)

// The passages of a world: each entity described in a few sentences.

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
