//go:build cuda

package cuda

// These tests launch the embedded PTX on a GPU and compare with a serial Go
// reference of kernels/fused.go's semantics. They need an NVIDIA GPU and
// driver: cu's init exits the test binary without one. Build them elsewhere
// with build/gpu-bundle.sh (or: eval "$(build/cuda-env.sh)";
// go test -c -tags cuda ./kernels/cuda/) and run the binary on the GPU machine.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/cu"
)

const (
	tupleSize = 128
	offTime   = 0
	offAdID   = 40
	offEvent  = 60
)

func withContext(t *testing.T) {
	t.Helper()
	ctx, err := cu.Device(0).MakeContext(cu.SchedAuto)
	require.NoError(t, err)
	require.NoError(t, ctx.Lock())
	t.Cleanup(func() {
		assert.NoError(t, ctx.Unlock())
		assert.NoError(t, ctx.Destroy())
	})
}

// devBuf is device memory freed at the end of the test.
func devBuf(t *testing.T, bytes int64) cu.DevicePtr {
	t.Helper()
	if bytes == 0 {
		bytes = 8
	}
	p, err := cu.MemAlloc(bytes)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, cu.MemFree(p)) })
	return p
}

func upload[T any](t *testing.T, s []T) cu.DevicePtr {
	t.Helper()
	n := int64(len(s)) * int64(unsafe.Sizeof(*new(T)))
	p := devBuf(t, n)
	if n > 0 {
		require.NoError(t, cu.MemcpyHtoD(p, unsafe.Pointer(&s[0]), n))
	}
	return p
}

func download[T any](t *testing.T, p cu.DevicePtr, n int) []T {
	t.Helper()
	s := make([]T, n)
	if n > 0 {
		require.NoError(t, cu.MemcpyDtoH(unsafe.Pointer(&s[0]), p, int64(n)*int64(unsafe.Sizeof(s[0]))))
	}
	return s
}

// poison fills n 32-bit words at p with a pattern no result has.
func poison(t *testing.T, p cu.DevicePtr, words int64) {
	t.Helper()
	if words == 0 {
		return
	}
	require.NoError(t, cu.MemsetD32(p, 0xdeadbeef, words))
}

func zero(t *testing.T, p cu.DevicePtr, bytes int64) {
	if bytes == 0 {
		return
	}
	require.NoError(t, cu.MemsetD32(p, 0, bytes/4))
}

// launch runs fn with 64-bit params and waits for it.
func launch(t *testing.T, mod cu.Module, name string, grid, block int, params ...any) {
	t.Helper()
	fn, err := mod.Function(name)
	require.NoError(t, err)
	words := make([]uint64, len(params))
	ptrs := make([]unsafe.Pointer, len(params))
	for i, p := range params {
		switch v := p.(type) {
		case cu.DevicePtr:
			words[i] = uint64(v)
		case int64:
			words[i] = uint64(v)
		case uint64:
			words[i] = v
		case int:
			words[i] = uint64(int64(v))
		default:
			t.Fatalf("param %d of %s: %T", i, name, p)
		}
		ptrs[i] = unsafe.Pointer(&words[i])
	}
	require.NoError(t, fn.Launch(grid, 1, 1, block, 1, 1, 0, cu.Stream{}, ptrs), name)
	require.NoError(t, cu.Synchronize(), name)
}

func mix(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	return k ^ (k >> 33)
}

// table is kernels/join.go's layout.
type table struct {
	mask   uint64
	hi, lo []uint64
	ord    []int32
}

func newTable(hi, lo []uint64, ord []int32) *table {
	n := uint64(16)
	for n < 2*uint64(len(hi)) {
		n <<= 1
	}
	tb := &table{mask: n - 1, hi: make([]uint64, n), lo: make([]uint64, n), ord: make([]int32, n)}
	for i := range tb.ord {
		tb.ord[i] = -1
	}
	for i := range hi {
		s := mix(lo[i]^mix(hi[i])) & tb.mask
		for tb.ord[s] >= 0 {
			s = (s + 1) & tb.mask
		}
		tb.hi[s], tb.lo[s], tb.ord[s] = hi[i], lo[i], ord[i]
	}
	return tb
}

func (tb *table) lookup(hi, lo uint64) int32 {
	s := mix(lo^mix(hi)) & tb.mask
	for {
		if o := tb.ord[s]; o < 0 || (tb.hi[s] == hi && tb.lo[s] == lo) {
			return o
		}
		s = (s + 1) & tb.mask
	}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

type spec struct{ pane, size, slide int64 }

func (s spec) seal(p int64) int64 { return (floorDiv(p*s.pane-s.size, s.slide)+1)*s.slide + s.size }

// reference is fused.go's loop for YSB: rows[(pane-base)*groups+g] = {count, max}.
func reference(data []byte, tb *table, groups int, sp spec, base, npanes int64) (rows []int64, ctr [NumCounters]int64) {
	rows = make([]int64, npanes*int64(groups)*YSBRowWords)
	wm := int64(math.MinInt64)
	for i := 0; i < len(data)/tupleSize; i++ {
		tu := data[i*tupleSize:]
		et := int64(binary.LittleEndian.Uint64(tu[offTime:]))
		prev := wm
		wm = max(wm, et)
		if int32(binary.LittleEndian.Uint32(tu[offEvent:])) != 0 {
			ctr[CounterFiltered]++
			continue
		}
		o := tb.lookup(binary.LittleEndian.Uint64(tu[offAdID:]), binary.LittleEndian.Uint64(tu[offAdID+8:]))
		if o < 0 {
			ctr[CounterUnmatched]++
			continue
		}
		p := floorDiv(et, sp.pane)
		if prev >= sp.seal(p) {
			ctr[CounterLate]++
			continue
		}
		if p < base || p-base >= npanes {
			ctr[CounterOutside]++
			continue
		}
		r := rows[((p-base)*int64(groups)+int64(o))*YSBRowWords:]
		if r[0] == 0 {
			r[1] = et
		} else {
			r[1] = max(r[1], et)
		}
		r[0]++
	}
	ctr[CounterMaxTS] = wm
	return rows, ctr
}

// gen makes n YSB tuples: event types 0..2, ads from the table or not,
// event times rising from t0 with some tuples jumping back by up to back ms.
func gen(rng *rand.Rand, n int, hi, lo []uint64, t0, back int64) []byte {
	data := make([]byte, n*tupleSize)
	et := t0
	for i := 0; i < n; i++ {
		tu := data[i*tupleSize:]
		if rng.IntN(10) == 0 {
			et++
		}
		ts := et
		if back > 0 && rng.IntN(50) == 0 {
			ts -= rng.Int64N(back)
		}
		binary.LittleEndian.PutUint64(tu[offTime:], uint64(ts))
		a := rng.IntN(len(hi) + 5) // a few ads not in the table
		var h, l uint64 = rng.Uint64(), rng.Uint64()
		if a < len(hi) {
			h, l = hi[a], lo[a]
		}
		binary.LittleEndian.PutUint64(tu[offAdID:], h)
		binary.LittleEndian.PutUint64(tu[offAdID+8:], l)
		binary.LittleEndian.PutUint32(tu[offEvent:], uint32(rng.IntN(3)))
	}
	return data
}

func TestYSBKernelsMatchReference(t *testing.T) {
	withContext(t)
	mod, err := cu.LoadData(YSB)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, mod.Unload()) })

	const campaigns, ads = 100, 1000
	rng := rand.New(rand.NewPCG(1, 2))
	hi, lo, ord := make([]uint64, ads), make([]uint64, ads), make([]int32, ads)
	for a := range hi {
		hi[a], lo[a], ord[a] = rng.Uint64(), rng.Uint64(), int32(a/(ads/campaigns))
	}
	tb := newTable(hi, lo, ord)
	dHi, dLo, dOrd := upload(t, tb.hi), upload(t, tb.lo), upload(t, tb.ord)

	for _, c := range []struct {
		n, block int
		sp       spec
		t0, back int64
		npanes   int64
	}{
		{1, 256, spec{10000, 10000, 10000}, 5, 0, 2},
		{1000, 256, spec{10000, 10000, 10000}, 9990, 0, 2},
		{100003, 256, spec{10000, 10000, 10000}, 123456, 3000, 3},
		{100003, 1024, spec{10000, 10000, 10000}, -25000, 3000, 3},
		{262144, 512, spec{5000, 10000, 5000}, 40000, 12000, 6},
		{50000, 128, spec{1000, 10000, 1000}, 0, 20000, 2}, // panes outside the range
	} {
		t.Run(fmt.Sprintf("n%d_b%d_pane%d_slide%d_back%d", c.n, c.block, c.sp.pane, c.sp.slide, c.back), func(t *testing.T) {
			data := gen(rng, c.n, hi, lo, c.t0, c.back)
			base := floorDiv(int64(binary.LittleEndian.Uint64(data)), c.sp.pane)
			want, wantCtr := reference(data, tb, campaigns, c.sp, base, c.npanes)

			grid := (c.n + c.block - 1) / c.block
			dData := upload(t, data)
			nrows := c.npanes * campaigns
			dOut := devBuf(t, nrows*YSBRowWords*8)
			dBlock := devBuf(t, int64(grid)*8)
			dCtr := devBuf(t, NumCounters*8)
			poison(t, dBlock, int64(grid)*2)
			zero(t, dOut, nrows*YSBRowWords*8)
			zero(t, dCtr, NumCounters*8)

			launch(t, mod, "ysb_block_max", grid, c.block, dData, c.n, tupleSize, offTime, 0, 0, dBlock, dCtr)
			launch(t, mod, "ysb_aggregate", grid, c.block, dData, c.n, tupleSize, offTime, 0, 0,
				offEvent, 0, offAdID, dHi, dLo, dOrd, tb.mask, 1, campaigns,
				c.sp.pane, c.sp.size, c.sp.slide, base, c.npanes, dBlock, dOut, dCtr)
			launch(t, mod, "ysb_finish", int((nrows+255)/256), 256, dOut, nrows, dCtr)

			got := download[int64](t, dOut, int(nrows*YSBRowWords))
			gotCtr := download[int64](t, dCtr, NumCounters)
			assert.Equal(t, wantCtr[:], gotCtr)
			require.Equal(t, want, got)
			t.Logf("counters (filtered, unmatched, late, outside, max_ts): %v", gotCtr)
		})
	}
}

func TestSelectCompactionMatchesFilter(t *testing.T) {
	withContext(t)
	mod, err := cu.LoadData(Select)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, mod.Unload()) })
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct{ n, block, size, off int }{
		{0, 256, 128, 60}, {1, 256, 128, 60}, {100003, 256, 128, 60}, {70001, 1024, 128, 60},
		{5000, 64, 12, 4}, {4099, 32, 13, 5}, // 4-byte and unaligned tuples and columns
	} {
		t.Run(fmt.Sprintf("n%d_b%d_size%d_off%d", c.n, c.block, c.size, c.off), func(t *testing.T) {
			data := make([]byte, c.n*c.size)
			for i := range data {
				data[i] = byte(rng.Uint32())
			}
			var want []byte
			for i := 0; i < c.n; i++ {
				tu := data[i*c.size : (i+1)*c.size]
				v := int32(rng.IntN(3)) - 1
				binary.LittleEndian.PutUint32(tu[c.off:], uint32(v))
				if v == -1 {
					want = append(want, tu...)
				}
			}
			grid := max((c.n+c.block-1)/c.block, 1)
			dData := upload(t, data)
			dOut := devBuf(t, int64(len(data)))
			dBlock := devBuf(t, int64(grid)*8)
			dCount := devBuf(t, 8)
			poison(t, dOut, int64(len(data))/4)
			poison(t, dCount, 2)
			launch(t, mod, "select_eq_i32_count", grid, c.block, dData, c.n, c.size, c.off, int64(-1), dBlock)
			launch(t, mod, "select_eq_i32_compact", grid, c.block, dData, c.n, c.size, c.off, int64(-1), dBlock, dOut, dCount)
			n := download[uint64](t, dCount, 1)[0]
			require.Equal(t, uint64(len(want)/c.size), n)
			got := download[byte](t, dOut, len(want))
			assert.True(t, bytes.Equal(want, got), "compacted tuples differ")
		})
	}
}
