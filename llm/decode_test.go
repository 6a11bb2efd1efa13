package llm

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestExtractJSON(t *testing.T) {
	tests := []struct {
		name, in, want string
		ok             bool
	}{
		{"bare", `{"a":1}`, `{"a":1}`, true},
		{"white space", " \n {\"a\": 1} \n", `{"a": 1}`, true},
		{"code fence", "```json\n{\"a\": [1, 2]}\n```", `{"a": [1, 2]}`, true},
		{"prose around", `Sure! Here it is: {"sufficient": false, "gap_items": []} Hope this helps.`, `{"sufficient": false, "gap_items": []}`, true},
		{"braces in strings", `{"a": "}{", "b": "\"}"}`, `{"a": "}{", "b": "\"}"}`, true},
		{"invalid braces first", `Use {x} here. {"a": {"b": 2}}`, `{"a": {"b": 2}}`, true},
		{"first of two", `{"a":1} {"b":2}`, `{"a":1}`, true},
		{"nested start", `{ oops {"a":1}`, `{"a":1}`, true},
		{"raw newline in a string", "{\"d\": \"two\nlines\tand\x01\"}", `{"d": "two\nlines\tand\u0001"}`, true},
		{"raw newline between members", "{\"a\": 1,\n\"b\": \"x\"}", "{\"a\": 1,\n\"b\": \"x\"}", true},
		{"escaped quote before a raw newline", "Here: {\"d\": \"say \\\"hi\\\"\nthen\"}", `{"d": "say \"hi\"\nthen"}`, true},
		{"valid object before one with a raw newline", "{\"a\": 1} {\"b\": \"x\ny\"}", `{"a": 1}`, true},
		{"raw newline, unbalanced", "{\"d\": \"x\ny\"", "", false},
		{"unbalanced", `{"a": 1`, "", false},
		{"array only", `[1, 2]`, "", false},
		{"nothing", `I cannot answer.`, "", false},
		{"empty", ``, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ExtractJSON(tt.in)
			if got != tt.want || ok != tt.ok {
				t.Errorf("ExtractJSON(%q): got %q, %v, want %q, %v", tt.in, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func FuzzExtractJSON(f *testing.F) {
	for _, s := range []string{
		`{"a":1}`,
		"```json\n{\"sufficient\": true, \"gap_items\": []}\n```",
		`Here: {"evidence_global_ids": [1, 4, 9]}.`,
		`{"a": "}{\"", "b": {"c": [{}]}}`,
		`{{{{`,
		`}{`,
		`{"a": 1`,
		"\xff{\"\xfe\":1}",
		`[{"a":1}]`,
		"{\"a\": \"x\ny\"}",
		"x {\"a\": \"\\\"\n\"} {\"b\": 1}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, ok := ExtractJSON(in)
		if !ok {
			if got != "" {
				t.Fatalf("not found but returned %q", got)
			}
			return
		}
		escaped := !strings.Contains(in, got)
		if escaped {
			// Found with the control characters in strings escaped: only
			// when nothing was found as written.
			if _, ok := firstObject(in, false); ok {
				t.Fatalf("result %q escaped although the input holds an object as written", got)
			}
			found := false
			for k := strings.IndexByte(in, '{'); k >= 0 && !found; k = nextBrace(in, k) {
				found = strings.HasPrefix(escapeControls(in[k:]), got)
			}
			if !found {
				t.Fatalf("result %q is neither a substring of the input nor of it escaped", got)
			}
		}
		if !strings.HasPrefix(got, "{") || !strings.HasSuffix(got, "}") {
			t.Fatalf("result %q is not an object", got)
		}
		if !json.Valid([]byte(got)) {
			t.Fatalf("result %q is not valid JSON", got)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(got), &m); err != nil {
			t.Fatalf("result %q does not decode as an object: %v", got, err)
		}
		if escaped {
			return
		}
		// Nothing earlier in the input starts a valid object.
		prefix := in[:strings.Index(in, got)]
		if _, ok := firstObject(prefix, false); ok && strings.Count(in, got) == 1 {
			t.Fatalf("an object in %q comes before %q", prefix, got)
		}
	})
}

// nextBrace returns the index of the first "{" of s after k, or -1.
func nextBrace(s string, k int) int {
	j := strings.IndexByte(s[k+1:], '{')
	if j < 0 {
		return -1
	}
	return k + 1 + j
}

type gap struct {
	Category    string `json:"category"`
	Target      string `json:"target"`
	Slot        string `json:"slot"`
	Description string `json:"description"`
}

type judgeOut struct {
	Sufficient bool   `json:"sufficient"`
	GapItems   []gap  `json:"gap_items"`
	Note       string `json:"note,omitempty"`
}

// scripted answers with the given contents in turn, recording requests.
type scripted struct {
	answers []string
	reqs    []Request
}

func (s *scripted) Chat(_ context.Context, req Request) (Response, error) {
	s.reqs = append(s.reqs, req)
	if len(s.reqs) > len(s.answers) {
		return Response{}, errors.New("no more answers")
	}
	resp := Response{Content: s.answers[len(s.reqs)-1], Usage: Usage{PromptTokens: 10, CompletionTokens: 5}}
	if rest, ok := strings.CutPrefix(resp.Content, cutMark); ok {
		resp.Content, resp.FinishReason = rest, "length"
	}
	return resp, nil
}

// cutMark starts a scripted answer that was cut off at the token limit.
const cutMark = "[length]"

func TestDecodeJSON(t *testing.T) {
	good := `{"sufficient": false, "gap_items": [{"category": "bridge_entity", "target": "X", "slot": "born", "description": ""}]}`
	want := judgeOut{GapItems: []gap{{Category: "bridge_entity", Target: "X", Slot: "born"}}}
	tests := []struct {
		name       string
		answers    []string
		want       judgeOut
		wantCalls  int
		wantReason string // non-empty: a ParseError whose reason contains it
	}{
		{name: "clean", answers: []string{good}, want: want, wantCalls: 1},
		{name: "fenced with prose", answers: []string{"Here:\n```json\n" + good + "\n```"}, want: want, wantCalls: 1},
		{name: "unknown members ignored", answers: []string{`{"sufficient": true, "gap_items": [], "confidence": 0.9}`}, want: judgeOut{Sufficient: true, GapItems: []gap{}}, wantCalls: 1},
		{name: "type mismatch then good", answers: []string{`{"sufficient": "yes", "gap_items": []}`, good}, want: want, wantCalls: 2},
		{name: "missing member then good", answers: []string{`{"gap_items": []}`, good}, want: want, wantCalls: 2},
		{name: "no json twice", answers: []string{"I think so.", "Still no."}, wantCalls: 2, wantReason: "no JSON object"},
		{name: "null bool twice", answers: []string{`{"sufficient": null, "gap_items": []}`, `{"sufficient": null, "gap_items": []}`}, wantCalls: 2, wantReason: `"sufficient" is null`},
		{name: "nested member missing", answers: []string{good, ""}, want: want, wantCalls: 1},
		{name: "cut off at the limit", answers: []string{cutMark + `{"sufficient": false, "gap_items": [{"category": "other", "tar`}, wantCalls: 1, wantReason: "cut off at the token limit"},
		{name: "cut off after a whole gap item", answers: []string{cutMark + `{"sufficient": false, "gap_items": [{"category": "other", "target": "X", "slot": "born", "description": "d"}, {"cat`}, wantCalls: 1, wantReason: "cut off at the token limit"},
		{name: "nested missing twice", answers: []string{`{"sufficient": false, "gap_items": [{"category": "other"}]}`, `{"sufficient": false, "gap_items": [{"category": "other"}]}`}, wantCalls: 2, wantReason: `"gap_items[0].target" is missing`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &scripted{answers: tt.answers}
			var got judgeOut
			resp, err := DecodeJSON(context.Background(), c, userRequest("judge this"), &got)
			if len(c.reqs) != tt.wantCalls {
				t.Errorf("calls: got %d, want %d", len(c.reqs), tt.wantCalls)
			}
			if tt.wantReason != "" {
				var pe *ParseError
				if !errors.As(err, &pe) {
					t.Fatalf("got %v, want a *ParseError", err)
				}
				if !strings.Contains(pe.Reason, tt.wantReason) {
					t.Errorf("reason: got %q, want it to contain %q", pe.Reason, tt.wantReason)
				}
				if cut := strings.HasPrefix(tt.answers[0], cutMark); errors.Is(err, ErrCutOff) != cut {
					t.Errorf("errors.Is(err, ErrCutOff) = %v, want %v", !cut, cut)
				}
				var outputs []string
				for _, a := range tt.answers {
					outputs = append(outputs, strings.TrimPrefix(a, cutMark))
				}
				if diff := cmp.Diff(outputs, pe.Outputs); diff != "" {
					t.Errorf("outputs (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(judgeOut{}, got); diff != "" {
					t.Errorf("v written on failure (-want +got):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeJSON: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("decoded (-want +got):\n%s", diff)
			}
			if got, want := resp.Reasked, tt.wantCalls == 2; got != want {
				t.Errorf("Reasked: got %v, want %v", got, want)
			}
			if want := 10 * tt.wantCalls; resp.Usage.PromptTokens != want {
				t.Errorf("usage: got %d prompt tokens, want %d", resp.Usage.PromptTokens, want)
			}
		})
	}
}

// TestDecodeJSONOnce asks once: an unusable answer is a *ParseError
// holding it, a usable one decodes as with DecodeJSON.
func TestDecodeJSONOnce(t *testing.T) {
	c := &scripted{answers: []string{`{"sufficient": "yes", "gap_items": []}`, `{"sufficient": true, "gap_items": []}`}}
	var v judgeOut
	resp, err := DecodeJSONOnce(context.Background(), c, userRequest("judge this"), &v)
	var pe *ParseError
	if !errors.As(err, &pe) || len(pe.Outputs) != 1 || pe.Outputs[0] != c.answers[0] {
		t.Fatalf("got %v, want a *ParseError holding the first answer alone", err)
	}
	if len(c.reqs) != 1 || resp.Reasked {
		t.Errorf("got %d requests (Reasked %v), want 1", len(c.reqs), resp.Reasked)
	}
	c = &scripted{answers: []string{`{"sufficient": true, "gap_items": []}`}}
	if _, err := DecodeJSONOnce(context.Background(), c, userRequest("judge this"), &v); err != nil || !v.Sufficient {
		t.Errorf("a usable answer: got %+v, %v", v, err)
	}
}

func TestDecodeJSONReaskShowsTheError(t *testing.T) {
	c := &scripted{answers: []string{`{"sufficient": "yes", "gap_items": []}`, `{"sufficient": true, "gap_items": []}`}}
	var v judgeOut
	if _, err := DecodeJSON(context.Background(), c, userRequest("judge this"), &v); err != nil {
		t.Fatal(err)
	}
	msgs := c.reqs[1].Messages
	if len(msgs) != 3 || msgs[1].Role != "assistant" || msgs[1].Content != c.answers[0] || msgs[2].Role != "user" {
		t.Fatalf("re-ask messages: got %+v, want user, assistant (first answer), user", msgs)
	}
	if !strings.Contains(msgs[2].Content, "cannot unmarshal string") {
		t.Errorf("re-ask: got %q, want it to show the parse error", msgs[2].Content)
	}
	if len(c.reqs[0].Messages) != 1 {
		t.Errorf("the caller's request was changed: %+v", c.reqs[0].Messages)
	}
}

func TestDecodeJSONErrors(t *testing.T) {
	boom := errors.New("boom")
	c := chatFunc(func(context.Context, Request) (Response, error) { return Response{}, boom })
	var v judgeOut
	if _, err := DecodeJSON(context.Background(), c, userRequest("x"), &v); !errors.Is(err, boom) {
		t.Errorf("got %v, want the Chatter's error", err)
	}
	if _, err := DecodeJSON(context.Background(), c, userRequest("x"), v); err == nil {
		t.Errorf("non-pointer: got nil error, want one")
	}
}

type withEmbedded struct {
	Base
	Score   *float64 `json:"score"`
	Tags    []string `json:"tags" enum:"a,b"`
	private int
	Skip    string `json:"-"`
}

type Base struct {
	ID   int    `json:"id" description:"row id"`
	Kind string `json:"kind,omitempty" enum:"x,y"`
}

type recursive struct {
	Next *recursive `json:"next"`
}

func TestSchemaFor(t *testing.T) {
	s, err := SchemaFor[judgeOut]("judge")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"object","properties":{` +
		`"sufficient":{"type":"boolean"},` +
		`"gap_items":{"type":"array","items":{"type":"object","properties":{"category":{"type":"string"},"target":{"type":"string"},"slot":{"type":"string"},"description":{"type":"string"}},"required":["category","target","slot","description"],"additionalProperties":false}},` +
		`"note":{"type":"string"}},` +
		`"required":["sufficient","gap_items","note"],"additionalProperties":false}`
	if string(s.Schema) != want {
		t.Errorf("schema:\ngot  %s\nwant %s", s.Schema, want)
	}
	if s.Name != "judge" {
		t.Errorf("name: got %q, want judge", s.Name)
	}

	s, err = SchemaFor[*withEmbedded]("embedded")
	if err != nil {
		t.Fatal(err)
	}
	want = `{"type":"object","properties":{` +
		`"id":{"type":"integer","description":"row id"},` +
		`"kind":{"type":"string","enum":["x","y"]},` +
		`"score":{"type":["number","null"]},` +
		`"tags":{"type":"array","items":{"type":"string","enum":["a","b"]}}},` +
		`"required":["id","kind","score","tags"],"additionalProperties":false}`
	if string(s.Schema) != want {
		t.Errorf("schema:\ngot  %s\nwant %s", s.Schema, want)
	}
}

func TestSchemaForRefuses(t *testing.T) {
	if _, err := SchemaFor[struct {
		M map[string]int `json:"m"`
	}]("m"); err == nil {
		t.Error("map field: got nil error, want one")
	}
	if _, err := SchemaFor[recursive]("r"); err == nil {
		t.Error("recursive type: got nil error, want one")
	}
	if _, err := SchemaFor[[]int]("slice"); err == nil {
		t.Error("non-struct root: got nil error, want one")
	}
	if _, err := SchemaFor[judgeOut]("bad name!"); err == nil {
		t.Error("bad name: got nil error, want one")
	}
	if _, err := SchemaFor[struct {
		N int `json:"n" enum:"1,2"`
	}]("n"); err == nil {
		t.Error("enum on an integer: got nil error, want one")
	}
}

// FuzzDecodeAnswer feeds arbitrary model output to the decoder behind
// DecodeJSON: it must never panic, and must only accept an answer that
// holds a JSON object with every required member.
func FuzzDecodeAnswer(f *testing.F) {
	for _, s := range []string{
		`{"sufficient": true, "gap_items": []}`,
		`{"sufficient": "true", "gap_items": []}`,
		`{"sufficient": false, "gap_items": [{"category": "other", "target": "", "slot": "", "description": "d"}]}`,
		`{"sufficient": false, "gap_items": [null]}`,
		`{"SUFFICIENT": false, "Gap_Items": null}`,
		"```\n{\"sufficient\": false}\n```",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var v judgeOut
		err := decodeInto(Response{Content: in}, reflect.ValueOf(&v))
		if err != nil {
			if diff := cmp.Diff(judgeOut{}, v); diff != "" {
				t.Fatalf("failed decode wrote v: %s", diff)
			}
			return
		}
		if _, ok := ExtractJSON(in); !ok {
			t.Fatalf("accepted %q without a JSON object", in)
		}
	})
}

func TestRepairMessages(t *testing.T) {
	base := []Message{{Role: "system", Content: "s"}, {Role: "user", Content: "u"}}
	tests := []struct {
		name, reply string
		want        []Message
	}{
		{"reply", "nope", append(slices.Clone(base), Message{Role: "assistant", Content: "nope"}, Message{Role: "user", Content: "fix it"})},
		{"empty reply", "", append(slices.Clone(base), Message{Role: "user", Content: "Your reply was empty. fix it"})},
		{"blank reply", " \n", append(slices.Clone(base), Message{Role: "user", Content: "Your reply was empty. fix it"})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(base)
			got := RepairMessages(in, tt.reply, "fix it")
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("messages (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(base, in); diff != "" {
				t.Errorf("the request's messages changed (-want +got):\n%s", diff)
			}
		})
	}
}
