package gpu

import (
	"errors"
	"fmt"

	"github.com/saber-hx/saber-hx/query"
)

// Window joins' pairs (query.WindowJoin): a JoinProgram computes one
// window's pairs as the engine's joinStage.joinWindow does on the CPU, the
// left tuples (in the window's order) crossed with the right ones, each pair
// the left tuple's bytes followed by the right tuple's, kept where the
// join's WHERE holds, in left-major, right-minor order.
//
// The host packs the window's left tuples, then its right ones, into one
// buffer and copies it to the device. One thread per pair (a flattened 1-D
// grid: pair i is left tuple i / nr with right tuple i % nr) evaluates the
// predicate, compiled to the expression bytecode (expr.go) over the join's
// output schema (query.WindowJoin.OutputSchemaUnchecked: the l. columns at
// their offsets, the r. columns shifted by the left tuple size), reading a
// column below the left tuple size from the left tuple and the others from
// the right one. join_count counts each block's passing pairs; join_compact
// copies them to the output after the blocks before (the sum of their
// counts) in pair order within the block (an exclusive scan), as the
// selection kernels compact tuples.
//
// The output buffer holds every pair of the window: a window whose pairs
// would exceed maxJoinOutBytes is not run (Join reports ok false) and the
// caller joins it on the CPU.

// JoinProgram computes window joins' pairs on a device. One goroutine at a
// time uses it. It is an alias of an interface literal, identical to
// engine.GPUJoinProgram's (see Program).
type JoinProgram = interface {
	// Join appends to out the pairs of the window whose left tuples are
	// left and right tuples right (each at least the side's tuple size;
	// its first tuple-size bytes are the tuple), in exactly the CPU's
	// order, and returns it. ok false: the window's pairs do not fit the
	// device's output buffer; out is returned unchanged and the caller
	// joins the window on the CPU.
	Join(left, right [][]byte, out []byte) (res []byte, ok bool, err error)
	// Close frees the program's buffers.
	Close() error
}

// maxJoinOutBytes bounds a window's pairs (all of them, before the
// predicate): the device's output buffer holds them all.
const maxJoinOutBytes = 64 << 20

// joinShape is a window join as the join kernels see it.
type joinShape struct {
	name                  string
	lsize, rsize, outSize int64
	code                  []uint64
	where                 int64 // start in code of WHERE (terms chained by opRequire); -1: none
}

// analyseJoin compiles j's WHERE, or returns an error wrapping ErrNoKernel
// where the bytecode cannot express it.
func analyseJoin(j *query.WindowJoin) (*joinShape, error) {
	if j == nil {
		return nil, errors.New("gpu: no join")
	}
	if err := j.Validate(); err != nil {
		return nil, fmt.Errorf("gpu: %w", err)
	}
	if j.Regular {
		return nil, fmt.Errorf("gpu: join %q: a regular join (its state a hash index per side, filed in order) runs on the CPU: %w", j.Name, ErrNoKernel)
	}
	sh := &joinShape{name: j.Name, lsize: int64(j.Left.TupleSize), rsize: int64(j.Right.TupleSize), where: -1}
	sh.outSize = sh.lsize + sh.rsize
	if sh.lsize <= 0 || sh.rsize <= 0 {
		return nil, fmt.Errorf("gpu: join %q: tuple sizes %d and %d", j.Name, sh.lsize, sh.rsize)
	}
	for _, s := range []*query.Schema{j.Left, j.Right} {
		if why := sqlValues(&query.Query{Schema: s}); why != "" {
			return nil, fmt.Errorf("gpu: join %q: %s (the GPU kernels know numbers only): %w", j.Name, why, ErrNoKernel)
		}
	}
	if j.Where != nil {
		var terms []query.Expr
		var flatten func(e query.Expr)
		flatten = func(e query.Expr) {
			if a, ok := e.(query.AndExpr); ok && len(a.Terms) > 0 {
				for _, t := range a.Terms {
					flatten(t)
				}
				return
			}
			terms = append(terms, e)
		}
		flatten(j.Where)
		c := &exprCompiler{s: j.OutputSchemaUnchecked()}
		start, err := c.conjunction(terms)
		if err != nil {
			return nil, fmt.Errorf("gpu: join %q: WHERE term %v: %w", j.Name, err, ErrNoKernel)
		}
		sh.code, sh.where = c.code, start
	}
	return sh, nil
}

// joinBackend is a join program's device side.
type joinBackend interface {
	// run computes the pairs of the packed window (nl left tuples, then
	// nr right ones, whole tuples) and returns them, valid until the next
	// run. nl*nr > 0 and its pairs fit maxJoinOutBytes.
	run(in []byte, nl, nr int64) ([]byte, error)
	close() error
}

// joinHost is the host side of a JoinProgram, shared by both devices.
type joinHost struct {
	sh      *joinShape
	be      joinBackend
	closed  bool
	onClose func()
	// pack writes the window's tuples into the device's staging buffer
	// (grown to n bytes) and returns it.
	pack func(n int64) ([]byte, error)
}

func (h *joinHost) Join(left, right [][]byte, out []byte) ([]byte, bool, error) {
	if h.closed {
		return out, false, errors.New("gpu: join program is closed")
	}
	sh := h.sh
	nl, nr := int64(len(left)), int64(len(right))
	if nl == 0 || nr == 0 {
		return out, true, nil
	}
	if nl > maxJoinOutBytes/sh.outSize/nr {
		return out, false, nil
	}
	for _, t := range left {
		if int64(len(t)) < sh.lsize {
			return out, false, fmt.Errorf("gpu: join %q: left tuple of %d bytes, want %d", sh.name, len(t), sh.lsize)
		}
	}
	for _, t := range right {
		if int64(len(t)) < sh.rsize {
			return out, false, fmt.Errorf("gpu: join %q: right tuple of %d bytes, want %d", sh.name, len(t), sh.rsize)
		}
	}
	in, err := h.pack(nl*sh.lsize + nr*sh.rsize)
	if err != nil {
		return out, false, fmt.Errorf("gpu: join %q: %w", sh.name, err)
	}
	o := int64(0)
	for _, t := range left {
		o += int64(copy(in[o:], t[:sh.lsize]))
	}
	for _, t := range right {
		o += int64(copy(in[o:], t[:sh.rsize]))
	}
	pairs, err := h.be.run(in[:o], nl, nr)
	if err != nil {
		return out, false, fmt.Errorf("gpu: join %q: %w", sh.name, err)
	}
	if int64(len(pairs))%sh.outSize != 0 || int64(len(pairs))/sh.outSize > nl*nr {
		return out, false, fmt.Errorf("gpu: join %q: %d output bytes for %d pairs of %d bytes", sh.name, len(pairs), nl*nr, sh.outSize)
	}
	return append(out, pairs...), true, nil
}

func (h *joinHost) Close() error {
	if h.closed {
		return nil
	}
	h.closed = true
	err := h.be.close()
	if h.onClose != nil {
		h.onClose()
	}
	return err
}
