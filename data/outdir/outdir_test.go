package outdir

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// files lists what dir holds, the lock file aside; nil when it is absent.
func files(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, e := range entries {
		if e.Name() != LockFile {
			names = append(names, e.Name())
		}
	}
	return names
}

// mustClaim claims dir in mode, failing the test if it cannot.
func mustClaim(t *testing.T, dir string, mode Mode) *Dir {
	t.Helper()
	d, err := Claim(t.Context(), dir, mode)
	if err != nil {
		t.Fatalf("claim %s (mode %d): %v", dir, mode, err)
	}
	return d
}

func write(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestClaimModes(t *testing.T) {
	tests := []struct {
		name      string
		setup     func(t *testing.T, dir string) // nil: dir absent
		mode      Mode
		wantErr   error
		wantFresh bool
		wantFiles []string // after Close
	}{
		{name: "new, absent", mode: New, wantFresh: true, wantFiles: []string{}},
		{name: "new, empty", setup: func(t *testing.T, dir string) { os.Mkdir(dir, 0o755) }, mode: New, wantFresh: true, wantFiles: []string{}},
		{name: "new, not empty", setup: func(t *testing.T, dir string) { os.Mkdir(dir, 0o755); write(t, filepath.Join(dir, "a")) },
			mode: New, wantErr: ErrNotEmpty, wantFiles: []string{"a"}},
		{name: "new, only an old lock file", setup: func(t *testing.T, dir string) { os.Mkdir(dir, 0o755); write(t, filepath.Join(dir, LockFile)) },
			mode: New, wantFresh: true, wantFiles: []string{}},
		{name: "resume, not empty", setup: func(t *testing.T, dir string) { os.Mkdir(dir, 0o755); write(t, filepath.Join(dir, "a")) },
			mode: Resume, wantFiles: []string{"a"}},
		{name: "resume, absent", mode: Resume, wantFresh: true, wantFiles: []string{}},
		{name: "overwrite, not empty", setup: func(t *testing.T, dir string) {
			os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
			write(t, filepath.Join(dir, "a"))
			write(t, filepath.Join(dir, "sub", "b"))
		}, mode: Overwrite, wantFresh: true, wantFiles: []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "parent", "out")
			if tt.setup != nil {
				os.MkdirAll(filepath.Dir(dir), 0o755)
				tt.setup(t, dir)
			}
			d, err := Claim(t.Context(), dir, tt.mode)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("got error %v, want %v", err, tt.wantErr)
			}
			if err == nil {
				if d.Fresh() != tt.wantFresh {
					t.Errorf("got fresh %v, want %v", d.Fresh(), tt.wantFresh)
				}
				if err := d.Close(); err != nil {
					t.Fatal(err)
				}
				if _, err := os.Stat(filepath.Join(dir, LockFile)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("the lock file is left after Close: %v", err)
				}
			}
			if got := files(t, dir); !slices.Equal(got, tt.wantFiles) {
				t.Errorf("got files %q, want %q", got, tt.wantFiles)
			}
		})
	}
}

func TestClaimFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	write(t, path)
	if _, err := Claim(t.Context(), path, New); err == nil || !strings.Contains(err.Error(), "is a file") {
		t.Errorf("got %v, want an error saying it is a file", err)
	}
}

func TestAbandon(t *testing.T) {
	tests := []struct {
		name      string
		setup     func(t *testing.T, dir string)
		mode      Mode
		wantFiles []string // nil: the directory is gone
	}{
		{name: "created", mode: New, wantFiles: nil},
		{name: "empty before", setup: func(t *testing.T, dir string) { os.Mkdir(dir, 0o755) }, mode: New, wantFiles: []string{}},
		{name: "resumed", setup: func(t *testing.T, dir string) { os.Mkdir(dir, 0o755); write(t, filepath.Join(dir, "a")) },
			mode: Resume, wantFiles: []string{"a", "b"}},
		{name: "overwritten", setup: func(t *testing.T, dir string) { os.Mkdir(dir, 0o755); write(t, filepath.Join(dir, "a")) },
			mode: Overwrite, wantFiles: []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			if tt.setup != nil {
				tt.setup(t, dir)
			}
			d := mustClaim(t, dir, tt.mode)
			write(t, filepath.Join(dir, "b"))
			os.MkdirAll(filepath.Join(dir, "parts", "x"), 0o755)
			if !d.Fresh() {
				os.Remove(filepath.Join(dir, "parts", "x"))
				os.Remove(filepath.Join(dir, "parts"))
			}
			if err := d.Abandon(); err != nil {
				t.Fatal(err)
			}
			if got := files(t, dir); !slices.Equal(got, tt.wantFiles) {
				t.Errorf("got files %q, want %q", got, tt.wantFiles)
			}
			// Released either way.
			mustClaim(t, dir, Resume).Close()
		})
	}
}

// TestBusyInProcess: a second claim of a held directory fails at once,
// naming this process, and succeeds once the first is released.
func TestBusyInProcess(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no locks")
	}
	dir := filepath.Join(t.TempDir(), "out")
	d := mustClaim(t, dir, New)
	for _, mode := range []Mode{New, Resume, Overwrite} {
		_, err := Claim(t.Context(), dir, mode)
		var busy *BusyError
		if !errors.As(err, &busy) || !errors.Is(err, ErrBusy) {
			t.Fatalf("mode %d: got %v, want a BusyError", mode, err)
		}
		if busy.Holder.PID != os.Getpid() || time.Since(busy.Holder.Started) > time.Hour || busy.Holder.Command == "" {
			t.Errorf("mode %d: got holder %+v, want this process, started now", mode, busy.Holder)
		}
		if msg := err.Error(); !strings.Contains(msg, "process "+strconv.Itoa(os.Getpid())) || !strings.Contains(msg, dir) {
			t.Errorf("got message %q, want the pid and the directory", msg)
		}
	}
	d.Close()
	mustClaim(t, dir, New).Close()
}

// TestRacingFreshStarts: of goroutines claiming one absent directory at
// once, one wins, the others are told it is busy or (once the winner has
// written and released it) not empty; abandoning winners leave nothing.
func TestRacingFreshStarts(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no locks")
	}
	for try := range 50 {
		abandon := try%2 == 1
		dir := filepath.Join(t.TempDir(), "out")
		var (
			wg          sync.WaitGroup
			mu          sync.Mutex
			wins, other int
		)
		for range 4 {
			wg.Go(func() {
				d, err := Claim(t.Context(), dir, New)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					wins++
					write(t, filepath.Join(dir, fmt.Sprintf("w%d", wins)))
					if abandon {
						d.Abandon()
					} else {
						d.Close()
					}
				case errors.Is(err, ErrBusy), errors.Is(err, ErrNotEmpty):
					other++
				default:
					t.Errorf("try %d: %v", try, err)
				}
			})
		}
		wg.Wait()
		got := files(t, dir)
		if !abandon && (wins != 1 || !slices.Equal(got, []string{"w1"})) {
			t.Fatalf("try %d: %d winners, files %q; want 1 winner and its file", try, wins, got)
		}
		if abandon && (wins < 1 || len(got) != 0) {
			t.Fatalf("try %d: %d winners, files %q; want winners that left nothing", try, wins, got)
		}
	}
}

// TestHelperHolder is not a test: run by TestBusyAcrossProcesses as a
// separate process, it claims a directory, says so, and holds it until its
// standard input closes or it is killed.
func TestHelperHolder(t *testing.T) {
	dir := os.Getenv("OUTDIR_HOLD")
	if dir == "" {
		t.Skip("a helper process")
	}
	d, err := Claim(context.Background(), dir, New)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("held")
	bufio.NewReader(os.Stdin).ReadString('\n')
	d.Close()
	os.Exit(0)
}

// TestBusyAcrossProcesses: a directory held by another process is busy,
// with that process's id; once the holder is killed (no chance to clean
// up), the directory can be claimed again.
func TestBusyAcrossProcesses(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no locks")
	}
	dir := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHolder$")
	cmd.Env = append(os.Environ(), "OUTDIR_HOLD="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if line != "held\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper said %q, want held", line)
	}
	_, err = Claim(t.Context(), dir, Resume)
	var busy *BusyError
	if !errors.As(err, &busy) || busy.Holder.PID != cmd.Process.Pid {
		t.Errorf("got %v, want busy with holder pid %d", err, cmd.Process.Pid)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	mustClaim(t, dir, Resume).Close()
}

func TestCommand(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"/usr/bin/distill"}, "distill"},
		{[]string{"bin/distill", "--quiet", "rollout", "--out", "x"}, "distill --quiet rollout --out x"},
		{[]string{"distill", "x" + strings.Repeat("y", 200)}, "distill x" + strings.Repeat("y", maxCommand-10) + "…"},
	}
	for _, tt := range tests {
		if got := command(tt.args); got != tt.want {
			t.Errorf("command(%q): got %q, want %q", tt.args, got, tt.want)
		}
	}
}

func TestWrite(t *testing.T) {
	errFail := errors.New("fail")
	for _, fail := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "out")
		err := Write(t.Context(), dir, New, func(d *Dir) error {
			write(t, filepath.Join(d.Path(), "a"))
			if fail {
				return errFail
			}
			return nil
		})
		want, wantFiles := error(nil), []string{"a"}
		if fail {
			want, wantFiles = errFail, nil
		}
		if !errors.Is(err, want) {
			t.Errorf("fail %v: got %v, want %v", fail, err, want)
		}
		if got := files(t, dir); !slices.Equal(got, wantFiles) {
			t.Errorf("fail %v: got files %q, want %q", fail, got, wantFiles)
		}
	}
}

func TestInside(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "out", "sub"), 0o755)
	os.MkdirAll(filepath.Join(root, "other"), 0o755)
	if err := os.Symlink(filepath.Join(root, "out"), filepath.Join(root, "link")); err != nil {
		t.Skip("no symbolic links:", err)
	}
	tests := []struct {
		path, dir string
		want      bool
	}{
		{"out/a.parquet", "out", true},
		{"out", "out", true},
		{"out/sub/x", "out", true},
		{"link/a.parquet", "out", true},
		{"out/a.parquet", "link", true},
		{"out/new/deeper/x", "out", true},
		{"other/a.parquet", "out", false},
		{"outside.parquet", "out", false},
		{"out2/a", "out", false},
		{"out", "out/sub", false},
	}
	for _, tt := range tests {
		got, err := Inside(filepath.Join(root, tt.path), filepath.Join(root, tt.dir))
		if err != nil || got != tt.want {
			t.Errorf("Inside(%s, %s): got %v, %v; want %v", tt.path, tt.dir, got, err, tt.want)
		}
	}
	t.Chdir(root)
	if got, err := Inside("out/a", filepath.Join(root, "out")); err != nil || !got {
		t.Errorf("relative path: got %v, %v; want true", got, err)
	}
}

func TestAbandonIfEmpty(t *testing.T) {
	tests := []struct {
		name      string
		existing  bool
		write     func(t *testing.T, dir string)
		wantFiles []string // nil: the directory is gone
	}{
		{name: "nothing written", wantFiles: nil},
		{name: "empty directories", write: func(t *testing.T, dir string) { os.MkdirAll(filepath.Join(dir, "variants", "full"), 0o755) }, wantFiles: nil},
		{name: "a file deep down", write: func(t *testing.T, dir string) {
			os.MkdirAll(filepath.Join(dir, "variants", "full"), 0o755)
			write(t, filepath.Join(dir, "variants", "full", "run.json"))
		}, wantFiles: []string{"variants"}},
		{name: "resumed", existing: true, wantFiles: []string{"old"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			mode := New
			if tt.existing {
				os.Mkdir(dir, 0o755)
				write(t, filepath.Join(dir, "old"))
				mode = Resume
			}
			d := mustClaim(t, dir, mode)
			if tt.write != nil {
				tt.write(t, dir)
			}
			if err := d.AbandonIfEmpty(); err != nil {
				t.Fatal(err)
			}
			if got := files(t, dir); !slices.Equal(got, tt.wantFiles) {
				t.Errorf("got files %q, want %q", got, tt.wantFiles)
			}
		})
	}
}
