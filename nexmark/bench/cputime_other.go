//go:build !unix

package bench

import "time"

// processCPU is 0: the process's CPU time is read on Unix only.
func processCPU() time.Duration { return 0 }
