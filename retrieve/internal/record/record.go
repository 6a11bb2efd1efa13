// Package record encodes and decodes the stored passages of the on-disk
// indexes (BM25 and dense): uvarint-length-prefixed strings, and a
// passage's body, its text then its sentences. Decoding checks every length
// against the buffer, so a damaged file gives ErrCorrupt, never a panic.
package record

import (
	"encoding/binary"
	"errors"
	"strings"
)

// ErrCorrupt is the error of a record that cannot be decoded.
var ErrCorrupt = errors.New("index file is damaged")

// How a body stores its sentences: as [start, end) byte ranges of its
// text, when all sentences are pieces of the text in order (the common
// case), or as strings.
const (
	sentSpans   = 0
	sentStrings = 1
)

// AppendString appends s, length first.
func AppendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// AppendBody appends a passage's text and sentences.
func AppendBody(b []byte, text string, sentences []string) []byte {
	b = AppendString(b, text)
	b = binary.AppendUvarint(b, uint64(len(sentences)))
	if len(sentences) == 0 {
		return b
	}
	spans := make([]uint64, 0, 2*len(sentences))
	pos := 0
	for _, s := range sentences {
		j := strings.Index(text[pos:], s)
		if j < 0 {
			spans = nil
			break
		}
		spans = append(spans, uint64(pos+j), uint64(pos+j+len(s)))
		pos += j + len(s)
	}
	if spans == nil {
		b = append(b, sentStrings)
		for _, s := range sentences {
			b = AppendString(b, s)
		}
		return b
	}
	b = append(b, sentSpans)
	prev := uint64(0)
	for _, v := range spans {
		b = binary.AppendUvarint(b, v-prev)
		prev = v
	}
	return b
}

// Reader decodes a record from B, remembering the first error in Err
// (after which every read returns a zero value).
type Reader struct {
	B   []byte
	Err error
}

// Uvarint reads an unsigned varint.
func (r *Reader) Uvarint() uint64 {
	if r.Err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.B)
	if n <= 0 {
		r.Err = ErrCorrupt
		return 0
	}
	r.B = r.B[n:]
	return v
}

// Bytes reads a string written by AppendString, without copying.
func (r *Reader) Bytes() []byte {
	n := r.Uvarint()
	if r.Err != nil {
		return nil
	}
	if n > uint64(len(r.B)) {
		r.Err = ErrCorrupt
		return nil
	}
	s := r.B[:n]
	r.B = r.B[n:]
	return s
}

// Byte reads one byte.
func (r *Reader) Byte() byte {
	if r.Err != nil {
		return 0
	}
	if len(r.B) == 0 {
		r.Err = ErrCorrupt
		return 0
	}
	c := r.B[0]
	r.B = r.B[1:]
	return c
}

// Body reads a body written by AppendBody into fresh strings.
func (r *Reader) Body() (text string, sentences []string) {
	text = string(r.Bytes())
	ns := r.Uvarint()
	if r.Err != nil || ns == 0 {
		return text, nil
	}
	if ns > uint64(len(r.B)) {
		r.Err = ErrCorrupt
		return text, nil
	}
	sentences = make([]string, 0, ns)
	switch r.Byte() {
	case sentSpans:
		pos := uint64(0)
		for range ns {
			start := pos + r.Uvarint()
			end := start + r.Uvarint()
			if r.Err != nil || start < pos || end < start || end > uint64(len(text)) {
				r.Err = ErrCorrupt
				return text, nil
			}
			sentences = append(sentences, text[start:end])
			pos = end
		}
	case sentStrings:
		for range ns {
			sentences = append(sentences, string(r.Bytes()))
		}
	default:
		r.Err = ErrCorrupt
	}
	if r.Err != nil {
		return text, nil
	}
	return text, sentences
}
