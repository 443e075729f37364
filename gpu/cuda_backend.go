//go:build cuda

package gpu

import (
	"errors"
	"fmt"
	"time"
	"unsafe"

	"gorgonia.org/cu"
)

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
