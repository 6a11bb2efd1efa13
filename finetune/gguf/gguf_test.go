package gguf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// kv is one metadata pair as the test writes it: the value type and its
// encoded bytes.
type kv struct {
	key string
	typ uint32
	val []byte
}

func le(v any) []byte {
	var b bytes.Buffer
	if err := binary.Write(&b, binary.LittleEndian, v); err != nil {
		panic(err)
	}
	return b.Bytes()
}

func gstr(s string) []byte { return append(le(uint64(len(s))), s...) }

func strKV(k, v string) kv { return kv{k, typeString, gstr(v)} }

// array encodes an array of elem values, each already encoded.
func array(elem uint32, vals ...[]byte) []byte {
	b := append(le(elem), le(uint64(len(vals)))...)
	for _, v := range vals {
		b = append(b, v...)
	}
	return b
}

// file returns a GGUF header of the given version with the pairs.
func file(version uint32, kvs ...kv) []byte {
	b := []byte("GGUF")
	b = append(b, le(version)...)
	b = append(b, le(uint64(3))...) // tensors: never read
	b = append(b, le(uint64(len(kvs)))...)
	for _, p := range kvs {
		b = append(b, gstr(p.key)...)
		b = append(b, le(p.typ)...)
		b = append(b, p.val...)
	}
	return append(b, "tensor infos and data follow"...)
}

const template = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n'}}{% endfor %}"

// smol is laid out as SmolLM2's GGUF is: scalars, the vocabulary arrays,
// then the chat template.
var smol = file(3,
	strKV("general.architecture", "llama"),
	kv{"llama.block_count", typeUint32, le(uint32(30))},
	kv{"llama.rope.freq_base", typeFloat32, le(float32(1e5))},
	kv{"tokenizer.ggml.add_bos_token", typeBool, []byte{0}},
	kv{"tokenizer.ggml.tokens", typeArray, array(typeString, gstr("<|endoftext|>"), gstr("<|im_start|>"), gstr("a"))},
	kv{"tokenizer.ggml.scores", typeArray, array(typeFloat32, le(float32(0)), le(float32(-1)), le(float32(-2)))},
	kv{"tokenizer.ggml.nested", typeArray, array(typeArray, array(typeUint64, le(uint64(1))), array(typeInt8, []byte{7}))},
	kv{"general.size", typeUint64, le(uint64(135e6))},
	strKV(ChatTemplateKey, template),
	kv{"general.quantization_version", typeUint32, le(uint32(2))},
)

func TestRead(t *testing.T) {
	for _, tc := range []struct {
		name string
		file []byte
		keys []string
		want map[string]string
	}{
		{"template after the vocabulary", smol, []string{ChatTemplateKey}, map[string]string{ChatTemplateKey: template}},
		{"two keys", smol, []string{ChatTemplateKey, "general.architecture"},
			map[string]string{ChatTemplateKey: template, "general.architecture": "llama"}},
		{"version 2", file(2, strKV(ChatTemplateKey, "t")), []string{ChatTemplateKey}, map[string]string{ChatTemplateKey: "t"}},
		{"no template (Gemma 3 270M's file)", file(3, strKV("general.architecture", "gemma3"),
			kv{"tokenizer.ggml.add_bos_token", typeBool, []byte{1}}), []string{ChatTemplateKey}, map[string]string{}},
		{"an empty template", file(3, strKV(ChatTemplateKey, "")), []string{ChatTemplateKey}, map[string]string{ChatTemplateKey: ""}},
		{"nothing asked", smol, nil, map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Read(bytes.NewReader(tc.file), tc.keys...)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("metadata (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadErrors(t *testing.T) {
	cut := smol[:bytes.Index(smol, []byte(ChatTemplateKey))+5]
	for _, tc := range []struct {
		name string
		file []byte
	}{
		{"empty", nil},
		{"not GGUF", []byte("PK\x03\x04 a zip file")},
		{"version 1", file(1, strKV(ChatTemplateKey, "t"))},
		{"cut in the header", smol[:10]},
		{"cut in the metadata", cut},
		{"template not a string", file(3, kv{ChatTemplateKey, typeUint32, le(uint32(1))})},
		{"unknown value type", file(3, kv{"x", 99, nil}, strKV(ChatTemplateKey, "t"))},
		{"a huge string", file(3, kv{"x", typeString, le(uint64(1 << 40))})},
		{"a huge array", file(3, kv{"x", typeArray, append(le(typeUint64), le(uint64(1<<62))...)})},
		{"deep arrays", file(3, kv{"x", typeArray, array(typeArray, array(typeArray, array(typeArray, array(typeArray, array(typeArray)))))})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Read(bytes.NewReader(tc.file), ChatTemplateKey)
			if !errors.Is(err, ErrFormat) {
				t.Errorf("got %v, %v; want an error wrapping ErrFormat", got, err)
			}
		})
	}
}

func TestReadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "model.gguf")
	if err := os.WriteFile(path, smol, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(path, ChatTemplateKey)
	if err != nil {
		t.Fatal(err)
	}
	if got[ChatTemplateKey] != template {
		t.Errorf("got %q, want %q", got[ChatTemplateKey], template)
	}
	if _, err := ReadFile(filepath.Join(t.TempDir(), "none.gguf")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: got %v, want os.ErrNotExist", err)
	}
	// The GGUF file of a real model, when the test is given one
	// (DISTILL_TEST_GGUF): its metadata must be readable.
	if real := os.Getenv("DISTILL_TEST_GGUF"); real != "" {
		m, err := ReadFile(real, ChatTemplateKey, "general.architecture")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: architecture %q, chat template of %d bytes", real, m["general.architecture"], len(m[ChatTemplateKey]))
	}
}

func FuzzRead(f *testing.F) {
	f.Add(smol)
	f.Add(file(2, strKV(ChatTemplateKey, "t")))
	f.Add(file(3, kv{"x", typeArray, array(typeArray, array(typeString, gstr("a")))}))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Read(bytes.NewReader(b), ChatTemplateKey)
		if err == nil && len(m) > 1 {
			t.Errorf("got %d keys, asked for one", len(m))
		}
	})
}

func TestHeader(t *testing.T) {
	meta := map[string]string{ChatTemplateKey: template, "general.architecture": "llama"}
	got, err := Read(bytes.NewReader(Header(meta)), ChatTemplateKey, "general.architecture")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(meta, got); diff != "" {
		t.Errorf("read back (-want +got):\n%s", diff)
	}
}
