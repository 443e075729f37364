//go:build cuda

package gpu

import (
	"errors"
	"fmt"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/saber-hx/saber-hx/query"
)

// CompileJoin returns j's JoinProgram on the GPU: join_count and
// join_compact (kernels.cu) on a stream of its own, with page-locked
// staging and device buffers grown as windows need. Join is synchronous.
func (d *cudaDevice) CompileJoin(j *query.WindowJoin) (JoinProgram, error) {
	sh, err := analyseJoin(j)
	if err != nil {
		return nil, err
	}
	h, err := compileOpen(&d.programs, d.Name(), func() (*joinHost, error) {
		be := &cudaJoin{d: d, sh: sh}
		if err := d.do(be.init); err != nil {
			_ = d.do(be.free)
			return nil, fmt.Errorf("gpu: %s: join %q: %w", d.Name(), sh.name, err)
		}
		return &joinHost{sh: sh, be: be, pack: be.pack}, nil
	})
	if err != nil {
		return nil, err // not a nil *joinHost in the interface
	}
	return h, nil
}

// cudaJoin is a join program's device side.
type cudaJoin struct {
	d  *cudaDevice
	sh *joinShape
	// poison makes every window poison the output buffers (device and
	// staging) before the kernels run: the tests set it.
	poison bool

	code    devBuf
	stream  cu.Stream
	hasStrm bool

	hIn, hCtr, hOut pinnedBuf
	dIn, dCtr, dBlk devBuf
	dOut            devBuf
	args            [16]uint64
	ptrs            [16]unsafe.Pointer
}

func (be *cudaJoin) init() error {
	if err := be.code.upload(be.sh.code, "join predicate"); err != nil {
		return err
	}
	s, err := cu.MakeStream(cu.NonBlocking)
	if err != nil {
		return fmt.Errorf("cuStreamCreate (join): %w", err)
	}
	be.stream, be.hasStrm = s, true
	return nil
}

// free releases everything (no kernel is running).
func (be *cudaJoin) free() error {
	var errs []error
	if be.hasStrm {
		if err := be.stream.Destroy(); err != nil {
			errs = append(errs, fmt.Errorf("cuStreamDestroy (join): %w", err))
		}
		be.hasStrm = false
	}
	errs = append(errs, be.code.release("join predicate"), be.dIn.release("window tuples"), be.dCtr.release("join counter"),
		be.dBlk.release("block counts"), be.dOut.release("join pairs"),
		be.hIn.release("window tuples"), be.hCtr.release("join counter"), be.hOut.release("join pairs"))
	return errors.Join(errs...)
}

// pack returns the page-locked staging buffer for a window of n bytes.
func (be *cudaJoin) pack(n int64) ([]byte, error) {
	if err := be.hIn.ensure(n, "window tuples"); err != nil {
		return nil, err
	}
	return be.hIn.b[:n], nil
}

func (be *cudaJoin) launch(name string, grid int64, args ...uint64) error {
	if want := kernelParams[name]; len(args) != want {
		return fmt.Errorf("launch of %s with %d arguments, the kernel has %d parameters", name, len(args), want)
	}
	for i, a := range args {
		be.args[i] = a
		be.ptrs[i] = unsafe.Pointer(&be.args[i])
	}
	if err := be.d.fn[name].Launch(int(grid), 1, 1, blockDim, 1, 1, 0, be.stream, be.ptrs[:len(args)]); err != nil {
		return fmt.Errorf("cuLaunchKernel(%s, %d blocks of %d): %w", name, grid, blockDim, err)
	}
	return nil
}

func (be *cudaJoin) run(in []byte, nl, nr int64) (pairs []byte, err error) {
	err = be.d.do(func() error {
		pairs, err = be.enqueue(in, nl, nr)
		if err != nil {
			// Let what was enqueued finish before the buffers may be
			// reallocated.
			_ = be.stream.Synchronize()
		}
		return err
	})
	return pairs, err
}

func (be *cudaJoin) enqueue(in []byte, nl, nr int64) ([]byte, error) {
	sh := be.sh
	n := nl * nr
	nin := int64(len(in))
	if err := be.dIn.ensure(nin, "window tuples"); err != nil {
		return nil, err
	}
	grid := gridOf(n)
	if err := be.dBlk.ensure(max(grid, 1)*8, "block counts"); err != nil {
		return nil, err
	}
	if err := be.dCtr.ensure(8, "join counter"); err != nil {
		return nil, err
	}
	if err := be.hCtr.ensure(8, "join counter"); err != nil {
		return nil, err
	}
	outBytes := n * sh.outSize
	if err := be.dOut.ensure(outBytes, "join pairs"); err != nil {
		return nil, err
	}
	if err := be.hOut.ensure(outBytes, "join pairs"); err != nil {
		return nil, err
	}
	if nin > 0 {
		if err := cu.MemcpyHtoDAsync(be.dIn.p, unsafe.Pointer(&in[0]), nin, be.stream); err != nil {
			return nil, fmt.Errorf("cuMemcpyHtoDAsync (window, %d bytes): %w", nin, err)
		}
	}
	if be.poison {
		poisonBytes(be.hCtr.b)
		poisonBytes(be.hOut.b)
		for _, b := range []devBuf{be.dBlk, be.dOut} {
			if err := cu.MemsetD32Async(b.p, poison32, b.size/4, be.stream); err != nil {
				return nil, fmt.Errorf("cuMemsetD32Async (poison): %w", err)
			}
		}
	}
	if err := cu.MemsetD32Async(be.dCtr.p, 0, 2, be.stream); err != nil {
		return nil, fmt.Errorf("cuMemsetD32Async (join counter): %w", err)
	}
	where := uint64(sh.where) // -1: none
	if err := be.launch("join_count", grid, uint64(be.dIn.p), uint64(nl), uint64(sh.lsize), uint64(nr), uint64(sh.rsize),
		uint64(be.code.p), where, uint64(be.dBlk.p)); err != nil {
		return nil, err
	}
	if err := be.launch("scan_blocks", 1, uint64(be.dBlk.p), uint64(grid), scanSum); err != nil {
		return nil, err
	}
	if err := be.launch("join_compact", grid, uint64(be.dIn.p), uint64(nl), uint64(sh.lsize), uint64(nr), uint64(sh.rsize),
		uint64(be.code.p), where, uint64(be.dBlk.p), uint64(be.dOut.p), uint64(be.dCtr.p)); err != nil {
		return nil, err
	}
	if err := cu.MemcpyDtoHAsync(unsafe.Pointer(&be.hCtr.b[0]), be.dCtr.p, 8, be.stream); err != nil {
		return nil, fmt.Errorf("cuMemcpyDtoHAsync (join counter): %w", err)
	}
	if err := be.stream.Synchronize(); err != nil {
		return nil, fmt.Errorf("cuStreamSynchronize (join of %dx%d tuples): %w", nl, nr, err)
	}
	kept := be.hCtr.words(1)[0]
	if kept > uint64(n) {
		return nil, fmt.Errorf("join kept %d pairs of %d", kept, n)
	}
	nb := int64(kept) * sh.outSize
	if nb == 0 {
		return be.hOut.b[:0], nil
	}
	if err := cu.MemcpyDtoHAsync(unsafe.Pointer(&be.hOut.b[0]), be.dOut.p, nb, be.stream); err != nil {
		return nil, fmt.Errorf("cuMemcpyDtoHAsync (join pairs, %d bytes): %w", nb, err)
	}
	if err := be.stream.Synchronize(); err != nil {
		return nil, fmt.Errorf("cuStreamSynchronize (join pairs): %w", err)
	}
	return be.hOut.b[:nb], nil
}

// close frees the stream and the buffers (Join is synchronous: nothing
// runs).
func (be *cudaJoin) close() error {
	return be.d.do(be.free)
}
