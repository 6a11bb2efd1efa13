// Package pysbd splits documents into sentences with pysbd, the splitter
// of the S2G-RAG authors' code, for the loop's --splitter pysbd
// (rollout.Options.Splitter). pysbd is a Python library: Start runs it in
// a Python process of its own (split.py, embedded), which answers one
// request at a time over its standard input and output, and stays up
// until Close. Splits are serialised; a process that dies or answers
// what cannot be read fails every later split with the reason.
package pysbd

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"time"
)

//go:embed split.py
var script string

// Version is the pysbd release the authors' code and distill's tests use
// (`make models` installs it); another one is used but named in Name.
const Version = "0.3.4"

// startTimeout bounds the wait for the process's first line (Python and
// pysbd loading).
const startTimeout = time.Minute

// Splitter is a running pysbd process. Its methods are safe for concurrent
// use.
type Splitter struct {
	mu      sync.Mutex
	cmd     *exec.Cmd
	in      io.WriteCloser
	out     *bufio.Reader
	stderr  *tailBuffer
	version string
	err     error // set once the process cannot be used
}

// Start runs split.py with the Python interpreter python (a path or a
// name on PATH) and waits until pysbd is loaded. It fails with the reason
// when the interpreter cannot run or pysbd is not installed for it.
func Start(ctx context.Context, python string) (*Splitter, error) {
	if python == "" {
		return nil, errors.New("pysbd: no Python interpreter given")
	}
	cmd := exec.Command(python, "-u", "-c", script)
	s := &Splitter{cmd: cmd, stderr: &tailBuffer{max: 4096}}
	cmd.Stderr = s.stderr
	var err error
	if s.in, err = cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("pysbd: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("pysbd: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("pysbd: start %s: %w", python, err)
	}
	s.out = bufio.NewReaderSize(stdout, 1<<16)

	type hello struct {
		Pysbd string `json:"pysbd"`
		Error string `json:"error"`
	}
	ready := make(chan error, 1)
	var h hello
	go func() { ready <- s.read(&h) }()
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case err = <-ready:
	case <-ctx.Done():
		err = ctx.Err()
	case <-timer.C:
		err = fmt.Errorf("no answer in %v", startTimeout)
	}
	if err == nil && h.Error != "" {
		err = errors.New(h.Error)
	}
	if err == nil && h.Pysbd == "" {
		err = errors.New("the process did not say which pysbd it loaded")
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("pysbd: %s: %w%s", python, err, s.stderr.suffix())
	}
	s.version = h.Pysbd
	return s, nil
}

// Name names the splitter and the pysbd release it runs ("pysbd 0.3.4"),
// as run.json records it.
func (s *Splitter) Name() string { return "pysbd " + s.version }

// Split returns the sentences of each text: the text cut into paragraphs
// at blank lines, each split by pysbd (English, clean=False), sentences
// trimmed and empty ones left out.
func (s *Splitter) Split(texts []string) ([][]string, error) {
	req, err := json.Marshal(struct {
		Texts []string `json:"texts"`
	}{texts})
	if err != nil {
		return nil, fmt.Errorf("pysbd: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, s.err
	}
	var answer struct {
		Sentences [][]string `json:"sentences"`
		Error     string     `json:"error"`
	}
	_, err = s.in.Write(append(req, '\n'))
	if err == nil {
		err = s.read(&answer)
	}
	if err != nil {
		// The process is gone or out of step: no later answer can be trusted.
		s.err = fmt.Errorf("pysbd: the splitter's process failed: %w%s", err, s.stderr.suffix())
		return nil, s.err
	}
	if answer.Error != "" {
		return nil, fmt.Errorf("pysbd: %s", answer.Error)
	}
	if len(answer.Sentences) != len(texts) {
		return nil, fmt.Errorf("pysbd: %d texts sent, %d split", len(texts), len(answer.Sentences))
	}
	return answer.Sentences, nil
}

// read reads one line of the process's output into v.
func (s *Splitter) read(v any) error {
	line, err := s.out.ReadBytes('\n')
	if err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("the process ended")
		}
		return err
	}
	if err := json.Unmarshal(line, v); err != nil {
		return fmt.Errorf("unreadable answer %.200q: %w", line, err)
	}
	return nil
}

// Close ends the process. It is idempotent.
func (s *Splitter) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return nil
	}
	s.in.Close() // split.py ends at the end of its input
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		s.cmd.Process.Kill()
		<-done
	}
	s.cmd = nil
	if s.err == nil {
		s.err = errors.New("pysbd: the splitter is closed")
	}
	return nil
}

// tailBuffer keeps the last max bytes written to it: the process's
// standard error, for messages.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

// suffix is ": <standard error>" when the process wrote any, else "".
func (b *tailBuffer) suffix() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if text := strings.TrimSpace(string(bytes.ToValidUTF8(b.buf, nil))); text != "" {
		return " (standard error: " + text + ")"
	}
	return ""
}
