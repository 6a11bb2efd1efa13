package label

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/rolecall"
	"github.com/distill-rag/distill/judge"
	"github.com/distill-rag/distill/llm"
)

// Item is what a teacher labels: one recorded state and its question, gold
// answers and gold titles included.
type Item struct {
	State    Input
	Question data.Question
	// Row is the state's 0-based row in the input file.
	Row int
	// truth, when set (withTruth), is data.JudgeTruth of the state's
	// evidence: the label and a retrieval-truth teacher both need it, and
	// comparing every answer with the evidence is most of a built-in
	// labelling run's work.
	truth *data.Truth
}

// Truth returns the retrieval truth of the item's evidence
// (data.JudgeTruth of its question and evidence).
func (it Item) Truth() data.Truth {
	if it.truth != nil {
		return *it.truth
	}
	return data.JudgeTruth(it.Question, it.State.Evidence)
}

// withTruth returns the item with its retrieval truth computed, so that
// what is handed the copy does not compute it again.
func (it Item) withTruth() Item {
	t := it.Truth()
	it.truth = &t
	return it
}

// Input is what labelling reads of a recorded state (data.State, a row of
// the trajectories): the columns named here, by the same names. The others
// (the roles' raw outputs, queries, retrieved documents, timings, tokens),
// most of a trajectories file, are neither read nor decoded.
type Input struct {
	QuestionID string `parquet:"question_id"`
	Dataset    string `parquet:"dataset"`
	Round      int32  `parquet:"round"`
	Question   string `parquet:"question"`
	// Context is the evidence context as the judge saw it, Evidence the
	// same sentence by sentence with provenance (retrieval truth's input).
	Context  string          `parquet:"context"`
	Evidence []data.Evidence `parquet:"evidence,list"`
	// JudgeModel and Sufficient are the rollout judge's, kept beside the
	// teacher's verdict; IsFinal marks a question's last state; Failure is
	// why the question failed (such rows are not labelled).
	JudgeModel string `parquet:"judge_model"`
	Sufficient bool   `parquet:"sufficient"`
	IsFinal    bool   `parquet:"is_final"`
	Failure    string `parquet:"failure"`
}

// Key returns the state's key.
func (s Input) Key() data.StateKey { return data.StateKey{QuestionID: s.QuestionID, Round: s.Round} }

// Teacher labels states. The contract every implementation keeps:
//
//   - Label returns one sample (number sample, from 0) of the teacher's
//     answer about the item's state. A sample that cannot be used (the
//     request failed after its retries, the answer could not be parsed) is
//     not an error: LabelSample.Error or LabelSample.ParseError says why.
//   - An error is systemic and ends the run: ctx ended (ctx.Err() is
//     returned as is), or a failure that will hit every state (credentials
//     refused: llm.ErrAuth).
//   - The sample's Model and TemplateHash say what produced it.
//   - Implementations are safe for concurrent use.
type Teacher interface {
	Label(ctx context.Context, it Item, sample int) (data.LabelSample, error)
}

// Names of the teachers, as labels and reports record them.
const (
	NameLLM            = "llm"
	NameRetrievalTruth = "retrieval-truth"
)

// RetrievalTruth is the built-in teacher that needs no model: it labels a
// state from the question's gold supporting titles, sentences and answers.
// It is a baseline, and the cross-check of model teachers: a state is
// sufficient exactly when retrieval truth calls it complete
// (data.Truth.Complete, the filter's strong positive, so that its labels
// never contradict the filter's rules); otherwise it names one gap item per
// missing gold title (category evidence_span, target the title), then, when
// the titles are all there, one per missing supporting sentence or, when
// the answer is expected in the evidence and is not, one gap item for the
// answer. A question without gold titles is sufficient when the answer
// appears in the evidence. It is deterministic: every sample is the same.
type RetrievalTruth struct{}

// RetrievalTruthModel is the model name the built-in teacher records; its
// template hash is a hash of the version of its rules.
const RetrievalTruthModel = "retrieval-truth (built-in baseline)"

// RetrievalTruthTemplate changes whenever the rules of RetrievalTruth do.
var RetrievalTruthTemplate = data.TemplateHash("retrieval-truth", "v2")

// Label implements Teacher.
func (RetrievalTruth) Label(ctx context.Context, it Item, sample int) (data.LabelSample, error) {
	if err := ctx.Err(); err != nil {
		return data.LabelSample{}, err
	}
	v := truthVerdict(it.Truth())
	out, err := json.Marshal(v)
	if err != nil {
		return data.LabelSample{}, err
	}
	return data.LabelSample{
		Sample: int32(sample), Output: string(out), Sufficient: v.Sufficient, GapItems: v.GapItems,
		Model: RetrievalTruthModel, TemplateHash: RetrievalTruthTemplate,
	}, nil
}

// TruthVerdict is the verdict retrieval truth gives an evidence context;
// see RetrievalTruth.
func TruthVerdict(q data.Question, evidence []data.Evidence) data.Verdict {
	return truthVerdict(data.JudgeTruth(q, evidence))
}

// truthVerdict is the verdict of a context whose retrieval truth is t.
func truthVerdict(t data.Truth) data.Verdict {
	if t.Sufficient() {
		return data.Verdict{Sufficient: true, GapItems: []data.GapItem{}}
	}
	gaps := []data.GapItem{}
	for _, title := range t.MissingTitles {
		gaps = append(gaps, data.GapItem{
			Category:    data.CategoryEvidenceSpan,
			Target:      title,
			Slot:        "supporting facts",
			Description: fmt.Sprintf("Find what %s says that helps answer the question.", title),
		})
	}
	if len(gaps) == 0 && !t.AnswerExpected {
		for _, f := range t.MissingFacts {
			gaps = append(gaps, data.GapItem{
				Category:    data.CategoryEvidenceSpan,
				Target:      f.Title,
				Slot:        "supporting sentence",
				Description: fmt.Sprintf("Find the statement of %s that the answer rests on.", f.Title),
			})
		}
	}
	if len(gaps) == 0 {
		gaps = append(gaps, data.GapItem{
			Category:    data.CategoryAttribute,
			Target:      "Answer",
			Slot:        "answer",
			Description: "Find a statement of the answer itself.",
		})
	}
	return data.Verdict{Sufficient: false, GapItems: dedupGaps(gaps)}
}

// dedupGaps drops repeated gap items (two missing sentences of one title
// make one item).
func dedupGaps(gaps []data.GapItem) []data.GapItem {
	out := gaps[:0]
	for _, g := range gaps {
		if !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	return out
}

// The teacher's instructions, written for this project from the facts of
// the method: it sees the question and the evidence exactly as the judge
// does (the user message of judge.Prompt) and answers in the judge's
// schema, under a "use only this context" instruction.
const teacherSystem = `You annotate training data for the sufficiency judge of a question answering system that retrieves evidence step by step. For each example you read a question and the evidence gathered for it so far, and you give the verdict a careful judge would give.

Rules:
- Use only the evidence shown. Do not use your own knowledge of the world, even when you know the answer: what matters is whether this evidence, read on its own, answers the question.
- The evidence is sufficient when every fact needed for the answer is stated in it, including every intermediate entity of a multi-hop question and both sides of a comparison. Otherwise it is not sufficient.
- If it is sufficient, set "sufficient" to true and give an empty "gap_items" list.
- If it is not, set "sufficient" to false and give one gap item for each missing piece of information, the one to look up first first. Never answer "not sufficient" without at least one gap item.
  - "category": "bridge_entity" (an intermediate entity that must be identified first), "attribute" (a property of a known entity, such as a date, a place or a number), "relation" (how two entities are connected), "evidence_span" (a statement that must be found to confirm or compare facts) or "other".
  - "target": the entity the missing information is about, named as in the question or the evidence ("Answer" when it is the answer itself).
  - "slot": the missing property or relation, in a few words.
  - "description": one short sentence saying what must be found.
- "sufficient" is the JSON boolean true or false. Reply with one JSON object and nothing else, in this form:
{"sufficient": false, "gap_items": [{"category": "attribute", "target": "...", "slot": "...", "description": "..."}]}`

// TeacherTemplateHash is the hash of the teacher's prompt template: its
// instructions and the judge's template, whose user message it shows.
var TeacherTemplateHash = data.TemplateHash(teacherSystem, judge.TemplateHash)

// TeacherPrompt returns the prompt the model teacher sees for a state: its
// own instructions, and the judge's user message for the question and the
// rendered context, byte for byte.
func TeacherPrompt(question, renderedContext string) data.Prompt {
	return data.Prompt{System: teacherSystem, User: judge.Prompt(question, renderedContext).User}
}

// Defaults of the model teacher, the method's reference settings.
const (
	DefaultMaxTokens   = 512
	DefaultTemperature = 0
)

// LLMTeacher is a teacher behind a chat model (any OpenAI-compatible
// server, GPT-4o-mini in the method). It shows TeacherPrompt, asks for the
// judge's JSON schema, makes one call per sample (no re-ask, as the
// reference) and reads the answer with judge.ParseVerdict: a missing or
// non-boolean "sufficient" is a parse failure. Sample 0 is sent without a
// seed, sample k > 0 with seed SeedBase + k, so that the samples of a state
// are distinct requests (and distinct entries of a response cache) while a
// one-sample run shares its cache with sample 0 of a larger one.
type LLMTeacher struct {
	Chatter     llm.Chatter
	Model       string
	Temperature float64
	// MaxTokens caps each answer (DefaultMaxTokens when 0).
	MaxTokens int
	SeedBase  int
}

// Request returns the chat request of one sample of a state.
func (t *LLMTeacher) Request(s Input, sample int) llm.Request {
	schema := judge.Schema()
	req := llm.Request{
		Messages:    rolecall.Messages(TeacherPrompt(s.Question, s.Context)),
		Temperature: t.Temperature,
		MaxTokens:   t.MaxTokens,
		Schema:      &schema,
	}
	if req.MaxTokens <= 0 {
		req.MaxTokens = DefaultMaxTokens
	}
	if sample > 0 {
		seed := t.SeedBase + sample
		req.Seed = &seed
	}
	return req
}

// Label implements Teacher.
func (t *LLMTeacher) Label(ctx context.Context, it Item, sample int) (data.LabelSample, error) {
	req := t.Request(it.State, sample)
	start := time.Now()
	resp, err := t.Chatter.Chat(ctx, req)
	s := data.LabelSample{
		Sample: int32(sample), Temperature: t.Temperature, Model: t.Model, TemplateHash: TeacherTemplateHash,
		LatencyMS: float64(time.Since(start).Microseconds()) / 1000,
	}
	if req.Seed != nil {
		s.Seed = int64(*req.Seed)
	}
	switch {
	case ctx.Err() != nil:
		return data.LabelSample{}, ctx.Err()
	case errors.Is(err, llm.ErrAuth):
		return data.LabelSample{}, fmt.Errorf("teacher: %w", err)
	case err != nil:
		s.Error = err.Error()
		return s, nil
	}
	ApplyAnswer(&s, resp)
	return s, nil
}

// ApplyAnswer fills a sample in from the teacher's answer: output, model,
// tokens, and the parsed verdict or why it could not be parsed.
func ApplyAnswer(s *data.LabelSample, resp llm.Response) {
	s.Output, s.Cached = resp.Content, resp.Cached
	if resp.Model != "" {
		s.Model = resp.Model
	}
	s.PromptTokens, s.CompletionTokens = int64(resp.Usage.PromptTokens), int64(resp.Usage.CompletionTokens)
	v, contradiction, err := ParseAnswer(resp.Content)
	s.Contradiction = contradiction
	if err != nil {
		if resp.FinishReason == "length" {
			// What a cut answer seems to hold (a gap item of it, say) is
			// not the reason: the cut is.
			err = fmt.Errorf("%w (%v)", llm.ErrCutOff, err)
		}
		s.ParseError = err.Error()
		return
	}
	s.Sufficient, s.GapItems = v.Sufficient, v.GapItems
}

// The ways a teacher's answer contradicts itself.
const (
	SufficientWithGaps   = "sufficient with gap items"
	InsufficientWithout  = "insufficient with no gap items"
	NonBooleanSufficient = "non-boolean sufficient"
)

// ParseAnswer reads a teacher's answer: the first JSON object of the text,
// parsed with judge.ParseVerdict. It also says whether the answer
// contradicted itself: sufficient with gap items (which ParseVerdict drops,
// as the method does), insufficient with none, or a "sufficient" that is
// not a JSON boolean (which is also a parse error).
func ParseAnswer(text string) (v data.Verdict, contradiction string, err error) {
	obj, ok := llm.ExtractJSON(text)
	if !ok {
		return data.Verdict{}, "", fmt.Errorf("%w: the answer holds no JSON object", judge.ErrVerdict)
	}
	var raw struct {
		Sufficient json.RawMessage   `json:"sufficient"`
		GapItems   []json.RawMessage `json:"gap_items"`
	}
	if json.Unmarshal([]byte(obj), &raw) == nil {
		switch s := string(bytes.TrimSpace(raw.Sufficient)); {
		case s == "true" && len(raw.GapItems) > 0:
			contradiction = SufficientWithGaps
		case s == "false" && len(raw.GapItems) == 0:
			contradiction = InsufficientWithout
		case s != "true" && s != "false" && s != "" && s != "null":
			contradiction = NonBooleanSufficient
		}
	}
	v, err = judge.ParseVerdict([]byte(obj))
	if err != nil {
		return data.Verdict{}, contradiction, err
	}
	if v.GapItems == nil {
		v.GapItems = []data.GapItem{}
	}
	return v, contradiction, nil
}
