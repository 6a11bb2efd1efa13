package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/finetune"
	"github.com/distill-rag/distill/finetune/trainer"
)

// Name is the backend's name in job.json.
const Name = "local"

// Options configure the backend.
type Options struct {
	// Trainer chooses and configures the trainer.
	Trainer trainer.Options
	// Grace is how long a cancelled trainer has between SIGTERM and
	// SIGKILL (default 10s).
	Grace time.Duration
}

// Backend runs trainers as processes on this machine. It keeps no state
// of its own: everything is in the job directory and the State.
type Backend struct {
	opts Options
}

var _ finetune.Backend = (*Backend)(nil)

// New returns the backend.
func New(opts Options) *Backend {
	if opts.Grace <= 0 {
		opts.Grace = 10 * time.Second
	}
	return &Backend{opts: opts}
}

// Name returns "local".
func (b *Backend) Name() string { return Name }

// The keys of State.Data.
const (
	keyPID     = "pid"        // the script's process id, which is its group's id
	keyTicks   = "start_time" // its start time, in clock ticks after boot (Linux)
	keyBoot    = "boot_id"    // the kernel's boot id (Linux)
	keyHost    = "host"
	keyStarted = "started_at"
	keyScript  = "script"
	keyCancel  = "cancel_requested" // when Cancel was first called
)

// cancelWait bounds how long Cancel waits for a trainer to stop: one that
// takes longer is left to later Status calls.
const cancelWait = 2 * time.Second

// Submit writes the trainer's files into job.Dir and starts it there. An
// earlier run's log and exit status are replaced.
func (b *Backend) Submit(ctx context.Context, job finetune.Job) (finetune.State, error) {
	if err := ctx.Err(); err != nil {
		return finetune.State{}, err
	}
	plan, err := trainer.Prepare(job, b.opts.Trainer)
	if err != nil {
		return finetune.State{}, err
	}
	if err := data.WriteFileAtomic(job.Path(trainer.ScriptFile), []byte(plan.Script())); err != nil {
		return finetune.State{}, err
	}
	if err := os.Remove(job.Path(trainer.ExitFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return finetune.State{}, err
	}
	log, err := os.OpenFile(job.Path(trainer.LogFile), os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o644)
	if err != nil {
		return finetune.State{}, err
	}
	// Not CommandContext: the trainer outlives this call, and distill.
	cmd := exec.Command("/bin/sh", trainer.ScriptFile)
	cmd.Dir = job.Dir
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = groupAttr()
	err = cmd.Start()
	log.Close() // the child has its own copy
	if err != nil {
		return finetune.State{}, fmt.Errorf("start trainer: %w", err)
	}
	p := proc{pid: cmd.Process.Pid}
	p.ticks, p.boot = identify(p.pid) // before Wait can reap it
	p.host, _ = os.Hostname()
	// Reap the script when it ends, while this process lives; other
	// processes follow it through its group and train.exit.
	go cmd.Wait()

	now := time.Now().UTC()
	return finetune.State{
		Backend:     Name,
		ID:          strconv.Itoa(p.pid),
		Status:      finetune.StatusRunning,
		LogPath:     trainer.LogFile,
		SubmittedAt: now,
		UpdatedAt:   now,
		Data: map[string]string{
			keyPID: strconv.Itoa(p.pid), keyTicks: p.ticks, keyBoot: p.boot, keyHost: p.host,
			keyStarted:            now.Format(time.RFC3339Nano),
			keyScript:             trainer.ScriptFile,
			trainer.DataOutputDir: plan.OutputDir,
		},
	}, nil
}

// Status reports the job from its log, its exit status and its process
// group.
func (b *Backend) Status(ctx context.Context, job finetune.Job, st finetune.State) (finetune.State, error) {
	if st.Status.Terminal() {
		return st, nil
	}
	if err := ctx.Err(); err != nil {
		return st, err
	}
	return b.refresh(job, st)
}

func (b *Backend) refresh(job finetune.Job, st finetune.State) (finetune.State, error) {
	code, exited, err := trainer.ReadExit(job.Dir)
	if err != nil {
		return st, err
	}
	if !exited {
		p, err := procOf(st)
		if err != nil {
			return st, err
		}
		alive, err := p.alive()
		if err != nil {
			return st, err
		}
		if alive {
			l, err := trainer.ReadLog(job.Path(st.LogPath))
			if err != nil {
				return st, err
			}
			st = l.Update(st)
			st.Status, st.Message, st.UpdatedAt = finetune.StatusRunning, "", time.Now().UTC()
			if at, ok := cancelRequested(st); ok {
				st.Message = "cancel requested: waiting for the trainer to stop"
				if time.Since(at) >= b.opts.Grace {
					if err := p.signal(syscall.SIGKILL); err != nil {
						return st, err
					}
				}
			}
			return st, nil
		}
		// The script records the exit status just before it ends.
		if code, exited, err = trainer.ReadExit(job.Dir); err != nil {
			return st, err
		}
	}
	l, err := trainer.ReadLog(job.Path(st.LogPath))
	if err != nil {
		return st, err
	}
	st = l.Update(st)
	now := time.Now().UTC()
	st.UpdatedAt, st.FinishedAt = now, now
	_, cancelled := cancelRequested(st)
	switch {
	case cancelled:
		st.Status, st.Message = finetune.StatusCancelled, "cancelled"
	case !exited:
		st.Status = finetune.StatusFailed
		st.Message = l.Explain("the trainer stopped without an exit status (killed, or the machine restarted)")
	case code != 0:
		st.Status, st.Message = finetune.StatusFailed, l.Explain(fmt.Sprintf("the trainer exited with status %d", code))
	default:
		res, err := trainer.Result(job, trainer.OutputDir(st), l)
		if err != nil {
			st.Status, st.Message = finetune.StatusFailed, l.Explain(fmt.Sprintf("the trainer exited with status 0 but %v", err))
			break
		}
		st.Status, st.Message, st.Result = finetune.StatusSucceeded, "", res
	}
	return st, nil
}

// Cancel stops the trainer's process group: SIGTERM, then SIGKILL once
// Grace has passed. It waits for the group to go for at most Grace (and at
// most 2s): a trainer still running then is reported running, with the
// request recorded, and a later Status kills it and reports it cancelled.
func (b *Backend) Cancel(ctx context.Context, job finetune.Job, st finetune.State) (finetune.State, error) {
	st, err := b.Status(ctx, job, st) // as it is when it has ended
	if err != nil || st.Status.Terminal() {
		return st, err
	}
	p, err := procOf(st)
	if err != nil {
		return st, err
	}
	at, ok := cancelRequested(st)
	if !ok {
		at = time.Now().UTC()
		st = st.WithData(keyCancel, at.Format(time.RFC3339Nano))
	}
	if err := p.signal(syscall.SIGTERM); err != nil {
		return st, err
	}
	waitUntil, killed := time.Now().Add(min(b.opts.Grace, cancelWait)), false
	for {
		alive, err := p.alive()
		if err != nil {
			return st, err
		}
		if !alive {
			break
		}
		if !killed && time.Since(at) >= b.opts.Grace {
			if err := p.signal(syscall.SIGKILL); err != nil {
				return st, err
			}
			killed, waitUntil = true, time.Now().Add(time.Second)
		}
		if time.Now().After(waitUntil) {
			break
		}
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return b.refresh(job, st)
}

func cancelRequested(st finetune.State) (time.Time, bool) {
	s, ok := st.Data[keyCancel]
	if !ok {
		return time.Time{}, false
	}
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, true // requested; when is lost: no grace left
	}
	return at, true
}

// proc is the trainer's process group as Submit recorded it.
type proc struct {
	pid         int
	ticks, boot string // "" where unknown
	host        string
}

func procOf(st finetune.State) (proc, error) {
	pid, err := strconv.Atoi(st.Data[keyPID])
	if err != nil || pid <= 1 {
		return proc{}, fmt.Errorf("local job %s: no process id in its state", st.ID)
	}
	p := proc{pid: pid, ticks: st.Data[keyTicks], boot: st.Data[keyBoot], host: st.Data[keyHost]}
	if host, _ := os.Hostname(); p.host != "" && host != p.host {
		return p, fmt.Errorf("local job %s runs on host %s, not on %s: follow it there", st.ID, p.host, host)
	}
	return p, nil
}
