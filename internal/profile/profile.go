// Package profile writes the profiles a command is asked for: a CPU
// profile of its run, and the heap allocations of the whole process
// (set-up included) when the run ends, for go tool pprof.
package profile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/saber-hx/saber-hx/sink"
)

// CreateError is a profile's file that could not be created, or may not
// be: what the command was asked for is wrong, not its run. Profile is
// "cpuprofile" or "memprofile", the flag that named the file.
type CreateError struct {
	Profile string
	Err     error
}

func (e *CreateError) Error() string { return "--" + e.Profile + ": " + e.Err.Error() }
func (e *CreateError) Unwrap() error { return e.Err }

// Start starts the CPU profile into the file cpu and opens the file mem
// ("": none of either); stop stops the one, writes the other, and returns
// the errors writing them. Each is written to a temporary file
// renamed over its path once complete (sink.Create), so that a run's
// inputs are never cut before they are read and a failed write leaves the
// path as it was. A path that holds a file other than a profile (a gzip
// file, as pprof writes, or an empty one) is refused, as are both
// profiles in one file, or a profile in one of the run's outputs (files
// the command writes, which may not exist yet): the flags name a
// profile's file, not a file to replace whatever it holds or will hold.
func Start(cpu, mem string, outputs ...string) (stop func() error, err error) {
	if cpu != "" && mem != "" {
		if same, err := sink.SameOutput(cpu, mem); err == nil && same {
			return nil, &CreateError{"memprofile", fmt.Errorf("%s is the CPU profile's file too: name another", mem)}
		}
	}
	for _, p := range []struct{ flag, path string }{{"cpuprofile", cpu}, {"memprofile", mem}} {
		for _, o := range outputs {
			if p.path == "" || o == "" || o == "-" { // "-": standard output
				continue
			}
			if same, err := sink.SameOutput(p.path, o); err == nil && same {
				return nil, &CreateError{p.flag, fmt.Errorf("%s is an output of the run too: name another", p.path)}
			}
		}
	}
	cpuOut, err := create("cpuprofile", cpu)
	if err != nil {
		return nil, err
	}
	memOut, err := create("memprofile", mem)
	if err != nil {
		abort(cpuOut)
		return nil, err
	}
	if cpuOut != nil {
		if err := pprof.StartCPUProfile(cpuOut); err != nil {
			abort(cpuOut, memOut)
			return nil, fmt.Errorf("--cpuprofile: %w", err)
		}
	}
	return func() error {
		var errs []error
		if cpuOut != nil {
			pprof.StopCPUProfile()
			errs = append(errs, commit("cpuprofile", cpuOut))
		}
		if memOut != nil {
			runtime.GC() // the profile counts what was allocated up to the last GC
			if err := pprof.Lookup("allocs").WriteTo(memOut, 0); err != nil {
				abort(memOut)
				errs = append(errs, fmt.Errorf("--memprofile: %w", err))
			} else {
				errs = append(errs, commit("memprofile", memOut))
			}
		}
		return errors.Join(errs...)
	}, nil
}

// gzipMagic starts every profile pprof writes.
var gzipMagic = []byte{0x1f, 0x8b}

// create opens the temporary file of profile kind at path (nil for ""),
// refusing a path that holds something other than a profile.
func create(kind, path string) (*sink.File, error) {
	if path == "" {
		return nil, nil
	}
	if f, err := os.Open(path); err == nil {
		head := make([]byte, len(gzipMagic))
		n, _ := io.ReadFull(f, head)
		fi, serr := f.Stat()
		f.Close()
		if serr == nil && fi.Mode().IsRegular() && n > 0 && !bytes.Equal(head[:n], gzipMagic[:n]) {
			return nil, &CreateError{kind, fmt.Errorf("%s exists and is not a profile (pprof writes gzip files): name another file, or remove it", path)}
		}
	}
	out, err := sink.Create(path)
	if err != nil {
		return nil, &CreateError{kind, err}
	}
	return out, nil
}

func commit(kind string, f *sink.File) error {
	if err := f.Commit(); err != nil {
		return fmt.Errorf("--%s: %w", kind, err)
	}
	return nil
}

func abort(fs ...*sink.File) {
	for _, f := range fs {
		if f != nil {
			_ = f.Abort()
		}
	}
}
