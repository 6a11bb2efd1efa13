package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/distill-rag/distill/internal/stage"
)

// RecordFile is the record a finished stage leaves in its directory.
const RecordFile = "pipeline.json"

// Record says which settings and inputs a stage finished with.
type Record struct {
	Stage      string    `json:"stage"`
	Key        string    `json:"key"`
	Command    []string  `json:"command"`
	FinishedAt time.Time `json:"finished_at"`
	Seconds    float64   `json:"seconds"`
}

// Exec runs one command line (without "distill").
type Exec func(ctx context.Context, args []string) error

// What Run does with a stage.
const (
	ActionRun     = "run"
	ActionResume  = "resume"
	ActionSkip    = "up to date"
	ActionLeftOut = "not selected"
)

// Options choose what Run runs.
type Options struct {
	// From runs the stages from the first one it names on, Until up to
	// the last one it names; Only runs those it names. Each names a stage
	// ("rollout:hotpotqa") or a kind ("rollout": every dataset's). Empty,
	// they select every stage.
	From, Until, Only string
	// Force runs the selected stages even when they are up to date.
	Force bool
	// DryRun decides what would run and runs nothing.
	DryRun bool
	Exec   Exec
	Logger *slog.Logger
}

// Step is what Run did (or, dry, would do) with one stage.
type Step struct {
	Stage  Stage
	Action string
	// Why says why a stage runs: "no record", "settings or inputs
	// changed", "after rollout:x", "forced".
	Why     string
	Seconds float64
}

// Run runs the stages in order, skipping those that are up to date. It
// stops at the first stage that fails, and returns the steps taken so far
// with the error.
func Run(ctx context.Context, root string, stages []Stage, opts Options) ([]Step, error) {
	selected, err := selection(stages, opts)
	if err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	reran := map[string]bool{}      // stages that run (or would run) in this call
	unfinished := map[string]bool{} // stages left out that have not finished
	dirs := map[string]string{}
	for _, st := range stages {
		dirs[st.Name] = st.Dir
	}
	var steps []Step
	for i, st := range stages {
		if selected[i] {
			if n := slices.IndexFunc(st.Needs, func(n string) bool { return unfinished[n] }); n >= 0 {
				return steps, fmt.Errorf("pipeline: stage %s needs %s, which has not finished and is not selected", st.Name, st.Needs[n])
			}
		}
		step, key, err := decide(root, st, dirs, selected[i], opts.Force, reran)
		if err != nil {
			return steps, err
		}
		if step.Action == ActionLeftOut && step.Why == "not run yet" {
			unfinished[st.Name] = true
		}
		if step.Action == ActionRun || step.Action == ActionResume {
			reran[st.Name] = true
		}
		if opts.DryRun || step.Action == ActionSkip || step.Action == ActionLeftOut {
			steps = append(steps, step)
			continue
		}
		log.Info("stage", "stage", st.Name, "action", step.Action, "why", step.Why, "command", "distill "+strings.Join(st.CommandLine(), " "))
		step.Seconds, err = execute(ctx, root, st, key, step.Action == ActionResume, opts.Exec)
		steps = append(steps, step)
		if err != nil {
			return steps, fmt.Errorf("stage %s: %w", st.Name, err)
		}
	}
	return steps, nil
}

// selection marks the stages that opts select.
func selection(stages []Stage, opts Options) ([]bool, error) {
	if opts.Only != "" && (opts.From != "" || opts.Until != "") {
		return nil, errors.New("pipeline: --only selects stages alone; give it without --from and --until")
	}
	names := make([]string, len(stages))
	for i, st := range stages {
		names[i] = st.Name
	}
	// first and last index of the stages that name matches
	span := func(name string) (int, int, error) {
		first, last := -1, -1
		for i, st := range stages {
			if st.Name == name || st.Kind == name {
				last = i
				if first < 0 {
					first = i
				}
			}
		}
		if first < 0 {
			return 0, 0, fmt.Errorf("pipeline: no stage %q; the stages are %s", name, strings.Join(names, ", "))
		}
		return first, last, nil
	}
	lo, hi := 0, len(stages)-1
	var err error
	switch {
	case opts.Only != "":
		lo, hi, err = span(opts.Only)
	case opts.From != "" && opts.Until != "":
		if lo, _, err = span(opts.From); err == nil {
			_, hi, err = span(opts.Until)
		}
	case opts.From != "":
		lo, _, err = span(opts.From)
	case opts.Until != "":
		_, hi, err = span(opts.Until)
	}
	if err != nil {
		return nil, err
	}
	sel := make([]bool, len(stages))
	for i, st := range stages {
		sel[i] = i >= lo && i <= hi && (opts.Only == "" || st.Name == opts.Only || st.Kind == opts.Only)
	}
	return sel, nil
}

// decide says what to do with st and returns its current key.
func decide(root string, st Stage, dirs map[string]string, selected, force bool, reran map[string]bool) (Step, string, error) {
	step := Step{Stage: st}
	key, err := stageKey(root, st, dirs)
	if err != nil {
		return step, "", err
	}
	rec, haveRec, err := ReadRecord(st.Dir)
	if err != nil {
		return step, "", err
	}
	after := slices.IndexFunc(st.Needs, func(n string) bool { return reran[n] })
	switch {
	case !haveRec:
		step.Why = "not run yet"
	case after >= 0:
		step.Why = "after " + st.Needs[after]
	case rec.Key != key:
		step.Why = "settings or inputs changed"
	case force && selected:
		step.Why = "forced"
	default:
		step.Action = ActionSkip
		return step, key, nil
	}
	if !selected {
		step.Action = ActionLeftOut
		return step, key, nil
	}
	step.Action = ActionRun
	// Interrupted: started with this key and not finished (a fresh start
	// empties the directory, record included).
	if st.Resume && !haveRec && after < 0 {
		m, ok, err := readMarker(root, st.Name)
		if err != nil {
			return step, "", err
		}
		if ok && m == key {
			step.Action, step.Why = ActionResume, "interrupted"
		}
	}
	return step, key, nil
}

// execute runs st afresh (its directory emptied first) or resumes it, and
// records it once it has finished.
func execute(ctx context.Context, root string, st Stage, key string, resume bool, exec Exec) (float64, error) {
	args := st.CommandLine()
	if resume {
		args = append(args, "--resume")
	} else if err := os.RemoveAll(st.Dir); err != nil {
		return 0, fmt.Errorf("empty %s: %w", st.Dir, err)
	}
	if err := writeMarker(root, st.Name, key); err != nil {
		return 0, err
	}
	start := time.Now()
	if err := exec(ctx, args); err != nil {
		return time.Since(start).Seconds(), err
	}
	secs := time.Since(start).Seconds()
	rec := Record{Stage: st.Name, Key: key, Command: st.CommandLine(), FinishedAt: time.Now().UTC(), Seconds: secs}
	if err := stage.WriteReport(st.Dir, RecordFile, rec); err != nil {
		return secs, fmt.Errorf("pipeline: %w", err)
	}
	if err := os.Remove(filepath.Join(markerDir(root), markerName(st.Name))); err != nil {
		return secs, fmt.Errorf("pipeline: %w", err)
	}
	return secs, nil
}

// stageKey hashes what a stage's output depends on: its command line, the
// input files it names outside root (size and modification time), and the
// keys and finishing times of the stages it reads from.
func stageKey(root string, st Stage, dirs map[string]string) (string, error) {
	h := sha256.New()
	for _, a := range st.CommandLine() {
		fmt.Fprintf(h, "arg %q\n", a)
	}
	for _, in := range st.Inputs {
		if within(root, in) {
			continue // a stage's output: its need's record stands for it
		}
		if err := fingerprint(h, in); err != nil {
			return "", err
		}
	}
	for _, n := range st.Needs {
		rec, ok, err := ReadRecord(dirs[n])
		if err != nil {
			return "", err
		}
		if ok {
			fmt.Fprintf(h, "need %s %s %s\n", n, rec.Key, rec.FinishedAt.Format(time.RFC3339Nano))
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// fingerprint writes the size and modification time of the file at path,
// or of every file under the directory, to h; a value that names no file
// adds nothing.
func fingerprint(h interface{ Write([]byte) (int, error) }, path string) error {
	err := filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "file %q %d %d\n", p, fi.Size(), fi.ModTime().UnixNano())
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pipeline: input %s: %w", path, err)
	}
	return nil
}

// ReadRecord reads the record of the finished stage in dir; ok is false
// when the stage has not finished.
func ReadRecord(dir string) (Record, bool, error) {
	return readJSON[Record](dir, RecordFile)
}

// markerDir holds the keys of the stages that started and have not
// finished.
func markerDir(root string) string { return filepath.Join(root, ".pipeline") }

func markerName(name string) string { return strings.ReplaceAll(name, ":", "-") + ".json" }

type marker struct{ Key string }

func readMarker(root, name string) (string, bool, error) {
	m, ok, err := readJSON[marker](markerDir(root), markerName(name))
	return m.Key, ok, err
}

func writeMarker(root, name, key string) error {
	if err := os.MkdirAll(markerDir(root), 0o755); err != nil {
		return fmt.Errorf("pipeline: %w", err)
	}
	return stage.WriteReport(markerDir(root), markerName(name), marker{key})
}

// readJSON reads the JSON file name in dir; ok is false when there is none.
func readJSON[T any](dir, name string) (v T, ok bool, err error) {
	v, err = stage.ReadReport[T](dir, name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return v, false, nil
	case err != nil:
		return v, false, fmt.Errorf("pipeline: %w", err)
	}
	return v, true, nil
}
