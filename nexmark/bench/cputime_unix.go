//go:build unix

package bench

import (
	"syscall"
	"time"
)

// processCPU is the process's CPU time so far, user and system, every
// thread's (getrusage RUSAGE_SELF); 0 where it cannot be read.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
