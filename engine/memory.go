package engine

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// machineMemory is the memory this process may use, in bytes: the
// machine's RAM (sysinfo), or its cgroup's memory.max where that is less;
// 0 where neither is known. Validate refuses rings and tasks larger than
// it: they would not fail at once but fill memory until the kernel kills
// the process (a ring's pages are touched as the producer writes them).
func machineMemory() uint64 {
	var si unix.Sysinfo_t
	var mem uint64
	if unix.Sysinfo(&si) == nil {
		mem = uint64(si.Totalram) * uint64(si.Unit)
	}
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if lim, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil && (mem == 0 || lim < mem) {
			mem = lim // "max" (no limit) does not parse
		}
	}
	return mem
}
