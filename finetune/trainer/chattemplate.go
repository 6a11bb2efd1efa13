package trainer

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/distill-rag/distill/finetune/gguf"
	"github.com/distill-rag/distill/judge"
)

// The files in which transformers saves a tokenizer's chat template beside
// an adapter: chat_template.jinja (transformers 4.50 and later, and
// train_sft.py whatever the version), else the "chat_template" of
// tokenizer_config.json.
const (
	ChatTemplateFile    = "chat_template.jinja"
	TokenizerConfigFile = "tokenizer_config.json"
)

// TrainedChatTemplate returns the chat template that the trainer saved with
// the adapter in dir; ok is false when it saved none.
func TrainedChatTemplate(dir string) (tmpl string, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(dir, ChatTemplateFile))
	if err == nil {
		return string(b), true, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", false, err
	}
	b, err = os.ReadFile(filepath.Join(dir, TokenizerConfigFile))
	if errors.Is(err, os.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	var cfg struct {
		ChatTemplate json.RawMessage `json:"chat_template"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return "", false, fmt.Errorf("%s: %w", filepath.Join(dir, TokenizerConfigFile), err)
	}
	if len(cfg.ChatTemplate) == 0 || string(cfg.ChatTemplate) == "null" {
		return "", false, nil
	}
	if err := json.Unmarshal(cfg.ChatTemplate, &tmpl); err == nil {
		return tmpl, true, nil
	}
	// Several named templates: the chat one is "default".
	var named []struct{ Name, Template string }
	if err := json.Unmarshal(cfg.ChatTemplate, &named); err != nil {
		return "", false, fmt.Errorf("%s: chat_template is neither a string nor a list of named templates", filepath.Join(dir, TokenizerConfigFile))
	}
	for _, n := range named {
		if n.Name == "default" {
			return n.Template, true, nil
		}
	}
	return "", false, nil
}

// llamaCppFallback is what llama-cpp-python's server does with a GGUF file
// that has no chat template.
const llamaCppFallback = "the GGUF file has no " + gguf.ChatTemplateKey + ": llama-cpp-python's server formats chats as llama-2 instead"

// CheckChatTemplates compares the chat template saved with the adapter in
// adapterDir with the one llama.cpp applies when it serves the adapter on
// baseGGUF (the file's tokenizer.chat_template), and returns the record
// for the hand-back. When they differ, it returns the record and a
// *ChatTemplateMismatch saying how. Without baseGGUF, or without a
// template saved by the trainer, the record says what was not checked.
func CheckChatTemplates(adapterDir, baseGGUF string) (judge.ChatTemplates, error) {
	rec := judge.ChatTemplates{ServedFrom: baseGGUF, Status: judge.ChatTemplatesUnchecked}
	trained, ok, err := TrainedChatTemplate(adapterDir)
	if err != nil {
		return rec, err
	}
	if ok {
		rec.Trained = hash(trained)
	}
	if baseGGUF == "" {
		rec.Note = "no GGUF base model named (--base-gguf): the served template was not read"
		return rec, nil
	}
	if !ok {
		rec.Note = "the trainer saved no chat template with the adapter"
		return rec, nil
	}
	meta, err := gguf.ReadFile(baseGGUF, gguf.ChatTemplateKey)
	if err != nil {
		return rec, err
	}
	served, has := meta[gguf.ChatTemplateKey]
	if has {
		rec.Served = hash(served)
	} else {
		rec.Note = llamaCppFallback
	}
	if has && served == trained {
		rec.Status = judge.ChatTemplatesMatch
		return rec, nil
	}
	rec.Status = judge.ChatTemplatesDiffer
	return rec, &ChatTemplateMismatch{Trained: trained, Served: served, ServedMissing: !has, GGUF: baseGGUF}
}

func hash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// ChatTemplateMismatch says that the chat template an adapter was trained
// with is not the one its server applies.
type ChatTemplateMismatch struct {
	Trained, Served string
	// ServedMissing: the GGUF file has no template (the server falls back
	// to a built-in format).
	ServedMissing bool
	GGUF          string
}

func (e *ChatTemplateMismatch) Error() string {
	if e.ServedMissing {
		return fmt.Sprintf("the adapter was trained with chat template %.12s, but %s", hash(e.Trained), llamaCppFallback)
	}
	i := 0
	for i < len(e.Trained) && i < len(e.Served) && e.Trained[i] == e.Served[i] {
		i++
	}
	return fmt.Sprintf("the adapter was trained with chat template %.12s, but llama.cpp applies %.12s from %s; they differ from byte %d: trained %q, served %q",
		hash(e.Trained), hash(e.Served), e.GGUF, i, excerpt(e.Trained, i), excerpt(e.Served, i))
}

// excerpt returns s around byte i: a little before, more after.
func excerpt(s string, i int) string {
	from, to := max(0, i-20), min(len(s), i+60)
	out := s[from:to]
	if from > 0 {
		out = "..." + out
	}
	if to < len(s) {
		out += "..."
	}
	return out
}
