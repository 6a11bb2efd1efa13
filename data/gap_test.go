package data

import "testing"

func TestNormalizeCategory(t *testing.T) {
	tests := []struct{ in, want string }{
		{"bridge_entity", CategoryBridgeEntity},
		{"Bridge entity", CategoryBridgeEntity},
		{"bridge-entities", CategoryBridgeEntity},
		{"alias", CategoryBridgeEntity},
		{"ALIASES", CategoryBridgeEntity},
		{"attribute", CategoryAttribute},
		{"Attributes", CategoryAttribute},
		{"property", CategoryAttribute},
		{"properties", CategoryAttribute},
		{"relation", CategoryRelation},
		{"relationship", CategoryRelation},
		{"evidence", CategoryEvidenceSpan},
		{"evidence span", CategoryEvidenceSpan},
		{" evidence_span ", CategoryEvidenceSpan},
		{"other", CategoryOther},
		{"", CategoryOther},
		{"temporal", CategoryOther},
		{"bridge__entity", CategoryBridgeEntity},
	}
	for _, tt := range tests {
		if got := NormalizeCategory(tt.in); got != tt.want {
			t.Errorf("NormalizeCategory(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestGapKey(t *testing.T) {
	a := GapItem{Category: "Bridge Entity", Target: "  The  Beatles", Slot: "Founder", Description: "x"}
	b := GapItem{Category: "bridge_entity", Target: "the beatles", Slot: "founder", Description: "y"}
	if a.Key() != b.Key() {
		t.Errorf("keys differ: %+v vs %+v", a.Key(), b.Key())
	}
	c := b
	c.Slot = "members"
	if b.Key() == c.Key() {
		t.Errorf("keys of different slots are equal: %+v", b.Key())
	}
}
