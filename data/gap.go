package data

import "strings"

// NormalizeCategory maps a gap item category as a model wrote it to one of
// GapCategories, as the method's filtering rules do: case, spaces, hyphens
// and a trailing "s" do not matter ("Bridge entity", "bridge-entities"),
// known variants map to their category ("alias", "entity" and "bridge" to
// bridge_entity; "evidence" and "span" to evidence_span; "property" and
// "fact" to attribute; "relationship" and "connection" to relation), and
// anything else, the empty string included, is "other".
func NormalizeCategory(s string) string {
	k := strings.ToLower(strings.TrimSpace(s))
	k = strings.Map(func(r rune) rune {
		if r == ' ' || r == '-' || r == '\t' {
			return '_'
		}
		return r
	}, k)
	for strings.Contains(k, "__") {
		k = strings.ReplaceAll(k, "__", "_")
	}
	if c, ok := categoryVariants[k]; ok {
		return c
	}
	// Plurals: "entities", "aliases", "attributes".
	for _, p := range [][2]string{{"ies", "y"}, {"es", ""}, {"s", ""}} {
		if stem, ok := strings.CutSuffix(k, p[0]); ok {
			if c, ok := categoryVariants[stem+p[1]]; ok {
				return c
			}
		}
	}
	return CategoryOther
}

var categoryVariants = map[string]string{
	CategoryBridgeEntity:  CategoryBridgeEntity,
	"bridge":              CategoryBridgeEntity,
	"entity":              CategoryBridgeEntity,
	"alias":               CategoryBridgeEntity,
	"bridging_entity":     CategoryBridgeEntity,
	"intermediate_entity": CategoryBridgeEntity,
	CategoryAttribute:     CategoryAttribute,
	"property":            CategoryAttribute,
	"fact":                CategoryAttribute,
	CategoryRelation:      CategoryRelation,
	"relationship":        CategoryRelation,
	"connection":          CategoryRelation,
	CategoryEvidenceSpan:  CategoryEvidenceSpan,
	"evidence":            CategoryEvidenceSpan,
	"span":                CategoryEvidenceSpan,
	"supporting_evidence": CategoryEvidenceSpan,
	CategoryOther:         CategoryOther,
}

// GapKey is what two gap items must share to be the same gap: the
// normalised category and the target and slot, case and spacing aside.
type GapKey struct {
	Category, Target, Slot string
}

// Key returns the gap item's GapKey.
func (g GapItem) Key() GapKey {
	return GapKey{Category: NormalizeCategory(g.Category), Target: foldSpace(g.Target), Slot: foldSpace(g.Slot)}
}

// foldSpace lower-cases s and collapses its white space.
func foldSpace(s string) string { return strings.Join(strings.Fields(strings.ToLower(s)), " ") }
