// Package gguf reads the metadata of GGUF model files, the format
// llama.cpp serves: what distill needs to know of the model a trained
// adapter will be served on, chiefly the chat template the server applies
// (ChatTemplateKey).
//
// A GGUF file starts with the magic "GGUF", a version (2 or 3), the tensor
// and key-value counts, then the key-value pairs, each a length-prefixed
// key, a value type and the value (scalars, strings, arrays). Read walks
// them and keeps the string values asked for, skipping the rest (the
// vocabulary arrays are most of a header) without holding them in memory.
package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
)

// ChatTemplateKey is the key of the chat template (Jinja) a GGUF file
// carries; llama.cpp's servers apply it to chat requests.
const ChatTemplateKey = "tokenizer.chat_template"

// ErrFormat is wrapped by every error about a file that is not a GGUF file
// this package reads.
var ErrFormat = errors.New("not a GGUF file")

// The value types of GGUF metadata.
const (
	typeUint8 uint32 = iota
	typeInt8
	typeUint16
	typeInt16
	typeUint32
	typeInt32
	typeFloat32
	typeBool
	typeString
	typeArray
	typeUint64
	typeInt64
	typeFloat64
)

// Limits that keep a corrupt header from asking for absurd allocations.
const (
	maxStringLen = 64 << 20 // a chat template is kilobytes
	maxKVs       = 1 << 20
	maxDepth     = 4 // arrays of arrays
)

// ReadFile is Read on the file at path.
func ReadFile(path string, keys ...string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m, err := Read(f, keys...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// Read reads the metadata of the GGUF file r and returns the string values
// of the keys asked for that it holds (a key it lacks is absent from the
// map). A key whose value is not a string is an error. It stops reading
// once every key asked for is found.
func Read(r io.Reader, keys ...string) (map[string]string, error) {
	rd := &reader{r: bufio.NewReaderSize(r, 1<<16)}
	var magic [4]byte
	if _, err := io.ReadFull(rd.r, magic[:]); err != nil || string(magic[:]) != "GGUF" {
		return nil, fmt.Errorf("%w: no GGUF magic", ErrFormat)
	}
	version := rd.u32()
	if rd.err == nil && version != 2 && version != 3 {
		return nil, fmt.Errorf("%w: version %d (want 2 or 3)", ErrFormat, version)
	}
	rd.u64() // tensors
	n := rd.u64()
	if rd.err != nil {
		return nil, rd.fail()
	}
	if n > maxKVs {
		return nil, fmt.Errorf("%w: %d metadata keys", ErrFormat, n)
	}
	want := map[string]bool{}
	for _, k := range keys {
		want[k] = true
	}
	out := map[string]string{}
	for i := uint64(0); i < n && len(out) < len(want); i++ {
		key := rd.str()
		typ := rd.u32()
		if rd.err != nil {
			return nil, rd.fail()
		}
		if !want[key] {
			rd.skip(typ, 0)
			if rd.err != nil {
				return nil, rd.fail()
			}
			continue
		}
		if typ != typeString {
			return nil, fmt.Errorf("%w: %s has value type %d, want a string", ErrFormat, key, typ)
		}
		v := rd.str()
		if rd.err != nil {
			return nil, rd.fail()
		}
		out[key] = v
	}
	return out, nil
}

// reader reads little-endian values, keeping the first error.
type reader struct {
	r   *bufio.Reader
	err error
	buf [8]byte
}

func (rd *reader) fail() error {
	if errors.Is(rd.err, io.EOF) || errors.Is(rd.err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: the metadata ends early", ErrFormat)
	}
	return rd.err
}

func (rd *reader) read(n int) []byte {
	if rd.err != nil {
		return rd.buf[:n]
	}
	_, rd.err = io.ReadFull(rd.r, rd.buf[:n])
	return rd.buf[:n]
}

func (rd *reader) u32() uint32 { return binary.LittleEndian.Uint32(rd.read(4)) }
func (rd *reader) u64() uint64 { return binary.LittleEndian.Uint64(rd.read(8)) }

func (rd *reader) strLen() int64 {
	n := rd.u64()
	if rd.err == nil && n > maxStringLen {
		rd.err = fmt.Errorf("%w: a string of %d bytes", ErrFormat, n)
	}
	return int64(n)
}

func (rd *reader) str() string {
	n := rd.strLen()
	if rd.err != nil {
		return ""
	}
	b := make([]byte, n)
	_, rd.err = io.ReadFull(rd.r, b)
	return string(b)
}

func (rd *reader) discard(n int64) {
	if rd.err != nil {
		return
	}
	for n > 0 {
		step := min(n, 1<<30)
		if _, err := rd.r.Discard(int(step)); err != nil {
			rd.err = err
			return
		}
		n -= step
	}
}

// size returns the size in bytes of a fixed-size value type, 0 for the
// others.
func size(typ uint32) int64 {
	switch typ {
	case typeUint8, typeInt8, typeBool:
		return 1
	case typeUint16, typeInt16:
		return 2
	case typeUint32, typeInt32, typeFloat32:
		return 4
	case typeUint64, typeInt64, typeFloat64:
		return 8
	}
	return 0
}

// skip reads past one value of type typ.
func (rd *reader) skip(typ uint32, depth int) {
	if s := size(typ); s > 0 {
		rd.discard(s)
		return
	}
	switch typ {
	case typeString:
		rd.discard(rd.strLen())
	case typeArray:
		if depth >= maxDepth {
			rd.err = fmt.Errorf("%w: arrays nested deeper than %d", ErrFormat, maxDepth)
			return
		}
		elem := rd.u32()
		count := rd.u64()
		if rd.err != nil {
			return
		}
		if s := size(elem); s > 0 {
			if count > 1<<40/uint64(s) {
				rd.err = fmt.Errorf("%w: an array of %d values", ErrFormat, count)
				return
			}
			rd.discard(int64(count) * s)
			return
		}
		for j := uint64(0); j < count && rd.err == nil; j++ {
			rd.skip(elem, depth+1)
		}
	default:
		if rd.err == nil {
			rd.err = fmt.Errorf("%w: unknown value type %d", ErrFormat, typ)
		}
	}
}

// Header returns a GGUF file (version 3) that holds the string metadata
// given, in key order, and no tensors: a stand-in for a model file where
// only its metadata matters (tests of what reads it).
func Header(meta map[string]string) []byte {
	keys := slices.Sorted(maps.Keys(meta))
	b := []byte("GGUF")
	b = binary.LittleEndian.AppendUint32(b, 3)
	b = binary.LittleEndian.AppendUint64(b, 0)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(keys)))
	str := func(s string) {
		b = binary.LittleEndian.AppendUint64(b, uint64(len(s)))
		b = append(b, s...)
	}
	for _, k := range keys {
		str(k)
		b = binary.LittleEndian.AppendUint32(b, typeString)
		str(meta[k])
	}
	return b
}
