//go:build unix

package live

import "syscall"

// openFileLimit is the process's limit on open descriptors (the soft
// RLIMIT_NOFILE, which Go raises to the hard limit at startup), or 0 if
// it cannot be read.
func openFileLimit() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur > 1<<30 {
		return 0
	}
	return int(rl.Cur)
}
