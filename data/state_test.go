package data

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// judgeTemplate stands for the judge's template hash (package judge, which
// data cannot import) in the sample rows.
var judgeTemplate = TemplateHash("judge system text", "judge user text")

func sampleStates() []State {
	return []State{
		{
			QuestionID: "q1", Dataset: "sample", Round: 0, Question: "Who directed Iron Tide?",
			JudgeOutput: `{"sufficient":false,"gap_items":[]}`, JudgeParseError: "",
			Override: true, JudgeMS: 1.5, JudgeModel: "m", JudgeTemplate: judgeTemplate,
		},
		{
			QuestionID: "q1", Dataset: "sample", Round: 1, Question: "Who directed Iron Tide?",
			Context:  "[Iron Tide]\nIron Tide is a film directed by Tri Datruwick.",
			Evidence: []Evidence{{DocID: "d1", Title: "Iron Tide", Index: 0, Text: "Iron Tide is a film directed by Tri Datruwick."}},
			Queries:  []string{"Who directed Iron Tide?"},
			Retrieved: []RetrievedDoc{
				{Round: 0, Rank: 1, DocID: "d1", Title: "Iron Tide", Score: 7.25},
				{Round: 0, Rank: 2, DocID: "d9", Title: "Tide Pool", Score: 3},
			},
			JudgeOutput: `{"sufficient":true,"gap_items":[]}`, Sufficient: true,
			ExtractorOutput: `{"evidence_global_ids":[1,1,9]}`, Candidates: 4,
			ChosenIDs: []int32{1}, DroppedIDs: []int32{1, 9}, DroppedRepeated: 1, DroppedOutOfRange: 1,
			BlocksAdded: 1, IsFinal: true, Answer: "Tri Datruwick", ReaderOutput: "Answer: Tri Datruwick",
			JudgeMS: 2, RetrieveMS: 0.25, ExtractMS: 3, ReadMS: 4,
			JudgeModel: "m", JudgeTemplate: judgeTemplate, ExtractorModel: "e", ExtractorTemplate: "h2",
			ReaderModel: "r", ReaderTemplate: "h3", JudgePromptTokens: 100, JudgeCompletionTokens: 10,
			ExtractorPromptTokens: 200, ExtractorCompletionTokens: 20, ReaderPromptTokens: 300, ReaderCompletionTokens: 30,
		},
		{
			QuestionID: "q2", Dataset: "sample", Question: "Which is older, A or B?", IsFinal: true,
			GapItems:        []GapItem{{Category: CategoryAttribute, Target: "A", Slot: "founding year", Description: "When A was founded."}},
			JudgeParseError: "bad verdict: no \"sufficient\" field", Failure: "judge: status 500 after 5 attempts",
		},
	}
}

func TestStateParquetRoundTrip(t *testing.T) {
	rows := sampleStates()
	path := writeParquet(t, t.TempDir(), KindTrajectories, rows)
	kind, err := ParquetKind(path)
	if err != nil {
		t.Fatal(err)
	}
	if kind != KindTrajectories {
		t.Errorf("got kind %q, want %q", kind, KindTrajectories)
	}
	got, err := ReadParquet[State](path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(rows, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("rows after a round trip (-want +got):\n%s", diff)
	}
}

func TestShowTrajectories(t *testing.T) {
	rows := sampleStates()
	path := writeParquet(t, t.TempDir(), KindTrajectories, rows)
	var buf bytes.Buffer
	if err := ShowParquet(&buf, path, 2); err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	if len(lines) != 2 {
		t.Fatalf("got %d lines, want 2:\n%s", len(lines), buf.String())
	}
	var second State
	if err := json.Unmarshal(lines[1], &second); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(rows[1], second, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("shown row (-want +got):\n%s", diff)
	}
}

func TestStateVerdict(t *testing.T) {
	s := sampleStates()[2]
	want := Verdict{GapItems: s.GapItems}
	if diff := cmp.Diff(want, s.Verdict()); diff != "" {
		t.Error(diff)
	}
}
