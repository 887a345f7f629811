//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package audit

import "os"

// lock does nothing where flock is unavailable: one gateway per log file
// is then up to the operator.
func lock(*os.File) error { return nil }
