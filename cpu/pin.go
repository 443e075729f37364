package cpu

import (
	"fmt"
	"runtime"
	"slices"

	"golang.org/x/sys/unix"
)

// allowed is the process affinity mask at init, sorted. Package init runs on
// the main goroutine, which the runtime keeps locked to the main thread
// during initialisation, so this is the mask the process was started with.
var allowed = initAllowed()

func initAllowed() []int {
	cpus, err := CurrentThreadCPUs()
	if err != nil || len(cpus) == 0 {
		// sched_getaffinity on our own thread should not fail; if it does,
		// fall back to the dense numbering the runtime itself assumes.
		cpus = make([]int, runtime.NumCPU())
		for i := range cpus {
			cpus[i] = i
		}
	}
	return cpus
}

// maxCPU is the number of CPUs a unix.CPUSet can describe (CPU_SETSIZE).
const maxCPU = len(unix.CPUSet{}) * 64

// AllowedCPUs returns the CPUs in the process's affinity mask as captured at
// package init (from the main thread, via sched_getaffinity), sorted
// ascending. Container and cgroup cpusets are respected that way. The
// returned slice is a copy the caller may modify.
func AllowedCPUs() []int { return slices.Clone(allowed) }

// CurrentThreadCPUs returns the calling OS thread's affinity mask, sorted
// ascending. Without runtime.LockOSThread the answer may describe a thread
// the goroutine has already left.
func CurrentThreadCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("cpu: sched_getaffinity: %w", err)
	}
	return setToList(&set), nil
}

func setToList(set *unix.CPUSet) []int {
	cpus := make([]int, 0, set.Count())
	for c := 0; c < maxCPU && len(cpus) < cap(cpus); c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus
}

// PinCurrentThread sets the calling thread's affinity to exactly {cpu} and
// reads it back. The caller must hold runtime.LockOSThread, and should not
// unlock it afterwards unless it restores the mask: the runtime would hand
// the pinned thread to other goroutines.
//
// A CPU outside the range a CPU set can hold fails with unix.EINVAL, like a
// CPU the kernel or cpuset rejects.
func PinCurrentThread(cpu int) error {
	if cpu < 0 || cpu >= maxCPU {
		// CPUSet.Set silently ignores out-of-range CPUs, which would send an
		// empty mask; report it the way the kernel would.
		return fmt.Errorf("cpu: pin thread to CPU %d: outside [0, %d): %w", cpu, maxCPU, unix.EINVAL)
	}
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("cpu: pin thread to CPU %d: sched_setaffinity: %w", cpu, err)
	}
	got, err := CurrentThreadCPUs()
	if err != nil {
		return fmt.Errorf("cpu: pin thread to CPU %d: read back: %w", cpu, err)
	}
	if len(got) != 1 || got[0] != cpu {
		return fmt.Errorf("cpu: pin thread to CPU %d: read back mask %v", cpu, got)
	}
	return nil
}
