package data

import (
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// TestChunkPage holds the cut of an evidence page on golden cases: lines
// packed while they fit, joined by a line break; empty lines dropped; a
// long line cut at white space, a long word at the limit; the limit
// counted in code points.
func TestChunkPage(t *testing.T) {
	for _, tt := range []struct {
		name  string
		text  string
		limit int
		want  []string
	}{
		{name: "lines packed", text: "aa bb\n\ncc\n  dd  \n", limit: 8, want: []string{"aa bb\ncc", "dd"}},
		{name: "exactly the limit", text: "abcd\nefg", limit: 8, want: []string{"abcd\nefg"}},
		{name: "one over", text: "abcd\nefgh", limit: 8, want: []string{"abcd", "efgh"}},
		{name: "long line at white space", text: "one two three four", limit: 9, want: []string{"one two", "three", "four"}},
		{name: "white space just after the limit", text: "abc def ghi", limit: 7, want: []string{"abc def", "ghi"}},
		{name: "a word longer than the limit", text: "abcdefghij kl", limit: 4, want: []string{"abcd", "efgh", "ij", "kl"}},
		{name: "code points, not bytes", text: "ééé ééé", limit: 3, want: []string{"ééé", "ééé"}},
		{name: "empty page", text: "\n \n", limit: 8, want: nil},
		{name: "carriage returns", text: "ab\r\ncd\r\n", limit: 8, want: []string{"ab\ncd"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := chunkPage(tt.text, tt.limit)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("chunks (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTriviaQAPages reads the evidence pages of the original layout: the
// pages' titles become gold titles, their chunks the context, each page
// with the first question that names it.
func TestTriviaQAPages(t *testing.T) {
	r, err := OpenQuestions("testdata/triviaqa.json", QuestionsTriviaQA, WithTriviaQAPages("testdata/triviaqa_pages"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ex, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"Andrew Lloyd Webber"}, ex.Question.GoldTitles); diff != "" {
		t.Errorf("gold titles (-want +got):\n%s", diff)
	}
	page := string(mustRead(t, "testdata/triviaqa_pages/Andrew_Lloyd_Webber.txt"))
	var joined []string
	for _, p := range ex.Context {
		if n := utf8.RuneCountInString(p.Text); n > TriviaQAChunkChars {
			t.Errorf("passage of %d characters, over %d", n, TriviaQAChunkChars)
		}
		if p.Title != "Andrew Lloyd Webber" || p.ID != DocID(p.Title, p.Text) {
			t.Errorf("passage %q titled %q, want the page's title and DocID", p.ID, p.Title)
		}
		joined = append(joined, p.Text)
	}
	// Nothing but white space is lost: the passages hold the page's text
	// in order.
	noSpace := func(s string) string { return strings.Join(strings.Fields(s), "") }
	if got, want := noSpace(strings.Join(joined, " ")), noSpace(page); got != want {
		t.Errorf("the passages do not hold the page's text in order:\n got %q\nwant %q", got, want)
	}
	if len(ex.Context) < 3 {
		t.Errorf("%d passages from a %d-character page, want at least 3", len(ex.Context), len(page))
	}
	ex, err = r.Next()
	if err != nil {
		t.Fatal(err)
	}
	if len(ex.Question.GoldTitles) != 0 || len(ex.Context) != 0 {
		t.Errorf("a question without pages: gold titles %q, %d passages; want none", ex.Question.GoldTitles, len(ex.Context))
	}
}

// TestTriviaQAPagesShared returns a page named by two questions once, and
// makes a question bad when its page cannot be read.
func TestTriviaQAPagesShared(t *testing.T) {
	record := func(id, file string) string {
		return `{"Answer": {"Value": "seven", "NormalizedValue": "seven"}, "Question": "How many colours?", "QuestionId": "` + id +
			`", "EntityPages": [{"Filename": "` + file + `", "Title": "Rainbow"}]}`
	}
	in := writeFile(t, "trivia.json", []byte(`{"Data": [`+strings.Join([]string{
		record("q1", "Rainbow.txt"), record("q2", "Rainbow.txt"), record("q3", "Missing.txt"), record("q4", "../triviaqa.json"),
	}, ",")+`], "Version": 1.0}`))
	r, err := OpenQuestions(in, QuestionsTriviaQA, WithTriviaQAPages("testdata/triviaqa_pages"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var contexts []int
	var bad []string
	for {
		ex, err := r.Next()
		if err == io.EOF {
			break
		}
		var recErr *RecordError
		if errors.As(err, &recErr) {
			if recErr.Field != "EntityPages" {
				t.Errorf("error on field %q, want EntityPages", recErr.Field)
			}
			bad = append(bad, recErr.Error())
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		contexts = append(contexts, len(ex.Context))
	}
	if diff := cmp.Diff([]int{1, 0}, contexts); diff != "" {
		t.Errorf("passages per question (-want +got):\n%s", diff)
	}
	if len(bad) != 2 || !strings.Contains(bad[0], "Missing.txt") || !strings.Contains(bad[1], "not inside the pages folder") {
		t.Errorf("bad records %q, want the missing page and the page outside the folder", bad)
	}
}

// TestTriviaQAPagesRefused: pages go with TriviaQA's original layout and
// an existing folder only.
func TestTriviaQAPagesRefused(t *testing.T) {
	for _, tt := range []struct{ in, pages, want string }{
		{"testdata/triviaqa_flashrag.jsonl", "testdata/triviaqa_pages", "original layout only"},
		{"testdata/triviaqa.json", "testdata/no-such-folder", "no such file"},
		{"testdata/triviaqa.json", "testdata/triviaqa.json", "not a folder"},
	} {
		if _, err := OpenQuestions(tt.in, QuestionsTriviaQA, WithTriviaQAPages(tt.pages)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s with pages %s: got %v, want an error saying %q", tt.in, tt.pages, err, tt.want)
		}
	}
}
