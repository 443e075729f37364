//go:build cuda

package gpu

// The CUDA device: gorgonia.org/cu (driver API) with the gpu package's
// page-locked memory. Every driver call runs with the device's primary
// context pushed on a locked OS thread (do), so that a Program may be used
// from any goroutine (one at a time), and every error is wrapped with the
// call and what it was for.
//
// Files: cuda.go (the device: opening it, registered host memory,
// compiling programs), cuda_backend.go (a program's device side: its
// constant arrays, its slots, kernel launches, freeing), cuda_task.go (one
// task in a slot: copy in, kernels, copy out, its times), cuda_mem.go
// (device and page-locked buffers).

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	"gorgonia.org/cu"

	"github.com/saber-hx/saber-hx/gpu/internal/device"
	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/kernels/cuda"
	"github.com/saber-hx/saber-hx/query"
)

type cudaDevice struct {
	ord  int
	name string
	dev  cu.Device
	ctx  cu.CUContext // the device's primary context, retained

	mod      cu.Module
	fn       map[string]cu.Function
	programs devPrograms
	tm       timer // tasks' times, registered host ranges
}

// syncFlags reads SABER_HX_GPU_SYNC: how a host thread waits for the
// device. blocking (the default): it sleeps until the device is done
// (CU_CTX_SCHED_BLOCKING_SYNC), so that the GPU worker's waits leave its
// core to the CPU workers in hybrid mode; spin: it spins (the lowest
// latency, a core busy while the GPU works); yield; auto (the driver's
// choice: spin while there are fewer active contexts than cores).
func syncFlags() (string, cu.ContextFlags, error) {
	switch v := os.Getenv("SABER_HX_GPU_SYNC"); v {
	case "", "blocking":
		return "blocking", cu.SchedBlockingSync, nil
	case "spin":
		return "spin", cu.SchedSpin, nil
	case "yield":
		return "yield", cu.SchedYield, nil
	case "auto":
		return "auto", cu.SchedAuto, nil
	default:
		return "", 0, fmt.Errorf("SABER_HX_GPU_SYNC=%q: want blocking, spin, yield or auto", v)
	}
}

// open opens CUDA device ordinal ord: retains its primary context and loads
// the kernels' module (kernels/cuda's PTX; the driver JIT-compiles the PTX for the device).
func open(ord int) (Device, error) {
	n, err := cu.NumDevices()
	if err != nil {
		return nil, fmt.Errorf("gpu: cuDeviceGetCount: %w", err)
	}
	if ord < 0 || ord >= n {
		return nil, fmt.Errorf("gpu: GPU %d: the machine has %d CUDA device(s)", ord, n)
	}
	dev, err := cu.GetDevice(ord)
	if err != nil {
		return nil, fmt.Errorf("gpu: cuDeviceGet(%d): %w", ord, err)
	}
	name, err := dev.Name()
	if err != nil {
		return nil, fmt.Errorf("gpu: GPU %d: cuDeviceGetName: %w", ord, err)
	}
	syncName, flags, err := syncFlags()
	if err != nil {
		return nil, fmt.Errorf("gpu: GPU %d: %w", ord, err)
	}
	// The scheduling flag of the primary context, before it is retained
	// (drivers since CUDA 11 also accept it on an active context, which
	// gpu's pinned memory may have retained first).
	if err := dev.SetPrimaryCtxFlags(flags); err != nil {
		syncName = fmt.Sprintf("%s not set (cuDevicePrimaryCtxSetFlags: %v)", syncName, err)
	}
	ctx, err := dev.RetainPrimaryCtx()
	if err != nil {
		return nil, fmt.Errorf("gpu: GPU %d: cuDevicePrimaryCtxRetain: %w", ord, err)
	}
	if got, _, err := dev.PrimaryCtxState(); err == nil && got&cu.SchedMask != flags&cu.SchedMask {
		syncName = fmt.Sprintf("%s requested, the context has scheduling flags %#x", syncName, int(got&cu.SchedMask))
	}
	d := &cudaDevice{ord: ord, name: name, dev: dev, ctx: ctx, fn: map[string]cu.Function{}}
	d.tm.sync = syncName
	err = d.do(func() error {
		mod, err := cu.LoadData(cuda.PTX)
		if err != nil {
			return fmt.Errorf("cuModuleLoadData(kernels.ptx): %w", err)
		}
		d.mod = mod
		for _, e := range append(append(append(append([]string{}, cuda.AggEntries...), cuda.SelEntries...), cuda.JoinEntries...), cuda.ScanEntries...) {
			f, err := mod.Function(e)
			if err != nil {
				return fmt.Errorf("cuModuleGetFunction(%s): %w", e, err)
			}
			d.fn[e] = f
		}
		return nil
	})
	if err != nil {
		if d.mod != (cu.Module{}) {
			_ = d.do(func() error { return d.mod.Unload() })
		}
		_ = dev.ReleasePrimaryCtx()
		return nil, fmt.Errorf("gpu: GPU %d (%s): %w", ord, name, err)
	}
	return d, nil
}

func (d *cudaDevice) Name() string { return fmt.Sprintf("cuda:%d (%s)", d.ord, d.name) }

// Timings: per task the GPU's times from CUDA events, the host's, and the
// registered host memory.
func (d *cudaDevice) Timings() Timings { return d.tm.timings() }

// RegisterHost page-locks b (cuMemHostRegister, portable) so that tasks
// inside it are copied to the device from where they are, without the
// staging copy.
func (d *cudaDevice) RegisterHost(b []byte) error {
	if err := device.PinHostMemory(b); err != nil {
		return fmt.Errorf("gpu: %s: register %d bytes of host memory: %w", d.Name(), len(b), err)
	}
	if err := d.tm.addRange(b); err != nil {
		_ = device.UnpinHostMemory(b)
		return err
	}
	return nil
}

// UnregisterHost undoes RegisterHost(b); no task inside b may be in flight.
func (d *cudaDevice) UnregisterHost(b []byte) error {
	if err := d.tm.removeRange(b); err != nil {
		return err
	}
	if err := device.UnpinHostMemory(b); err != nil {
		return fmt.Errorf("gpu: %s: unregister %d bytes of host memory: %w", d.Name(), len(b), err)
	}
	return nil
}

// do runs f with the device's context current on this goroutine's OS
// thread, locked for the duration.
func (d *cudaDevice) do(f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cu.PushCurrentCtx(d.ctx); err != nil {
		return fmt.Errorf("cuCtxPushCurrent: %w", err)
	}
	err := f()
	if _, perr := cu.PopCurrentCtx(); perr != nil && err == nil {
		err = fmt.Errorf("cuCtxPopCurrent: %w", perr)
	}
	return err
}

func (*cudaDevice) Supports(p *kernels.Plan) error { return Supported(p) }

func (*cudaDevice) SupportsJoin(j *query.WindowJoin) error { return SupportedJoin(j) }

func (d *cudaDevice) Compile(p *kernels.Plan, depth int) (Program, error) {
	sh, err := analyse(p)
	if err != nil {
		return nil, fmt.Errorf("gpu: %w", err)
	}
	if depth < 1 {
		return nil, fmt.Errorf("gpu: query %q: pipeline depth %d must be at least 1", sh.name, depth)
	}
	pr, err := compileOpen(&d.programs, d.Name(), func() (*program, error) {
		be := &cudaBackend{d: d, sh: sh, slots: make([]cudaSlot, depth), twoPass: selTwoPass()}
		if err := d.do(be.init); err != nil {
			_ = d.do(be.free)
			return nil, fmt.Errorf("gpu: %s: query %q: %w", d.Name(), sh.name, err)
		}
		return newProgram(sh, depth, be), nil
	})
	if err != nil {
		return nil, err // not a nil *program in the interface
	}
	return pr, nil
}

// Close closes the programs and join programs still open, unloads the
// module and releases the primary context.
func (d *cudaDevice) Close() error {
	first, err := d.programs.close()
	if !first {
		return nil
	}
	errs := []error{err, d.do(func() error {
		if err := d.mod.Unload(); err != nil {
			return fmt.Errorf("gpu: %s: cuModuleUnload: %w", d.Name(), err)
		}
		return nil
	})}
	if err := d.dev.ReleasePrimaryCtx(); err != nil {
		errs = append(errs, fmt.Errorf("gpu: %s: cuDevicePrimaryCtxRelease: %w", d.Name(), err))
	}
	return errors.Join(errs...)
}
