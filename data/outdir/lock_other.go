//go:build !unix

package outdir

import "os"

// lock takes no lock where flock is not available.
func lock(*os.File) (bool, error) { return true, nil }

// sameFile is always true where there is no lock to lose.
func sameFile(*os.File, string) (bool, error) { return true, nil }
