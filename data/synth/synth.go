package synth

import (
	"errors"
	"fmt"
	"math/rand/v2"

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
	// Dataset is the Dataset field of the bundled sample's questions, and
	// the prefix of their ids (sample-000001, ...).
	Dataset = "sample"
)

// DatasetName returns the Dataset field of the questions of cfg's world,
// and the prefix of their ids: Dataset for the bundled sample, else
// "synth-SEED-QUESTIONS", so that two worlds never share a question id
// (a benchmark would take one's questions for the other's training ones).
func DatasetName(cfg Config) string {
	if cfg.Seed == DefaultSeed && cfg.Questions == DefaultQuestions {
		return Dataset
	}
	return fmt.Sprintf("synth-%d-%d", cfg.Seed, cfg.Questions)
}

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
	questions, err := g.ask(cfg.Questions, DatasetName(cfg))
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
