package finetune

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
)

// TestShareGPTWriterMatchesWholeList checks that the examples written one
// by one make the same bytes as encoding the whole list at once, which is
// the layout LLaMA-Factory reads and the one earlier exports wrote.
func TestShareGPTWriterMatchesWholeList(t *testing.T) {
	for _, n := range []int{0, 1, 3} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var exs []Example
			list := []shareGPTConversation{}
			for i := range n {
				m := []Message{
					{Role: "system", Content: "Judge <evidence> & say \"why\"\n"},
					{Role: "user", Content: fmt.Sprintf("Question %d: où est l'été? 日本\t\\", i)},
					{Role: "assistant", Content: `{"sufficient": false, "gap_items": []}`},
				}
				exs = append(exs, Example{Messages: m, QuestionID: fmt.Sprint("q", i)})
				list = append(list, shareGPTConversation{System: m[0].Content,
					Conversations: []shareGPTTurn{{From: "human", Value: m[1].Content}, {From: "gpt", Value: m[2].Content}}})
			}
			var want bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", " ")
			if err := enc.Encode(list); err != nil {
				t.Fatal(err)
			}

			var got bytes.Buffer
			w := bufio.NewWriter(&got)
			sg := newShareGPTWriter(w)
			for _, e := range exs {
				if err := sg.add(e); err != nil {
					t.Fatal(err)
				}
			}
			if err := sg.close(); err != nil {
				t.Fatal(err)
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Errorf("streamed:\n%s\nwhole list:\n%s", got.String(), want.String())
			}
		})
	}
}
