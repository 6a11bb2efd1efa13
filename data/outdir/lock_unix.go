//go:build unix

package outdir

import (
	"errors"
	"os"
	"syscall"
)

// lock takes an exclusive flock on f without waiting; false when another
// open file holds it.
func lock(f *os.File) (bool, error) {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EWOULDBLOCK):
			return false, nil
		case !errors.Is(err, syscall.EINTR):
			return false, err
		}
	}
}

// sameFile says whether the open file f is the file at name.
func sameFile(f *os.File, name string) (bool, error) {
	a, err := f.Stat()
	if err != nil {
		return false, err
	}
	b, err := os.Stat(name)
	if err != nil {
		return false, err
	}
	return os.SameFile(a, b), nil
}
