package data

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// pageFiles is a parquet.BufferPool that keeps the pages of the row group
// being written in temporary files in dir instead of memory (see
// SpillPages). Each file is unlinked as soon as it is created, so that
// nothing is left behind even when the process is killed; where a platform
// cannot unlink an open file, the name (a temporary that RemoveTemps
// recognises) is removed when the buffer is released.
type pageFiles struct {
	dir string
	mu  sync.Mutex
	// open are the files handed out and not given back, each with whether
	// its name is still to be removed.
	open map[*os.File]bool
	err  error
}

// GetBuffer returns an empty file. An error is returned by the buffer's
// methods, so that the write that needed it fails with it.
func (p *pageFiles) GetBuffer() io.ReadWriteSeeker {
	f, err := os.CreateTemp(p.dir, ".pages"+TmpMarker+"*")
	if err != nil {
		return failedBuffer{fmt.Errorf("page buffer: %w", err)}
	}
	named := os.Remove(f.Name()) != nil
	p.mu.Lock()
	p.open[f] = named
	p.mu.Unlock()
	return f
}

// PutBuffer closes a file that GetBuffer returned.
func (p *pageFiles) PutBuffer(b io.ReadWriteSeeker) {
	f, ok := b.(*os.File)
	if !ok {
		return
	}
	p.mu.Lock()
	named, mine := p.open[f]
	delete(p.open, f)
	p.mu.Unlock()
	if mine {
		p.record(closeFile(f, named))
	}
}

// release closes the files not given back (a writer aborted, or closed
// with buffers it keeps), and returns the first error of closing any.
func (p *pageFiles) release() error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for f, named := range p.open {
		if err := closeFile(f, named); p.err == nil {
			p.err = err
		}
	}
	clear(p.open)
	return p.err
}

func (p *pageFiles) record(err error) {
	p.mu.Lock()
	if p.err == nil {
		p.err = err
	}
	p.mu.Unlock()
}

func closeFile(f *os.File, named bool) error {
	err := f.Close()
	if named {
		if rerr := os.Remove(f.Name()); err == nil && !errors.Is(rerr, os.ErrNotExist) {
			err = rerr
		}
	}
	if err != nil {
		return fmt.Errorf("page buffer: %w", err)
	}
	return nil
}

// failedBuffer is a page buffer that could not be made: every call
// returns why.
type failedBuffer struct{ err error }

func (b failedBuffer) Read([]byte) (int, error)       { return 0, b.err }
func (b failedBuffer) Write([]byte) (int, error)      { return 0, b.err }
func (b failedBuffer) Seek(int64, int) (int64, error) { return 0, b.err }
