//go:build cuda

package gpu

import (
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/buffer"
	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/window"
)

// TestCUDARegisteredRing: a buffer.Ring's whole mirrored mapping (its
// memory twice, back to back, as the engine's GPU worker registers it) is
// registered with the device; tasks inside it, one across the wrap too, are
// copied from it without the staging copy, and the kernels' results are
// the CPU kernels'. Where the driver refuses the mirror, the test says so
// and goes on with the first half (the engine's fallback).
func TestCUDARegisteredRing(t *testing.T) {
	d := openGPU(t).(*cudaDevice)
	const size = 1 << 20
	ring, err := buffer.NewRing(size)
	require.NoError(t, err)
	defer ring.Close()
	first := ring.Slice(0, size)
	mem := unsafe.Slice(unsafe.SliceData(first), 2*size)
	whole := true
	if err := d.RegisterHost(mem); err != nil {
		t.Logf("the driver refused the mirrored mapping (%v): registering the first half", err)
		mem, whole = mem[:size], false
		require.NoError(t, d.RegisterHost(mem))
	}
	defer func() { assert.NoError(t, d.UnregisterHost(mem)) }()

	ts := newTestSchema(t, false)
	r := rand.New(rand.NewPCG(9, 9))
	q := &query.Query{Name: "ring", Schema: ts.s, Where: query.ColLt("a", 5)}
	p, pg := compilePlans(t, q, kernels.Options{})
	pr := compileCUDA(t, d, pg, 1)
	k := p.NewKernel()
	tsz := ts.s.TupleSize
	n := 3000
	data := randData(r, ts, testTable(r, 10, 3), dataGen{t0: 0, step: 1}, n)
	// Tasks at the start, in the middle and (with the mirror) across the
	// wrap: the ring's bytes are written through the first half.
	for _, at := range []int{0, size/2 - size/2%tsz, size - (n/2)*tsz} {
		if !whole && at+len(data) > size {
			continue
		}
		for i := range data {
			first[(at+i)%size] = data[i]
		}
		task := mem[at : at+len(data)]
		before := d.Timings().DirectTasks
		require.NoError(t, pr.Submit(0, task, 0))
		var got window.TaskResult
		got.Reset(pg.Layout)
		ok, err := pr.Wait(0, &got)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, before+1, d.Timings().DirectTasks, "task at %d: copied from registered memory", at)
		want := &window.TaskResult{}
		want.Reset(p.Layout)
		k.Process(data, 0, want)
		requireSameResult(t, want, &got, "ring task")
	}
	tm := d.Timings()
	t.Logf("timings: %+v", tm)
	assert.Positive(t, tm.Kernel.P50, "CUDA events timed the kernels")
	assert.Contains(t, []string{"blocking", "spin", "yield", "auto"}, tm.Sync)
}
