// Package synth generates the bundled synthetic sample: a small fictional
// world of people, places, organisations and works, with multi-hop questions
// over it, built by code from a seed so that it needs no files and no network.
// The toolkit uses it wherever a dataset is taken (`--dataset sample`) and
// writes it out with `distill data synth`.
//
// Generation runs in three steps, all driven by one PCG generator seeded
// from Config.Seed (never global randomness, never map order):
//
//  1. entities: countries, cities, people, organisations (companies,
//     universities, bands) and works (films, novels, albums), linked to one
//     another (a film has a director, a director a birthplace, ...);
//  2. passages: one per entity, titled with its name, whose 3 to 6 sentences
//     state its attributes in plain English;
//  3. questions: "bridge" questions that go from one entity to a linked one
//     ("In which city was the director of X born?") and "comparison"
//     questions over two entities of a kind ("Who was born first, A or B?"),
//     each with the two gold passages and the sentences that state the
//     needed facts.
//
// The world holds about five passages per question. Many of them share
// surnames, cities and title words with the gold passages, so that finding
// the right ones takes more than matching a rare word.
package synth
