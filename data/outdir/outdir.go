package outdir

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// LockFile is the name of the lock file in an output directory.
const LockFile = ".distill.lock"

// Mode says what Claim accepts in a directory that is not empty.
type Mode int

const (
	// New refuses a directory that holds anything (ErrNotEmpty).
	New Mode = iota
	// Resume accepts what an earlier run left there.
	Resume
	// Overwrite removes what the directory holds.
	Overwrite
)

// Errors that callers branch on.
var (
	// ErrNotEmpty is the cause of a Claim in mode New of a directory
	// that is not empty.
	ErrNotEmpty = errors.New("output directory is not empty")
	// ErrBusy is the cause of a Claim of a directory that another writer
	// holds; the error is a *BusyError.
	ErrBusy = errors.New("output directory is in use")
)

// Holder is who holds a directory, as its lock file says.
type Holder struct {
	PID     int       `json:"pid"`
	Command string    `json:"command,omitempty"`
	Started time.Time `json:"started"`
}

// BusyError is the error of a Claim of a directory that another writer
// holds.
type BusyError struct {
	Dir string
	// Holder is the zero Holder when the lock file could not be read
	// (the holder had not written it yet).
	Holder Holder
}

func (e *BusyError) Error() string {
	h := e.Holder
	if h.PID == 0 {
		return fmt.Sprintf("%s is in use by another process: wait for it to end, or choose another output directory", e.Dir)
	}
	who := fmt.Sprintf("process %d", h.PID)
	if h.Command != "" {
		who += " (" + h.Command + ")"
	}
	return fmt.Sprintf("%s is in use by %s, started %s: wait for it to end, or choose another output directory",
		e.Dir, who, h.Started.Local().Format("2006-01-02 15:04:05 MST"))
}

// Is makes errors.Is(err, ErrBusy) hold.
func (e *BusyError) Is(target error) bool { return target == ErrBusy }

// Dir is an output directory claimed by this process.
type Dir struct {
	path string
	lock *os.File
	// fresh: empty or absent when claimed (or emptied by Overwrite);
	// created: absent, and made by Claim.
	fresh, created bool
}

// Path returns the directory's path as given to Claim.
func (d *Dir) Path() string { return d.path }

// Fresh says whether the directory was empty or absent when claimed, or
// emptied by mode Overwrite: nothing in it predates this writer.
func (d *Dir) Fresh() bool { return d.fresh }

// Claim takes dir for this process, as the package documentation says:
// it creates it (and its parents) when absent, locks it, and checks what
// it holds against mode. The caller releases it with Close or Abandon.
func Claim(ctx context.Context, dir string, mode Mode) (*Dir, error) {
	if dir == "" {
		return nil, errors.New("no output directory given")
	}
	// A writer abandoning a fresh directory removes its lock file and the
	// directory: a claim that opened the file or looked at the directory
	// just before that starts again. Any attempt after the first needs
	// another writer to have claimed and abandoned the directory since.
	var err error
	for range 5 {
		var d *Dir
		d, err = claim(ctx, dir)
		if errors.Is(err, errRace) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := d.check(mode); err != nil {
			d.Close()
			return nil, err
		}
		return d, nil
	}
	return nil, fmt.Errorf("claim %s: %w", dir, err)
}

// errRace is the cause of a claim that lost a race with a writer that
// abandoned the directory.
var errRace = errors.New("the directory was removed while it was claimed")

func claim(ctx context.Context, dir string) (*Dir, error) {
	d := &Dir{path: dir}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, fmt.Errorf("output directory: %w", err)
	}
	switch err := os.Mkdir(dir, 0o755); {
	case err == nil:
		d.created = true
	case errors.Is(err, os.ErrExist):
		fi, serr := os.Stat(dir)
		switch {
		case errors.Is(serr, os.ErrNotExist):
			return nil, errRace // abandoned and removed since
		case serr != nil:
			return nil, fmt.Errorf("output directory: %w", serr)
		case !fi.IsDir():
			return nil, fmt.Errorf("output directory %s is a file", dir)
		}
	default:
		return nil, fmt.Errorf("output directory: %w", err)
	}
	name := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if errors.Is(err, os.ErrNotExist) {
		return nil, errRace
	}
	if err != nil {
		return nil, fmt.Errorf("lock output directory: %w", err)
	}
	locked, err := lock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	if !locked {
		h := readHolder(ctx, f)
		f.Close()
		return nil, &BusyError{Dir: dir, Holder: h}
	}
	// The lock holds only if the file is still the directory's lock file.
	if same, err := sameFile(f, name); err != nil || !same {
		f.Close()
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("lock %s: %w", name, err)
		}
		return nil, errRace
	}
	d.lock = f
	if err := d.writeHolder(); err != nil {
		d.Close()
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	return d, nil
}

// check looks at what the directory holds, under the lock.
func (d *Dir) check(mode Mode) error {
	names, err := d.contents()
	if err != nil {
		return err
	}
	d.fresh = len(names) == 0
	switch {
	case d.fresh, mode == Resume:
		return nil
	case mode == New:
		return fmt.Errorf("%s: %w", d.path, ErrNotEmpty)
	}
	if err := d.Empty(); err != nil {
		return fmt.Errorf("overwrite %s: %w", d.path, err)
	}
	return nil
}

// Empty removes everything the directory holds, and makes it fresh: what
// Abandon removes from then on is all of it.
func (d *Dir) Empty() error {
	names, err := d.contents()
	if err != nil {
		return err
	}
	if err := d.removeContents(names); err != nil {
		return err
	}
	d.fresh = true
	return nil
}

// contents lists the names in the directory but the lock file.
func (d *Dir) contents() ([]string, error) {
	entries, err := os.ReadDir(d.path)
	if err != nil {
		return nil, fmt.Errorf("output directory: %w", err)
	}
	var names []string
	for _, e := range entries {
		if e.Name() != LockFile {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

func (d *Dir) removeContents(names []string) error {
	for _, n := range names {
		if err := os.RemoveAll(filepath.Join(d.path, n)); err != nil {
			return err
		}
	}
	return nil
}

// Close releases the directory and keeps what it holds. It may be called
// more than once, and after Abandon.
func (d *Dir) Close() error {
	if d == nil || d.lock == nil {
		return nil
	}
	// Removed before the lock is released: a writer that opened the file
	// before finds, once it holds the lock, that it is no longer the lock
	// file, and starts again with a new one.
	os.Remove(filepath.Join(d.path, LockFile))
	err := d.lock.Close() // releases the lock
	d.lock = nil
	return err
}

// Abandon releases the directory after a failure: when the claim found it
// empty or absent (or emptied it), everything in it is removed, and the
// directory too if Claim created it, so that a failed fresh start leaves
// nothing behind; otherwise what it holds is kept, as Close does.
func (d *Dir) Abandon() error {
	if d == nil || d.lock == nil {
		return nil
	}
	if !d.fresh {
		return d.Close()
	}
	names, err := d.contents()
	if err == nil {
		err = d.removeContents(names)
	}
	if err != nil {
		d.Close()
		return fmt.Errorf("remove the output of a failed start: %w", err)
	}
	d.Close()
	if d.created {
		os.Remove(d.path) // fails, as it should, if another writer came in
	}
	return nil
}

// AbandonIfEmpty releases the directory after a failure of a writer whose
// output can be resumed: as Abandon when the claim found it fresh and it
// holds no file yet (empty directories aside), for a rerun to start
// afresh; as Close otherwise, keeping what a resumed run goes on from.
func (d *Dir) AbandonIfEmpty() error {
	if d == nil || d.lock == nil {
		return nil
	}
	if d.fresh && !d.holdsFiles() {
		return d.Abandon()
	}
	return d.Close()
}

// holdsFiles says whether anything but directories and the lock file is
// in the directory, at any depth; true when it cannot tell.
func (d *Dir) holdsFiles() bool {
	found := false
	err := filepath.WalkDir(d.path, func(path string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !e.IsDir() && path != filepath.Join(d.path, LockFile) {
			found = true
			return filepath.SkipAll
		}
		return nil
	})
	return found || err != nil
}

// writeHolder records this process in the lock file, for the error of a
// writer that finds the directory held.
func (d *Dir) writeHolder() error {
	b, err := json.Marshal(Holder{PID: os.Getpid(), Command: command(os.Args), Started: time.Now().UTC()})
	if err != nil {
		return err
	}
	if err := d.lock.Truncate(0); err != nil {
		return err
	}
	_, err = d.lock.WriteAt(append(b, '\n'), 0)
	return err
}

// readHolder reads who holds a lock file. A holder writes it right after
// it takes the lock, so an empty file is read again a few times; the zero
// Holder when it still cannot tell.
func readHolder(ctx context.Context, f *os.File) Holder {
	for range 20 {
		var h Holder
		b, err := io.ReadAll(io.NewSectionReader(f, 0, 4096))
		if err == nil && json.Unmarshal(b, &h) == nil && h.PID != 0 {
			return h
		}
		t := time.NewTimer(5 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return Holder{}
		case <-t.C:
		}
	}
	return Holder{}
}

// command is the command line of a process, the program by its base
// name, cut to a length that reads in one line. Flags carry no secrets
// (those come from the environment).
func command(args []string) string {
	if len(args) == 0 {
		return ""
	}
	line := strings.Join(append([]string{filepath.Base(args[0])}, args[1:]...), " ")
	if r := []rune(line); len(r) > maxCommand {
		line = string(r[:maxCommand-1]) + "…"
	}
	return line
}

const maxCommand = 120

// Write claims dir, calls write with it, and releases it: with Abandon
// when write fails (a fresh start leaves nothing behind), with Close
// otherwise. It is the whole life of an output that is not resumed.
func Write(ctx context.Context, dir string, mode Mode, write func(*Dir) error) error {
	d, err := Claim(ctx, dir, mode)
	if err != nil {
		return err
	}
	if err := write(d); err != nil {
		d.Abandon()
		return err
	}
	return d.Close()
}

// Inside says whether path is dir or lies inside it, comparing absolute
// paths with symbolic links resolved as far as they exist: an input there
// would be removed by Overwrite, or overwritten.
func Inside(path, dir string) (bool, error) {
	p, err := resolve(path)
	if err != nil {
		return false, err
	}
	d, err := resolve(dir)
	if err != nil {
		return false, err
	}
	rel, err := filepath.Rel(d, p)
	if err != nil {
		return false, nil
	}
	return rel == "." || (rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))), nil
}

// resolve returns the absolute path of path with the symbolic links of its
// longest existing prefix resolved.
func resolve(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	rest := ""
	for p := abs; ; {
		r, err := filepath.EvalSymlinks(p)
		if err == nil {
			return filepath.Join(r, rest), nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(p)
		if parent == p {
			return abs, nil
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}
