package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/finetune"
	"github.com/distill-rag/distill/finetune/trainer"
)

// Name is the backend's name in job.json.
const Name = "slurm"

// SbatchFile is the batch script Submit writes into the job directory.
const SbatchFile = "job.sbatch"

// Options configure the backend: the trainer, the resources the batch job
// asks for (empty ones are left to the cluster's defaults), and the Slurm
// commands.
type Options struct {
	// Trainer chooses and configures the trainer.
	Trainer trainer.Options
	// Partition and Account are --partition and --account.
	Partition, Account string
	// GPUs is the number of GPUs, --gres=gpu:N (default 1; negative for
	// none).
	GPUs int
	// Time is the time limit, --time (for example "12:00:00").
	Time string
	// CPUs is --cpus-per-task.
	CPUs int
	// Mem is the memory per node, --mem (for example "64G").
	Mem string
	// ExtraSBATCH are more directives, with or without the "#SBATCH "
	// prefix (for example "--constraint=h100" or "--qos=high").
	ExtraSBATCH []string
	// The commands (default "sbatch", "squeue", "sacct" and "scancel"),
	// looked up in PATH.
	Sbatch, Squeue, Sacct, Scancel string
}

// Backend submits trainers to Slurm. It keeps no state of its own.
type Backend struct {
	opts Options
}

var _ finetune.Backend = (*Backend)(nil)

// New returns the backend.
func New(opts Options) *Backend {
	if opts.GPUs == 0 {
		opts.GPUs = 1
	}
	for _, c := range []struct {
		cmd  *string
		name string
	}{{&opts.Sbatch, "sbatch"}, {&opts.Squeue, "squeue"}, {&opts.Sacct, "sacct"}, {&opts.Scancel, "scancel"}} {
		if *c.cmd == "" {
			*c.cmd = c.name
		}
	}
	return &Backend{opts: opts}
}

// Name returns "slurm".
func (b *Backend) Name() string { return Name }

// The keys of State.Data.
const (
	keyCluster = "cluster" // as sbatch --parsable printed it, for -M
	keyScript  = "script"
	keyState   = "slurm_state" // the last state Slurm gave
	keyCancel  = "cancel_requested"
)

// Submit writes the trainer's files and job.sbatch into job.Dir and
// submits the batch job. An earlier run's log and exit status are removed.
func (b *Backend) Submit(ctx context.Context, job finetune.Job) (finetune.State, error) {
	plan, err := trainer.Prepare(job, b.opts.Trainer)
	if err != nil {
		return finetune.State{}, err
	}
	script, err := b.sbatchScript(job, plan)
	if err != nil {
		return finetune.State{}, err
	}
	if err := data.WriteFileAtomic(job.Path(SbatchFile), []byte(script)); err != nil {
		return finetune.State{}, err
	}
	for _, name := range []string{trainer.ExitFile, trainer.LogFile} {
		if err := os.Remove(job.Path(name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return finetune.State{}, err
		}
	}
	out, err := b.run(ctx, job.Dir, b.opts.Sbatch, "--parsable", SbatchFile)
	if err != nil {
		return finetune.State{}, err
	}
	id, cluster, err := parseSbatch(out)
	if err != nil {
		return finetune.State{}, err
	}
	now := time.Now().UTC()
	st := finetune.State{
		Backend:     Name,
		ID:          id,
		Status:      finetune.StatusQueued,
		LogPath:     trainer.LogFile,
		SubmittedAt: now,
		UpdatedAt:   now,
		Data:        map[string]string{keyScript: SbatchFile, trainer.DataOutputDir: plan.OutputDir},
	}
	if cluster != "" {
		st.Data[keyCluster] = cluster
	}
	return st, nil
}

// sbatchScript returns job.sbatch: the directives, a cd to the job
// directory, and the plan's script.
func (b *Backend) sbatchScript(job finetune.Job, plan trainer.Plan) (string, error) {
	dir, err := filepath.Abs(job.Dir)
	if err != nil {
		return "", err
	}
	if strings.ContainsAny(dir, " \t\n") {
		return "", fmt.Errorf("job directory %q: #SBATCH --output cannot hold white space", dir)
	}
	name := job.Name
	if name == "" {
		name = "s2g-judge"
	}
	o := b.opts
	// In --output, % starts a pattern (%j, the job id); %% is a %.
	h := []string{
		"#SBATCH --job-name=" + nameRE.ReplaceAllString(name, "-"),
		"#SBATCH --output=" + strings.ReplaceAll(filepath.Join(dir, trainer.LogFile), "%", "%%"),
		"#SBATCH --open-mode=append",
	}
	if o.GPUs > 0 {
		h = append(h, "#SBATCH --gres=gpu:"+strconv.Itoa(o.GPUs))
	}
	for _, d := range []struct{ flag, value string }{
		{"time", o.Time}, {"partition", o.Partition}, {"account", o.Account}, {"cpus-per-task", positive(o.CPUs)}, {"mem", o.Mem},
	} {
		if d.value != "" {
			h = append(h, "#SBATCH --"+d.flag+"="+d.value)
		}
	}
	for _, x := range o.ExtraSBATCH {
		x = strings.TrimSpace(x)
		if strings.ContainsAny(x, "\n\r") {
			return "", fmt.Errorf("extra #SBATCH line %q: one line each", x)
		}
		if !strings.HasPrefix(x, "#SBATCH") {
			x = "#SBATCH " + x
		}
		h = append(h, x)
	}
	h = append(h, "", "cd "+trainer.Quote(dir)+" || exit 1")
	return plan.Script(h...), nil
}

var nameRE = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

func positive(n int) string {
	if n <= 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// parseSbatch reads `sbatch --parsable`'s output: "ID" or "ID;CLUSTER".
func parseSbatch(out string) (id, cluster string, err error) {
	lines := strings.Fields(out)
	if len(lines) == 0 {
		return "", "", errors.New("sbatch printed no job id")
	}
	id, cluster, _ = strings.Cut(lines[len(lines)-1], ";")
	if _, err := strconv.ParseUint(id, 10, 64); err != nil {
		return "", "", fmt.Errorf("sbatch printed %q, not a job id", strings.TrimSpace(out))
	}
	return id, cluster, nil
}

// Status asks Slurm where the job is and reads its progress from the log.
func (b *Backend) Status(ctx context.Context, job finetune.Job, st finetune.State) (finetune.State, error) {
	if st.Status.Terminal() {
		return st, nil
	}
	state, exitCode, why, err := b.slurmState(ctx, st)
	if err != nil {
		return st, err
	}
	status := classify(state)
	switch {
	case state == "":
		// Slurm does not say (accounting is off): the exit file does.
		code, ok, err := trainer.ReadExit(job.Dir)
		if err != nil {
			return st, err
		}
		if !ok {
			return st, fmt.Errorf("slurm job %s: neither squeue nor sacct knows it, and it recorded no exit status: %w", st.ID, why)
		}
		state, exitCode, status = "COMPLETED", strconv.Itoa(code)+":0", finetune.StatusSucceeded
		if code != 0 {
			state, status = "FAILED", finetune.StatusFailed
		}
	case status == "":
		status = finetune.StatusRunning // a state this package does not know: not over
	}
	l, err := trainer.ReadLog(job.Path(st.LogPath))
	if err != nil {
		return st, err
	}
	st = l.Update(st)
	st = st.WithData(keyState, state)
	st.UpdatedAt = time.Now().UTC()
	if !status.Terminal() {
		st.Status, st.Message = status, ""
		if _, ok := st.Data[keyCancel]; ok {
			st.Message = "cancel requested"
		}
		return st, nil
	}
	st.FinishedAt = st.UpdatedAt
	switch _, cancelled := st.Data[keyCancel]; {
	case cancelled || status == finetune.StatusCancelled:
		st.Status, st.Message = finetune.StatusCancelled, "cancelled"
	case status == finetune.StatusFailed:
		reason := fmt.Sprintf("slurm job %s ended %s", st.ID, state)
		if exitCode != "" {
			reason += " (exit code " + exitCode + ")"
		}
		st.Status, st.Message = finetune.StatusFailed, l.Explain(reason)
	default:
		res, err := trainer.Result(job, trainer.OutputDir(st), l)
		if err != nil {
			st.Status, st.Message = finetune.StatusFailed, l.Explain(fmt.Sprintf("slurm job %s completed but %v", st.ID, err))
			break
		}
		st.Status, st.Message, st.Result = finetune.StatusSucceeded, "", res
	}
	return st, nil
}

// slurmState returns the job's state as squeue shows it while it is queued
// or running, then as sacct has it (with the exit code). When neither
// knows the job, state is "" and why holds their answers; err is for ctx.
func (b *Backend) slurmState(ctx context.Context, st finetune.State) (state, exitCode string, why, err error) {
	out, qerr := b.run(ctx, "", b.opts.Squeue, b.clusterArgs(st, "-h", "-j", st.ID, "-o", "%T")...)
	if ctx.Err() != nil {
		return "", "", nil, ctx.Err()
	}
	if qerr == nil {
		// squeue fails for a job it no longer knows.
		state = lastLine(out)
		if s := classify(state); state != "" && !s.Terminal() {
			return state, "", nil, nil
		}
	}
	out, aerr := b.run(ctx, "", b.opts.Sacct, b.clusterArgs(st, "-n", "-X", "-j", st.ID, "-o", "State,ExitCode", "-P")...)
	if ctx.Err() != nil {
		return "", "", nil, ctx.Err()
	}
	if aerr == nil {
		if line := lastLine(out); line != "" {
			state, exitCode, _ = strings.Cut(line, "|")
			return strings.TrimSpace(state), strings.TrimSpace(exitCode), nil, nil
		}
		aerr = errors.New("sacct: no record")
	}
	if state != "" {
		return state, "", nil, nil // squeue still shows the ended job
	}
	if qerr == nil {
		qerr = errors.New("squeue: not in the queue")
	}
	return "", "", errors.Join(qerr, aerr), nil
}

// lastLine returns the last non-empty line of a command's output, leaving
// out the "CLUSTER: name" headers of -M.
func lastLine(out string) string {
	last := ""
	for line := range strings.Lines(out) {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "CLUSTER:") {
			last = line
		}
	}
	return last
}

func (b *Backend) clusterArgs(st finetune.State, args ...string) []string {
	if c := st.Data[keyCluster]; c != "" {
		return append([]string{"-M", c}, args...)
	}
	return args
}

// classify maps a Slurm job state (squeue's %T, sacct's State, such as
// "CANCELLED by 1000") to a status; "" for an unknown state.
func classify(state string) finetune.Status {
	f := strings.Fields(state)
	if len(f) == 0 {
		return ""
	}
	switch strings.TrimRight(f[0], "+") {
	case "PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD", "RESIZING":
		return finetune.StatusQueued
	case "RUNNING", "COMPLETING", "SUSPENDED", "STOPPED", "SIGNALING", "STAGE_OUT", "RESV_DEL_HOLD":
		return finetune.StatusRunning
	case "COMPLETED":
		return finetune.StatusSucceeded
	case "CANCELLED":
		return finetune.StatusCancelled
	case "FAILED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "BOOT_FAIL", "DEADLINE", "PREEMPTED", "REVOKED", "SPECIAL_EXIT":
		return finetune.StatusFailed
	}
	return ""
}

// Cancel runs scancel on the job, unless it has ended.
func (b *Backend) Cancel(ctx context.Context, job finetune.Job, st finetune.State) (finetune.State, error) {
	st, err := b.Status(ctx, job, st) // as it is when it has ended
	if err != nil || st.Status.Terminal() {
		return st, err
	}
	if _, err := b.run(ctx, "", b.opts.Scancel, b.clusterArgs(st, st.ID)...); err != nil {
		// It may have ended meanwhile.
		if again, serr := b.Status(ctx, job, st); serr == nil && again.Status.Terminal() {
			return again, nil
		}
		return st, err
	}
	now := time.Now().UTC()
	st = st.WithData(keyCancel, now.Format(time.RFC3339Nano))
	st.Status, st.Message = finetune.StatusCancelled, "cancelled"
	st.UpdatedAt, st.FinishedAt = now, now
	return st, nil
}

// run runs a Slurm command and returns its standard output; the error
// holds what it printed on standard error.
func (b *Backend) run(ctx context.Context, dir, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second // a command's leftover children may hold the pipes
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}
