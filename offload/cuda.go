//go:build cuda

package offload

// The CUDA device: gorgonia.org/cu (driver API) with the gpu package's
// page-locked memory. Every driver call runs with the device's primary
// context pushed on a locked OS thread (do), so that a Program may be used
// from any goroutine (one at a time), and every error is wrapped with the
// call and what it was for.

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/saber-hx/saber-hx/gpu"
	"github.com/saber-hx/saber-hx/kernels"
	kcuda "github.com/saber-hx/saber-hx/kernels/cuda"
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
// the offload module (the driver JIT-compiles the PTX for the device).
func open(ord int) (Device, error) {
	n, err := cu.NumDevices()
	if err != nil {
		return nil, fmt.Errorf("offload: cuDeviceGetCount: %w", err)
	}
	if ord < 0 || ord >= n {
		return nil, fmt.Errorf("offload: GPU %d: the machine has %d CUDA device(s)", ord, n)
	}
	dev, err := cu.GetDevice(ord)
	if err != nil {
		return nil, fmt.Errorf("offload: cuDeviceGet(%d): %w", ord, err)
	}
	name, err := dev.Name()
	if err != nil {
		return nil, fmt.Errorf("offload: GPU %d: cuDeviceGetName: %w", ord, err)
	}
	syncName, flags, err := syncFlags()
	if err != nil {
		return nil, fmt.Errorf("offload: GPU %d: %w", ord, err)
	}
	// The scheduling flag of the primary context, before it is retained
	// (drivers since CUDA 11 also accept it on an active context, which
	// gpu's pinned memory may have retained first).
	if err := dev.SetPrimaryCtxFlags(flags); err != nil {
		syncName = fmt.Sprintf("%s not set (cuDevicePrimaryCtxSetFlags: %v)", syncName, err)
	}
	ctx, err := dev.RetainPrimaryCtx()
	if err != nil {
		return nil, fmt.Errorf("offload: GPU %d: cuDevicePrimaryCtxRetain: %w", ord, err)
	}
	if got, _, err := dev.PrimaryCtxState(); err == nil && got&cu.SchedMask != flags&cu.SchedMask {
		syncName = fmt.Sprintf("%s requested, the context has scheduling flags %#x", syncName, int(got&cu.SchedMask))
	}
	d := &cudaDevice{ord: ord, name: name, dev: dev, ctx: ctx, fn: map[string]cu.Function{}}
	d.tm.sync = syncName
	err = d.do(func() error {
		mod, err := cu.LoadData(kcuda.Offload)
		if err != nil {
			return fmt.Errorf("cuModuleLoadData(offload.ptx): %w", err)
		}
		d.mod = mod
		for _, e := range append(append(append([]string{}, kcuda.OffloadAggEntries...), kcuda.OffloadSelEntries...), kcuda.OffloadJoinEntries...) {
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
		return nil, fmt.Errorf("offload: GPU %d (%s): %w", ord, name, err)
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
	if err := gpu.PinHostMemory(b); err != nil {
		return fmt.Errorf("offload: %s: register %d bytes of host memory: %w", d.Name(), len(b), err)
	}
	if err := d.tm.addRange(b); err != nil {
		_ = gpu.UnpinHostMemory(b)
		return err
	}
	return nil
}

// UnregisterHost undoes RegisterHost(b); no task inside b may be in flight.
func (d *cudaDevice) UnregisterHost(b []byte) error {
	if err := d.tm.removeRange(b); err != nil {
		return err
	}
	if err := gpu.UnpinHostMemory(b); err != nil {
		return fmt.Errorf("offload: %s: unregister %d bytes of host memory: %w", d.Name(), len(b), err)
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
		return nil, fmt.Errorf("offload: %w", err)
	}
	if depth < 1 {
		return nil, fmt.Errorf("offload: query %q: pipeline depth %d must be at least 1", sh.name, depth)
	}
	pr, err := compileOpen(&d.programs, d.Name(), func() (*program, error) {
		be := &cudaBackend{d: d, sh: sh, slots: make([]cudaSlot, depth), twoPass: selTwoPass()}
		if err := d.do(be.init); err != nil {
			_ = d.do(be.free)
			return nil, fmt.Errorf("offload: %s: query %q: %w", d.Name(), sh.name, err)
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
			return fmt.Errorf("offload: %s: cuModuleUnload: %w", d.Name(), err)
		}
		return nil
	})}
	if err := d.dev.ReleasePrimaryCtx(); err != nil {
		errs = append(errs, fmt.Errorf("offload: %s: cuDevicePrimaryCtxRelease: %w", d.Name(), err))
	}
	return errors.Join(errs...)
}

// cudaBackend is a program's device side: its constant arrays and its
// slots.
type cudaBackend struct {
	d  *cudaDevice
	sh *shape
	// poison makes every task poison its output buffers (device and
	// staging) before the kernels run: the tests set it.
	poison bool

	preds, code, aggs, keys, initRow, proj, joinHi, joinLo, joinOrd devBuf
	joinMask                                                        uint64
	// twoPass: a selection evaluates WHERE in sel_compact again instead
	// of reading sel_count's flags (selTwoPass).
	twoPass            bool
	joinOff, denseJoin int64

	slots []cudaSlot
}

// cudaSlot is one task in flight: a stream, events, page-locked staging
// buffers and device buffers, grown as tasks need.
//
// The output comes back in one round trip where its size is bounded: a
// selection's counters and its output buffer are one device buffer (the
// counters first), copied whole with the task; an aggregation's words with
// dense groups likewise; with hashed groups, the header, panes and every
// entry the task has room for, where that bound is small enough
// (hashedOneTrip), else the header and panes, then, once their entry count
// is read, the entries claimed (a second copy and wait).
type cudaSlot struct {
	stream  cu.Stream
	hasStrm bool
	started bool
	// ev times the task on its stream: before the copy in, after it,
	// after the kernels, after the copy out.
	ev    [4]cu.Event
	hasEv int

	hIn, hWords pinnedBuf
	dIn, dWords devBuf
	dBlk        devBuf
	dTable      devBuf
	dFlags      devBuf // a selection's flags: per warp of tuples, the ballot of those that pass

	n       int64
	in      int64 // the task's bytes
	nwords  int64 // output words copied back with the task (hashed groups: at least the header and panes)
	ncap    int64 // hashed groups: the entries the output has room for
	oneTrip bool  // the whole output came back with the task
	submit  time.Duration
	args    [40]uint64
	ptrs    [40]unsafe.Pointer
}

type devBuf struct {
	p    cu.DevicePtr
	size int64
}

type pinnedBuf struct {
	b    []byte
	free func() error
}

// ensure makes b hold at least n bytes (reallocating, with headroom, when it
// does not), without keeping its contents.
func (b *devBuf) ensure(n int64, what string) error {
	n = max(n, 8)
	if b.size >= n {
		return nil
	}
	if err := b.release(what); err != nil {
		return err
	}
	n += n / 4
	p, err := cu.MemAlloc(n)
	if err != nil {
		return fmt.Errorf("cuMemAlloc(%d) for %s: %w", n, what, err)
	}
	b.p, b.size = p, n
	return nil
}

func (b *devBuf) release(what string) error {
	if b.size == 0 {
		return nil
	}
	err := cu.MemFree(b.p)
	b.p, b.size = 0, 0
	if err != nil {
		return fmt.Errorf("cuMemFree (%s): %w", what, err)
	}
	return nil
}

// upload allocates b for s's words and copies them (synchronously: once
// per program).
func (b *devBuf) upload(s any, what string) error {
	var ptr unsafe.Pointer
	var n int64
	switch v := s.(type) {
	case []uint64:
		if len(v) > 0 {
			ptr, n = unsafe.Pointer(&v[0]), int64(len(v))*8
		}
	case []int32:
		if len(v) > 0 {
			ptr, n = unsafe.Pointer(&v[0]), int64(len(v))*4
		}
	default:
		panic(fmt.Sprintf("offload: upload of %T", s))
	}
	if err := b.ensure(n, what); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	if err := cu.MemcpyHtoD(b.p, ptr, n); err != nil {
		return fmt.Errorf("cuMemcpyHtoD (%s, %d bytes): %w", what, n, err)
	}
	return nil
}

func (b *pinnedBuf) ensure(n int64, what string) error {
	n = max(n, 8)
	if int64(len(b.b)) >= n {
		return nil
	}
	if err := b.release(what); err != nil {
		return err
	}
	n += n / 4
	n = (n + 7) &^ 7
	m, free, err := gpu.AllocPinned(int(n))
	if err != nil {
		return fmt.Errorf("pinned staging for %s: %w", what, err)
	}
	b.b, b.free = m, free
	return nil
}

func (b *pinnedBuf) release(what string) error {
	if b.free == nil {
		return nil
	}
	err := b.free()
	b.b, b.free = nil, nil
	if err != nil {
		return fmt.Errorf("freeing pinned staging for %s: %w", what, err)
	}
	return nil
}

// words views a pinned buffer (8-byte aligned: cuMemHostAlloc) as words.
func (b *pinnedBuf) words(n int64) []uint64 {
	return unsafe.Slice((*uint64)(unsafe.Pointer(&b.b[0])), n)
}

// init uploads the program's constant arrays and makes each slot's stream.
func (be *cudaBackend) init() error {
	sh := be.sh
	if err := be.preds.upload(sh.predWords(), "predicates"); err != nil {
		return err
	}
	if err := be.code.upload(sh.code, "expression programs"); err != nil {
		return err
	}
	if sh.agg {
		if err := be.aggs.upload(sh.aggWords(), "aggregate descriptors"); err != nil {
			return err
		}
		if err := be.keys.upload(sh.keyWords(), "group key descriptors"); err != nil {
			return err
		}
		if err := be.initRow.upload(sh.initRow(), "row initial values"); err != nil {
			return err
		}
		be.joinOff = -1
		if j := sh.join; j != nil {
			if err := be.joinHi.upload(j.hi, "join table keys"); err != nil {
				return err
			}
			if err := be.joinLo.upload(j.lo, "join table keys"); err != nil {
				return err
			}
			if err := be.joinOrd.upload(j.ord, "join table ordinals"); err != nil {
				return err
			}
			be.joinMask, be.joinOff = j.mask, int64(sh.joinOff)
			if sh.denseJoin {
				be.denseJoin = 1
			}
		} else {
			// Valid pointers for parameters the kernel does not read.
			for _, b := range []*devBuf{&be.joinHi, &be.joinLo, &be.joinOrd} {
				if err := b.ensure(8, "join table (none)"); err != nil {
					return err
				}
			}
		}
	} else if err := be.proj.upload(sh.projWords(), "projection descriptors"); err != nil {
		return err
	}
	for i := range be.slots {
		sl := &be.slots[i]
		s, err := cu.MakeStream(cu.NonBlocking)
		if err != nil {
			return fmt.Errorf("cuStreamCreate (slot %d): %w", i, err)
		}
		sl.stream, sl.hasStrm = s, true
		for sl.hasEv < len(sl.ev) {
			ev, err := cu.MakeEvent(cu.DefaultEvent)
			if err != nil {
				return fmt.Errorf("cuEventCreate (slot %d): %w", i, err)
			}
			sl.ev[sl.hasEv] = ev
			sl.hasEv++
		}
	}
	return nil
}

// free releases everything (the caller has drained the slots).
func (be *cudaBackend) free() error {
	var errs []error
	for i := range be.slots {
		sl := &be.slots[i]
		if sl.hasStrm {
			if err := sl.stream.Destroy(); err != nil {
				errs = append(errs, fmt.Errorf("cuStreamDestroy (slot %d): %w", i, err))
			}
			sl.hasStrm = false
		}
		for sl.hasEv > 0 {
			sl.hasEv--
			if err := cu.DestroyEvent(&sl.ev[sl.hasEv]); err != nil {
				errs = append(errs, fmt.Errorf("cuEventDestroy (slot %d): %w", i, err))
			}
		}
		errs = append(errs, sl.dIn.release("task tuples"), sl.dWords.release("output words"),
			sl.dBlk.release("block partials"), sl.dTable.release("group table"), sl.dFlags.release("selection flags"),
			sl.hIn.release("task tuples"), sl.hWords.release("output words"))
	}
	for _, b := range []*devBuf{&be.preds, &be.code, &be.aggs, &be.keys, &be.initRow, &be.proj, &be.joinHi, &be.joinLo, &be.joinOrd} {
		errs = append(errs, b.release("program constants"))
	}
	return errors.Join(errs...)
}

// launch runs kernel name on sl's stream with the given 64-bit arguments.
func (be *cudaBackend) launch(sl *cudaSlot, name string, grid int64, args ...uint64) error {
	if want := kernelParams[name]; len(args) != want {
		return fmt.Errorf("launch of %s with %d arguments, the kernel has %d parameters", name, len(args), want)
	}
	for i, a := range args {
		sl.args[i] = a
		sl.ptrs[i] = unsafe.Pointer(&sl.args[i])
	}
	err := be.d.fn[name].Launch(int(grid), 1, 1, blockDim, 1, 1, 0, sl.stream, sl.ptrs[:len(args)])
	if err != nil {
		return fmt.Errorf("cuLaunchKernel(%s, %d blocks of %d): %w", name, grid, blockDim, err)
	}
	return nil
}

func b2i(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

const poison32 = 0xdeadbeef

func (be *cudaBackend) start(s int, t *task) error {
	t0 := time.Now()
	return be.d.do(func() error {
		sl := &be.slots[s]
		err := be.enqueue(sl, t)
		if err != nil {
			// Let what was enqueued finish before the slot's buffers
			// may be reallocated.
			_ = sl.stream.Synchronize()
			return err
		}
		sl.started = true
		sl.submit = time.Since(t0)
		return nil
	})
}

// record records event i of sl on its stream.
func (sl *cudaSlot) record(i int) error {
	if err := sl.ev[i].Record(sl.stream); err != nil {
		return fmt.Errorf("cuEventRecord (%d): %w", i, err)
	}
	return nil
}

func (be *cudaBackend) enqueue(sl *cudaSlot, t *task) error {
	sh := be.sh
	n := int64(t.n)
	in := int64(len(t.data))
	sl.n, sl.in = n, in
	if err := sl.dIn.ensure(in, "task tuples"); err != nil {
		return err
	}
	if err := sl.record(0); err != nil {
		return err
	}
	if in > 0 {
		// From registered memory (the engine's rings) as it is; else
		// through the slot's page-locked staging buffer.
		src := unsafe.Pointer(unsafe.SliceData(t.data))
		direct := be.d.tm.registered(t.data)
		if !direct {
			if err := sl.hIn.ensure(in, "task tuples"); err != nil {
				return err
			}
			copy(sl.hIn.b, t.data)
			src = unsafe.Pointer(&sl.hIn.b[0])
		}
		be.d.tm.copied(direct)
		if err := cu.MemcpyHtoDAsync(sl.dIn.p, src, in, sl.stream); err != nil {
			return fmt.Errorf("cuMemcpyHtoDAsync (task, %d bytes): %w", in, err)
		}
	}
	if err := sl.record(1); err != nil {
		return err
	}
	grid := gridOf(n)
	if err := sl.dBlk.ensure(max(grid, 1)*8, "block partials"); err != nil {
		return err
	}
	// The output buffer's bytes (a selection's: its counters, then room
	// for every tuple's output), and those that come back with the task.
	var total, back int64
	sl.ncap = 0
	if sh.agg {
		sl.ncap = t.entries
		sl.nwords, total = sh.aggOutWords(t.npanes, 0), sh.aggOutWords(t.npanes, t.entries)*8
		back = sl.nwords * 8
		if !sh.hashed || hashedOneTrip(total, in) {
			back = total
		}
	} else {
		sl.nwords = selCounters
		total = selCounters*8 + n*int64(sh.outSize)
		back = total
	}
	sl.oneTrip = back == total
	be.d.tm.trips(sl.oneTrip)
	if err := sl.dWords.ensure(total, "output words"); err != nil {
		return err
	}
	if err := sl.hWords.ensure(total, "output words"); err != nil {
		return err
	}
	if sh.hashed {
		if err := sl.dTable.ensure(t.slots*8, "group table"); err != nil {
			return err
		}
	}
	if !sh.agg {
		if err := sl.dFlags.ensure((n+31)/32*4, "selection flags"); err != nil {
			return err
		}
	}
	if be.poison {
		poisonBytes(sl.hWords.b)
		for _, b := range []devBuf{sl.dWords, sl.dBlk, sl.dTable, sl.dFlags} {
			if b.size > 0 {
				if err := cu.MemsetD32Async(b.p, poison32, b.size/4, sl.stream); err != nil {
					return fmt.Errorf("cuMemsetD32Async (poison): %w", err)
				}
			}
		}
	}
	tuples, first := uint64(sl.dIn.p), t.first
	where := uint64(sh.where) // -1: none
	if sh.agg {
		initGrid := min(gridOf(sl.nwords), 1024)
		if err := be.launch(sl, "agg_init", initGrid, uint64(sl.dWords.p), uint64(t.npanes), uint64(sh.groups),
			uint64(sh.rowWords()), uint64(be.initRow.p)); err != nil {
			return err
		}
		var table, tableMask uint64
		if sh.hashed {
			if err := cu.MemsetD32Async(sl.dTable.p, 0, t.slots*2, sl.stream); err != nil {
				return fmt.Errorf("cuMemsetD32Async (group table): %w", err)
			}
			table, tableMask = uint64(sl.dTable.p), uint64(t.slots-1)
		}
		if n > 0 {
			if err := be.launch(sl, "agg_block_max", grid, tuples, uint64(n), uint64(sh.tupleSize), b2i(sh.rows), first,
				uint64(sl.dBlk.p), uint64(sl.dWords.p)); err != nil {
				return err
			}
			if err := be.launch(sl, "agg_tuples", grid, tuples, uint64(n), uint64(sh.tupleSize), b2i(sh.rows), first,
				uint64(be.preds.p), uint64(len(sh.preds)), uint64(be.code.p), where,
				uint64(be.joinHi.p), uint64(be.joinLo.p), uint64(be.joinOrd.p),
				be.joinMask, uint64(be.joinOff), uint64(be.denseJoin), uint64(be.aggs.p), uint64(len(sh.aggs)),
				uint64(be.keys.p), uint64(len(sh.keys)), table, tableMask, uint64(be.initRow.p),
				uint64(sh.groups), uint64(sh.rowWords()), uint64(sh.spec.Pane), uint64(sh.spec.Size), uint64(sh.spec.Slide),
				uint64(t.base), uint64(t.npanes), uint64(sl.dBlk.p), uint64(sl.dWords.p)); err != nil {
				return err
			}
		}
	} else {
		if err := cu.MemsetD32Async(sl.dWords.p, 0, selCounters*2, sl.stream); err != nil {
			return fmt.Errorf("cuMemsetD32Async (selection counters): %w", err)
		}
		if n > 0 {
			if err := be.launch(sl, "sel_count", grid, tuples, uint64(n), uint64(sh.tupleSize),
				uint64(be.preds.p), uint64(len(sh.preds)), uint64(be.code.p), where, uint64(sl.dBlk.p), uint64(sl.dFlags.p)); err != nil {
				return err
			}
			out, ctr := uint64(sl.dWords.p)+selCounters*8, uint64(sl.dWords.p)
			var err error
			if be.twoPass {
				err = be.launch(sl, "sel_compact", grid, tuples, uint64(n), uint64(sh.tupleSize),
					uint64(be.preds.p), uint64(len(sh.preds)), uint64(be.code.p), where, uint64(be.proj.p), uint64(len(sh.project)),
					uint64(sl.dBlk.p), out, ctr)
			} else {
				err = be.launch(sl, "sel_compact_flags", grid, tuples, uint64(n), uint64(sh.tupleSize),
					uint64(be.code.p), uint64(be.proj.p), uint64(len(sh.project)), uint64(sl.dFlags.p), uint64(sl.dBlk.p), out, ctr)
			}
			if err != nil {
				return err
			}
		}
	}
	if err := sl.record(2); err != nil {
		return err
	}
	if err := cu.MemcpyDtoHAsync(unsafe.Pointer(&sl.hWords.b[0]), sl.dWords.p, back, sl.stream); err != nil {
		return fmt.Errorf("cuMemcpyDtoHAsync (output, %d bytes): %w", back, err)
	}
	return sl.record(3)
}

func (be *cudaBackend) finish(s int) (words []uint64, out []byte, err error) {
	sl := &be.slots[s]
	if !sl.started {
		return nil, nil, errors.New("no task started")
	}
	sl.started = false
	t0 := time.Now()
	in, kern, outMs := -1.0, -1.0, -1.0
	err = be.d.do(func() error {
		if err := sl.stream.Synchronize(); err != nil {
			return fmt.Errorf("cuStreamSynchronize (task of %d tuples): %w", sl.n, err)
		}
		defer func() { in, kern, outMs = sl.elapsed(0, 1), sl.elapsed(1, 2), sl.elapsed(2, 3) }()
		if be.sh.agg {
			words = sl.hWords.words(sl.nwords)
		} else {
			words = sl.hWords.words(selCounters)
		}
		if be.sh.hashed {
			// The entries the groups claimed, after the header and the
			// panes' first tuples.
			ne := words[hdrEntries]
			if ne > uint64(sl.ncap) {
				return fmt.Errorf("hashed groups: %d entries claimed, room for %d", ne, sl.ncap)
			}
			nb := int64(ne) * int64(be.sh.entryWords()) * 8
			if nb > 0 && !sl.oneTrip {
				if err := cu.MemcpyDtoHAsync(unsafe.Pointer(&sl.hWords.b[sl.nwords*8]), sl.dWords.p+cu.DevicePtr(sl.nwords*8), nb, sl.stream); err != nil {
					return fmt.Errorf("cuMemcpyDtoHAsync (group entries, %d bytes): %w", nb, err)
				}
				if err := sl.record(3); err != nil {
					return err
				}
				if err := sl.stream.Synchronize(); err != nil {
					return fmt.Errorf("cuStreamSynchronize (group entries): %w", err)
				}
			}
			words = sl.hWords.words(sl.nwords + nb/8)
			return nil
		}
		if be.sh.agg {
			return nil
		}
		kept := words[selCount]
		if kept > uint64(sl.n) {
			return fmt.Errorf("selection kept %d tuples of %d", kept, sl.n)
		}
		out = sl.hWords.b[selCounters*8 : selCounters*8+int64(kept)*int64(be.sh.outSize)]
		return nil
	})
	wait := time.Since(t0)
	if err != nil {
		return nil, nil, err
	}
	be.d.tm.task(in, kern, outMs, sl.submit, wait)
	return words, out, nil
}

// elapsed is the time between events a and b of sl's last task in ms, or
// -1 where the driver cannot say (with the context current).
func (sl *cudaSlot) elapsed(a, b int) float64 {
	ms, err := sl.ev[a].Elapsed(sl.ev[b])
	if err != nil {
		return -1
	}
	return ms
}

// close waits for every slot's stream, then frees the streams and buffers.
func (be *cudaBackend) close() error {
	return be.d.do(func() error {
		var errs []error
		for i := range be.slots {
			sl := &be.slots[i]
			if sl.started && sl.hasStrm {
				if err := sl.stream.Synchronize(); err != nil {
					errs = append(errs, fmt.Errorf("cuStreamSynchronize (slot %d): %w", i, err))
				}
			}
			sl.started = false
		}
		errs = append(errs, be.free())
		return errors.Join(errs...)
	})
}
