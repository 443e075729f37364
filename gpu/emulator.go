package gpu

import (
	"errors"
	"fmt"
	"time"

	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/query"
)

// NewEmulator returns a Device that runs the GPU programs' algorithms in Go,
// one goroutine per in-flight slot, producing the device-format outputs
// (the same buffers the CUDA kernels write) and turning them into results
// with the same host code as the CUDA device. It exists so that everything
// the GPU path shares with the CPU (layouts, pane ranges, fragment
// unpacking, the fallback, pipelining) is tested without a GPU.
func NewEmulator() Device {
	e := &emulator{}
	e.tm.sync = "emulated"
	return e
}

// emulator is safe for concurrent use; its programs are not.
type emulator struct {
	programs devPrograms
	tm       timer
}

// Timings: the tasks, the host's times and the registered ranges; the
// GPU's times are zero.
func (e *emulator) Timings() Timings { return e.tm.timings() }

// RegisterHost keeps b's range, refusing overlaps as cuMemHostRegister
// does: a task inside it counts as copied directly.
func (e *emulator) RegisterHost(b []byte) error { return e.tm.addRange(b) }

func (e *emulator) UnregisterHost(b []byte) error { return e.tm.removeRange(b) }

func (*emulator) Name() string { return "emulator" }

func (*emulator) Supports(p *kernels.Plan) error { return Supported(p) }

func (*emulator) SupportsJoin(j *query.WindowJoin) error { return SupportedJoin(j) }

func (e *emulator) Compile(p *kernels.Plan, depth int) (Program, error) {
	pr, err := e.compile(p, depth)
	if err != nil {
		return nil, err
	}
	return pr, nil
}

func (e *emulator) compile(p *kernels.Plan, depth int) (*program, error) {
	sh, err := analyse(p)
	if err != nil {
		return nil, fmt.Errorf("gpu: %w", err)
	}
	if depth < 1 {
		return nil, fmt.Errorf("gpu: query %q: pipeline depth %d must be at least 1", sh.name, depth)
	}
	be := &emuBackend{k: kparams{
		tupleSize: int64(sh.tupleSize), rows: sh.rows,
		preds: sh.predWords(), npreds: int64(len(sh.preds)),
		code: sh.code, where: sh.where,
	}, slots: make([]emuSlot, depth), tm: &e.tm, twoPass: selTwoPass()}
	if sh.agg {
		be.k.join, be.k.joinOff, be.k.denseJoin = sh.join, int64(sh.joinOff), sh.denseJoin
		be.k.aggs, be.k.naggs = sh.aggWords(), int64(len(sh.aggs))
		be.k.keys, be.k.nkeys = sh.keyWords(), int64(len(sh.keys))
		be.k.groups, be.k.rowWords = int64(sh.groups), int64(sh.rowWords())
		be.k.pane, be.k.size, be.k.slide = sh.spec.Pane, sh.spec.Size, sh.spec.Slide
		be.k.initRow = sh.initRow()
	} else {
		be.k.proj, be.k.nproj = sh.projWords(), int64(len(sh.project))
	}
	be.sh, be.agg, be.outSize = sh, sh.agg, int64(sh.outSize)
	return compileOpen(&e.programs, e.Name(), func() (*program, error) { return newProgram(sh, depth, be), nil })
}

// CompileJoin returns the emulator's JoinProgram for j (join_count and
// join_compact in Go, synchronously), or an error wrapping ErrNoKernel
// where its WHERE has no GPU form.
func (e *emulator) CompileJoin(j *query.WindowJoin) (JoinProgram, error) {
	sh, err := analyseJoin(j)
	if err != nil {
		return nil, err
	}
	be := &emuJoin{sh: sh}
	h, err := compileOpen(&e.programs, e.Name(), func() (*joinHost, error) { return &joinHost{sh: sh, be: be, pack: be.pack}, nil })
	if err != nil {
		return nil, err // not a nil *joinHost in the interface
	}
	return h, nil
}

// Close closes the programs and join programs still open.
func (e *emulator) Close() error {
	_, err := e.programs.close()
	return err
}

// poisonWord fills the emulator's output buffers before every task: a
// result that shows it read a word the kernels did not write.
const poisonWord uint64 = 0xdeadbeefdeadbeef

// emuAggCheck, set by tests only, sees each aggregation task's parameters
// and output words once the emulated kernels have run (on the slot's
// goroutine).
var emuAggCheck func(k *kparams, words []uint64)

// emuBackend runs the emulated kernels, one goroutine per task in flight.
type emuBackend struct {
	k       kparams // the program's constant parameters
	sh      *shape
	agg     bool
	outSize int64
	slots   []emuSlot
	tm      *timer
	twoPass bool // a selection's compaction evaluates WHERE again (selTwoPass)
}

// emuSlot is a slot's "device memory".
type emuSlot struct {
	tuples []byte   // the task's bytes, copied in as to the device
	words  []uint64 // aggregation output, or selection counters
	table  []uint64 // hashed groups' table
	blocks []uint64 // per-block partials
	flags  []uint32 // a selection's: per warp, the ballot of its tuples that pass
	nwords int64    // hashed groups: the output's words before the entries
	out    []byte   // selection output
	done   chan struct{}
	submit time.Duration // start's time
}

func grow[T any](b []T, n int64) []T {
	if int64(cap(b)) < n {
		return make([]T, n)
	}
	return b[:n]
}

func (be *emuBackend) start(s int, t *task) error {
	sl := &be.slots[s]
	t0 := time.Now()
	be.tm.copied(be.tm.registered(t.data))
	defer func() { sl.submit = time.Since(t0) }()
	k := be.k
	k.n, k.first = int64(t.n), int64(t.first)
	k.base, k.npanes = t.base, t.npanes
	// The host-to-device copy.
	sl.tuples = grow(sl.tuples, int64(len(t.data)))
	copy(sl.tuples, t.data)
	k.tuples = sl.tuples
	sl.blocks = grow(sl.blocks, max(1, gridOf(k.n)))
	if be.agg {
		sl.words = grow(sl.words, be.sh.aggOutWords(k.npanes, t.entries))
		sl.nwords = be.sh.aggOutWords(k.npanes, 0)
		if k.nkeys > 0 {
			sl.table = grow(sl.table, t.slots)
			clear(sl.table) // cuMemsetD32Async of the table
			k.table, k.tableMask = sl.table, uint64(t.slots-1)
		}
	} else {
		sl.words = grow(sl.words, selCounters)
		sl.out = grow(sl.out, k.n*be.outSize)
		poisonBytes(sl.out)
		sl.flags = grow(sl.flags, (k.n+31)/32)
		for i := range sl.flags {
			sl.flags[i] = uint32(poisonWord & 0xffffffff)
		}
	}
	poison(sl.words)
	poison(sl.blocks)
	sl.done = make(chan struct{})
	go func(sl *emuSlot, k *kparams) {
		defer close(sl.done)
		if be.agg {
			emuAggInit(k, sl.words)
			if k.n > 0 {
				emuAggBlockMax(k, sl.blocks, sl.words)
				emuScanBlocks(sl.blocks, gridOf(k.n), scanMax)
				emuAggTuples(k, sl.blocks, sl.words)
				if emuAggCheck != nil {
					emuAggCheck(k, sl.words)
				}
			}
			return
		}
		clear(sl.words) // cuMemsetD32Async of the counters
		if k.n > 0 {
			emuSelCount(k, sl.blocks, sl.flags)
			emuScanBlocks(sl.blocks, gridOf(k.n), scanSum)
			flags := sl.flags
			if be.twoPass {
				flags = nil // sel_compact: WHERE evaluated again
			}
			emuSelCompact(k, sl.blocks, flags, sl.out, sl.words)
		}
	}(sl, &k)
	return nil
}

func (be *emuBackend) finish(s int) ([]uint64, []byte, error) {
	sl := &be.slots[s]
	if sl.done == nil {
		return nil, nil, errors.New("no task started")
	}
	t0 := time.Now()
	<-sl.done
	sl.done = nil
	be.tm.task(-1, -1, -1, sl.submit, time.Since(t0))
	if be.agg {
		if be.k.nkeys == 0 {
			be.tm.trips(true)
			return sl.words, nil, nil
		}
		// The entries claimed, after the header and the panes' first
		// tuples, as the CUDA device copies them.
		e := sl.words[hdrEntries]
		if e > uint64(len(sl.words)-int(sl.nwords))/uint64(be.sh.entryWords()) {
			return nil, nil, fmt.Errorf("hashed groups: %d entries claimed, room for %d", e, (len(sl.words)-int(sl.nwords))/be.sh.entryWords())
		}
		be.tm.trips(hashedOneTrip(int64(len(sl.words))*8, int64(len(sl.tuples))))
		return sl.words[:sl.nwords+int64(e)*int64(be.sh.entryWords())], nil, nil
	}
	be.tm.trips(true)
	kept := sl.words[selCount]
	if kept > uint64(len(sl.out))/uint64(be.outSize) {
		return nil, nil, fmt.Errorf("selection kept %d tuples of %d", kept, len(sl.out)/int(be.outSize))
	}
	return sl.words, sl.out[:kept*uint64(be.outSize)], nil
}

func (be *emuBackend) close() error {
	for i := range be.slots {
		if d := be.slots[i].done; d != nil {
			<-d
		}
		be.slots[i] = emuSlot{}
	}
	return nil
}

func poison(w []uint64) {
	for i := range w {
		w[i] = poisonWord
	}
}

func poisonBytes(b []byte) {
	for i := range b {
		b[i] = byte(poisonWord >> (8 * (i & 7)))
	}
}
