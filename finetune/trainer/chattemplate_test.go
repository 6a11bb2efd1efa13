package trainer

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/distill-rag/distill/finetune"
	"github.com/distill-rag/distill/finetune/gguf"
	"github.com/distill-rag/distill/judge"
)

// writeGGUF writes a GGUF header whose only metadata is the chat template
// (none when tmpl is nil) and returns its path.
func writeGGUF(t *testing.T, tmpl *string) string {
	t.Helper()
	meta := map[string]string{"general.architecture": "gemma3"}
	if tmpl != nil {
		meta = map[string]string{gguf.ChatTemplateKey: *tmpl}
	}
	path := filepath.Join(t.TempDir(), "base.gguf")
	if err := os.WriteFile(path, gguf.Header(meta), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestTrainedChatTemplate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string
		ok    bool
		err   string
	}{
		{"jinja file", map[string]string{ChatTemplateFile: "T", TokenizerConfigFile: `{"chat_template": "old"}`}, "T", true, ""},
		{"tokenizer config", map[string]string{TokenizerConfigFile: `{"chat_template": "T"}`}, "T", true, ""},
		{"named templates", map[string]string{TokenizerConfigFile: `{"chat_template": [{"name": "tool_use", "template": "X"}, {"name": "default", "template": "T"}]}`}, "T", true, ""},
		{"none", map[string]string{TokenizerConfigFile: `{"model_max_length": 8192}`}, "", false, ""},
		{"null", map[string]string{TokenizerConfigFile: `{"chat_template": null}`}, "", false, ""},
		{"no files", nil, "", false, ""},
		{"broken config", map[string]string{TokenizerConfigFile: `{"chat_template": `}, "", false, TokenizerConfigFile},
		{"not a template", map[string]string{TokenizerConfigFile: `{"chat_template": 3}`}, "", false, "neither a string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, ok, err := TrainedChatTemplate(dir)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("got %v, want an error saying %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want || ok != tc.ok {
				t.Errorf("got %q, %v, %v; want %q, %v", got, ok, err, tc.want, tc.ok)
			}
		})
	}
}

func TestCheckChatTemplates(t *testing.T) {
	trained := "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
	other := strings.Replace(trained, "<|im_start|>", "<start_of_turn>", 1)
	same, differs := writeGGUF(t, &trained), writeGGUF(t, &other)
	none := writeGGUF(t, nil)
	for _, tc := range []struct {
		name     string
		saved    bool
		gguf     string
		status   string
		served   bool
		mismatch string // in the *ChatTemplateMismatch; "" for none
	}{
		{"match", true, same, judge.ChatTemplatesMatch, true, ""},
		{"differ", true, differs, judge.ChatTemplatesDiffer, true, `differ from byte 24: trained "...or m in messages %}<|im_start|>{{ m.role }}`},
		{"no template in the GGUF", true, none, judge.ChatTemplatesDiffer, false, "formats chats as llama-2"},
		{"no GGUF", true, "", judge.ChatTemplatesUnchecked, false, ""},
		{"no template saved", false, same, judge.ChatTemplatesUnchecked, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.saved {
				if err := os.WriteFile(filepath.Join(dir, ChatTemplateFile), []byte(trained), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			rec, err := CheckChatTemplates(dir, tc.gguf)
			var mm *ChatTemplateMismatch
			switch {
			case tc.mismatch == "" && err != nil:
				t.Errorf("got %v, want no error", err)
			case tc.mismatch != "" && (!errors.As(err, &mm) || !strings.Contains(err.Error(), tc.mismatch)):
				t.Errorf("got %v, want a *ChatTemplateMismatch saying %q", err, tc.mismatch)
			}
			if rec.Status != tc.status || rec.ServedFrom != tc.gguf || (rec.Trained == hash(trained)) != tc.saved || (rec.Served != "") != tc.served {
				t.Errorf("record %+v", rec)
			}
			if rec.Status == judge.ChatTemplatesMatch && rec.Trained != rec.Served {
				t.Errorf("matching templates with different hashes: %+v", rec)
			}
		})
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, ChatTemplateFile), []byte(trained), 0o644)
	if _, err := CheckChatTemplates(dir, filepath.Join(t.TempDir(), "missing.gguf")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing GGUF: got %v, want os.ErrNotExist", err)
	}
}

// TestResultChatTemplate checks that Result records the comparison, a
// mismatch included, and that a GGUF it cannot read leaves the check
// undone, saying why.
func TestResultChatTemplate(t *testing.T) {
	trained, other := "T1", "T2"
	for _, tc := range []struct {
		name   string
		gguf   string
		want   judge.ChatTemplates
		inNote string
	}{
		{"match", writeGGUF(t, &trained), judge.ChatTemplates{Trained: hash(trained), Served: hash(trained), Status: judge.ChatTemplatesMatch}, ""},
		{"mismatch", writeGGUF(t, &other), judge.ChatTemplates{Trained: hash(trained), Served: hash(other), Status: judge.ChatTemplatesDiffer}, ""},
		{"unreadable", "/nowhere/base.gguf", judge.ChatTemplates{Trained: hash(trained), Status: judge.ChatTemplatesUnchecked}, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := finetune.Job{Dir: t.TempDir(), BaseGGUF: tc.gguf}
			dir := job.Path(AdapterDir)
			os.Mkdir(dir, 0o755)
			os.WriteFile(filepath.Join(dir, AdapterConfigFile), []byte(`{"r": 16, "lora_alpha": 32}`), 0o644)
			os.WriteFile(filepath.Join(dir, AdapterWeightsFile), []byte("w"), 0o644)
			os.WriteFile(filepath.Join(dir, ChatTemplateFile), []byte(trained), 0o644)
			r, err := Result(job, AdapterDir, Log{})
			if err != nil {
				t.Fatal(err)
			}
			got := *r.ChatTemplate
			if !strings.Contains(got.Note, tc.inNote) {
				t.Errorf("note %q, want it to say %q", got.Note, tc.inNote)
			}
			tc.want.ServedFrom, got.Note = tc.gguf, ""
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("chat template record (-want +got):\n%s", diff)
			}
		})
	}
}
