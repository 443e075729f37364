// Package profile writes the profiles a command is asked for: a CPU
// profile of its run, and the heap allocations of the whole process
// (set-up included) when the run ends, for go tool pprof.
package profile

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

// CreateError is a profile's file that could not be created: what the
// command was asked for is wrong, not its run. Profile is "cpuprofile"
// or "memprofile".
type CreateError struct {
	Profile string
	Err     error
}

func (e *CreateError) Error() string { return e.Profile + ": " + e.Err.Error() }
func (e *CreateError) Unwrap() error { return e.Err }

// Start starts the CPU profile into the file cpu and creates the file
// mem ("": none of either); stop stops the one and writes the other
// (calling fail with an error writing it).
func Start(cpu, mem string, fail func(error)) (stop func(), err error) {
	stopCPU, err := startCPU(cpu)
	if err != nil {
		return nil, err
	}
	if mem == "" {
		return stopCPU, nil
	}
	out, err := os.Create(mem)
	if err != nil {
		stopCPU()
		return nil, &CreateError{"memprofile", err}
	}
	return func() {
		stopCPU()
		runtime.GC() // the profile counts what was allocated up to the last GC
		if err := pprof.Lookup("allocs").WriteTo(out, 0); err != nil {
			fail(fmt.Errorf("memprofile: %w", err))
		}
		out.Close()
	}, nil
}

func startCPU(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	out, err := os.Create(path)
	if err != nil {
		return nil, &CreateError{"cpuprofile", err}
	}
	if err := pprof.StartCPUProfile(out); err != nil {
		out.Close()
		return nil, fmt.Errorf("cpuprofile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); out.Close() }, nil
}
