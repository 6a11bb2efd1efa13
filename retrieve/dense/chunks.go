package dense

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/retrieve/internal/raw"
)

// A checkpoint chunk, chunks/chunk-NNNNN.f32, holds the float32 vectors of
// passages [first, first+count), as normalised (or not) for the index:
//
//	[0:8)    magic "DSTLDCHK"
//	[8:12)   version
//	[12:16)  dimension D
//	[16:24)  first passage (0-based)
//	[24:32)  passage count
//	[32:40)  FNV-1a hash of the texts embedded, each followed by 0xff
//	[40:44)  CRC-32C of the vectors
//	[44:48)  vectors stored as zeros (no direction, or refused)
//	[48:52)  passages the server refused to embed
//	[52:56)  CRC-32C of bytes [0:52)
//	[64:)    count*D float32, little-endian
//
// It is written to a temporary name and renamed, so a chunk that exists is
// whole; the hash ties it to the corpus it was embedded from.
var checkpointFiles = data.Numbered{Prefix: "chunk-", Suffix: ".f32"}

func chunkName(n int) string { return checkpointFiles.Name(n) }

type chunkHead struct {
	dim          uint32
	first, count uint64
	hash         uint64
	crc          uint32
	zero, failed uint32
}

func (h chunkHead) encode() []byte {
	b := make([]byte, chunkHeader)
	copy(b, chunkMagic)
	le := binary.LittleEndian
	le.PutUint32(b[8:], chunkVersion)
	le.PutUint32(b[12:], h.dim)
	le.PutUint64(b[16:], h.first)
	le.PutUint64(b[24:], h.count)
	le.PutUint64(b[32:], h.hash)
	le.PutUint32(b[40:], h.crc)
	le.PutUint32(b[44:], h.zero)
	le.PutUint32(b[48:], h.failed)
	le.PutUint32(b[52:], crc32.Checksum(b[:52], castagnoli))
	return b
}

func decodeChunkHead(b []byte) (chunkHead, error) {
	le := binary.LittleEndian
	if len(b) < chunkHeader || string(b[:8]) != chunkMagic || le.Uint32(b[8:]) != chunkVersion ||
		crc32.Checksum(b[:52], castagnoli) != le.Uint32(b[52:]) {
		return chunkHead{}, errCorrupt
	}
	return chunkHead{
		dim: le.Uint32(b[12:]), first: le.Uint64(b[16:]), count: le.Uint64(b[24:]),
		hash: le.Uint64(b[32:]), crc: le.Uint32(b[40:]), zero: le.Uint32(b[44:]), failed: le.Uint32(b[48:]),
	}, nil
}

// listChunks returns the checkpoint files in dir by chunk number.
func listChunks(dir string) (map[int]string, error) {
	files, err := checkpointFiles.List(dir)
	if err != nil {
		return nil, fmt.Errorf("list checkpoints: %w", err)
	}
	out := make(map[int]string, len(files))
	for _, f := range files {
		out[f.N] = f.Path
	}
	return out, nil
}

// readChunkHeader reads and checks a checkpoint's header and size, not its
// vectors (readChunk checks those).
func readChunkHeader(path string) (chunkHead, error) {
	f, err := os.Open(path)
	if err != nil {
		return chunkHead{}, err
	}
	defer f.Close()
	b := make([]byte, chunkHeader)
	if _, err := io.ReadFull(f, b); err != nil {
		return chunkHead{}, fmt.Errorf("%s: %w", path, errCorrupt)
	}
	h, err := decodeChunkHead(b)
	if err != nil {
		return h, fmt.Errorf("%s: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		return h, err
	}
	if h.dim == 0 || h.count == 0 || h.count > 1<<31 || uint64(st.Size()) != chunkHeader+4*h.count*uint64(h.dim) {
		return h, fmt.Errorf("%s: size: %w", path, errCorrupt)
	}
	return h, nil
}

// writeChunk writes a finished chunk's checkpoint.
func writeChunk(dir string, c *chunkJob, dim int, hash uint64) error {
	payload := raw.Bytes(c.vecs)
	h := chunkHead{
		dim: uint32(dim), first: uint64(c.first), count: uint64(c.count), hash: hash,
		crc: crc32.Checksum(payload, castagnoli), zero: uint32(c.zero), failed: uint32(c.failed),
	}
	return data.WriteAtomic(filepath.Join(dir, chunksDir, chunkName(c.n)), func(w *bufio.Writer) error {
		w.Write(h.encode())
		_, err := w.Write(payload)
		return err
	})
}

// readChunk reads a checkpoint's vectors, checking that it is the one
// expected and whole.
func readChunk(path string, first, count, dim int, hash uint64) ([]float32, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	h, err := decodeChunkHead(b)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if h.first != uint64(first) || h.count != uint64(count) || h.hash != hash || h.dim != uint32(dim) ||
		uint64(len(b)) != chunkHeader+4*uint64(count)*uint64(dim) {
		return nil, fmt.Errorf("checkpoint %s: not the expected passages or dimension: %w", path, errCorrupt)
	}
	payload := b[chunkHeader:]
	if crc32.Checksum(payload, castagnoli) != h.crc {
		return nil, fmt.Errorf("checkpoint %s: checksum: %w", path, errCorrupt)
	}
	// os.ReadFile's buffer is 8-byte aligned; the payload starts 64 bytes in.
	return raw.Load[float32](payload), nil
}
