// Package outdir gives every command's output directory one rule and one
// writer at a time.
//
// Claim takes an output directory for the process: it creates it when
// absent, takes an exclusive lock on its lock file (LockFile, an OS-level
// flock that the kernel releases when the process ends, however it ends,
// so that a kill -9 never leaves a stale lock) and only then looks at what
// the directory holds:
//
//   - New: it must be empty (the lock file aside) or absent
//     (ErrNotEmpty otherwise);
//   - Resume: it may hold an earlier run's output, which the caller
//     checks is its own and goes on with;
//   - Overwrite: what it holds is removed.
//
// A second Claim of a directory held by another writer, in this process or
// another, fails at once with a *BusyError (errors.Is ErrBusy) that names
// the holder's process id, command and start time. Because the lock is
// taken before the directory is read, checking that it is empty and
// starting to fill it is one step: of two fresh starts on one output, one
// writes and the other is refused.
//
// A Dir is released with Close, which keeps what was written, or Abandon,
// which removes what a fresh start wrote (everything but what was there
// before: nothing, for New or Overwrite) and the directory itself if Claim
// created it. Either removes the lock file before it releases the lock; a
// writer that opened the file just before, and then gets the lock, sees
// that the file is no longer the directory's lock file and starts again.
// A process killed while it holds a directory leaves the lock file, but
// no lock: the next writer takes it.
//
// Locks are flock(2) locks on Unix; where there are none (Windows), Claim
// applies the rule but takes no lock.
package outdir
