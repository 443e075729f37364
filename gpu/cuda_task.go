//go:build cuda

package gpu

import (
	"errors"
	"fmt"
	"time"
	"unsafe"

	"gorgonia.org/cu"
)

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
			if err := be.launch(sl, "scan_blocks", 1, uint64(sl.dBlk.p), uint64(grid), scanMax); err != nil {
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
			if err := be.launch(sl, "scan_blocks", 1, uint64(sl.dBlk.p), uint64(grid), scanSum); err != nil {
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
