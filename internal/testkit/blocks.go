package testkit

import (
	"fmt"

	"github.com/distill-rag/distill/data"
)

// BridgeQuestion and the title blocks (a title followed by its sentences)
// FilmBlock, DirectorBlock and StrangerBlock are the fixed input of the
// tests of the built-in roles and the text analysis they share: the
// question's answer is on the second hop, in the director's block; the
// stranger is another director.
const BridgeQuestion = "In which city was the director of The Electric Frontier born?"

var (
	FilmBlock     = []string{"The Electric Frontier", "The Electric Frontier is a 1952 horror film directed by Thirta Grupoustaton."}
	DirectorBlock = []string{"Thirta Grupoustaton", "Thirta Grupoustaton (born 28 May 1903) is a Tovamesian film director.", "She was born in Standafield, Tovamesia, and grew up in Zargolastad."}
	StrangerBlock = []string{"Gamik Fothestini", "Gamik Fothestini (born 4 October 1993) is a Rulolesian film director.", "He was born in Cemostad, Gogrartesia."}
)

// Blocks builds a context from title blocks, appended one round per block,
// block i as document "d<i>".
func Blocks(blocks ...[]string) data.Context {
	var c data.Context
	for bi, b := range blocks {
		var ev []data.Evidence
		for i, s := range b[1:] {
			ev = append(ev, data.Evidence{DocID: fmt.Sprint("d", bi), Title: b[0], Index: int32(i), Text: s})
		}
		c.Append(ev)
	}
	return c
}
