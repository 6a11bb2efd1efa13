package data

import (
	"runtime"
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go/format"
)

// zstdCodec is parquet's ZSTD codec over one encoder shared by every
// writer of the process. parquet-go's own codec keeps its encoders in a
// sync.Pool, which every garbage collection empties: a writer then builds
// a new encoder, whose tables and window are megabytes, for each page it
// compresses after a collection. The shared encoder is built once, and
// EncodeAll may be called from many goroutines at once (each call takes
// one of its GOMAXPROCS inner encoders). Its window is 1 MiB, not the
// default 8 MiB: a call compresses one page, which is smaller, and each
// inner encoder keeps a window's worth of history.
type zstdCodec struct{}

var sharedEncoder = sync.OnceValue(func() *zstd.Encoder {
	e, err := zstd.NewWriter(nil,
		zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)),
		zstd.WithEncoderLevel(zstd.SpeedDefault), // parquet-go's default
		zstd.WithZeroFrames(true),
		zstd.WithEncoderCRC(false),
		zstd.WithWindowSize(1<<20),
	)
	if err != nil {
		panic(err) // only for invalid options, which these are not
	}
	return e
})

func (zstdCodec) String() string { return "ZSTD" }

func (zstdCodec) CompressionCodec() format.CompressionCodec { return format.Zstd }

func (zstdCodec) Encode(dst, src []byte) ([]byte, error) {
	return sharedEncoder().EncodeAll(src, dst[:0]), nil
}

// Decode is never called for writing; reading goes through parquet-go's
// codec of the file's compression.
func (zstdCodec) Decode(dst, src []byte) ([]byte, error) {
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.DecodeAll(src, dst[:0])
}
