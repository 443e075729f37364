package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/window"
)

// bruteLate counts, by the rule applied literally in unbounded integers,
// the tuples of one task that a kernel judges late: tuples passing WHERE
// and the join for which a watermark exists (the largest event time of the
// task's earlier tuples) and the watermark minus the delay has reached the
// end of the first window containing the tuple.
func bruteLate(q *query.Query, keys map[string]bool, task []byte) uint64 {
	w := q.Window
	size, slide, delay := big.NewInt(w.Size), big.NewInt(w.Slide), big.NewInt(w.Delay)
	var late uint64
	wm, has := int64(0), false
	for o := 0; o < len(task); o += 64 {
		t := task[o : o+64]
		et := int64(binary.LittleEndian.Uint64(t))
		pass := (q.Where == nil || binary.LittleEndian.Uint32(t[8:]) == 0) && (q.Join == nil || keys[string(t[16:32])])
		if pass && has {
			// The first window: floor((et-size)/slide)+1; its end.
			first, _ := new(big.Int).DivMod(new(big.Int).Sub(big.NewInt(et), size), slide, new(big.Int))
			end := first.Add(first, big.NewInt(1)).Mul(first, slide).Add(first, size)
			if new(big.Int).Sub(big.NewInt(wm), delay).Cmp(end) >= 0 {
				late++
			}
		}
		if !has || et > wm {
			wm, has = et, true
		}
	}
	return late
}

// TestDelayKernels: YSB-shaped queries (the fused kernel's fast loop, its
// general loop, and the vectorised kernel) with watermark delays from 0 to
// MaxInt64 over out-of-order tasks: the three give the same task results,
// and the late tuples are exactly those of the rule applied tuple by tuple
// (bruteLate), fewer with a larger delay.
func TestDelayKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(16, 17))
	windows := []query.Window{query.Tumbling(100), query.Sliding(300, 50), query.Tumbling(7), query.Sliding(40, 13)}
	delays := []int64{0, 1, 3, 40, 150, 1000, math.MaxInt64 - 1, math.MaxInt64}
	for _, pred := range []bool{false, true} {
		for _, join := range []bool{false, true} {
			for wi, w0 := range windows {
				t.Run(fmt.Sprintf("pred%v/join%v/w%d", pred, join, wi), func(t *testing.T) {
					q, keys := fastShape(t, r, pred, join, r.IntN(2) == 0, w0)
					known := map[string]bool{}
					for _, k := range keys {
						known[string(k)] = true
					}
					data := fastData(r, 2000, keys, 1+r.Int64N(4))
					var cuts []int
					for off := 0; off < len(data); {
						n := min(len(data)-off, 64*(1+r.IntN(500)))
						cuts = append(cuts, n)
						off += n
					}
					prevLate := uint64(math.MaxUint64)
					for _, d := range delays {
						q.Window.Delay = d
						p, err := Compile(q)
						require.NoError(t, err)
						require.Equal(t, d, p.Spec.Delay)
						k, ok := p.NewKernel().(*fusedKernel)
						require.True(t, ok && k.fast, "the fused kernel, its fast loop")
						pv, err := CompileWith(q, Options{Vectorised: true})
						require.NoError(t, err)
						vk := pv.NewKernel()
						var late uint64
						off := 0
						for _, n := range cuts {
							task := data[off : off+n]
							var fast, general, vec window.TaskResult
							fast.Reset(p.Layout)
							general.Reset(p.Layout)
							vec.Reset(pv.Layout)
							k.fast = true
							k.Process(task, uint64(off/64), &fast)
							k.fast = false
							k.Process(task, uint64(off/64), &general)
							vk.Process(task, uint64(off/64), &vec)
							assertSameResult(t, &general, &fast, off)
							assertSameResult(t, &general, &vec, off)
							require.Equal(t, bruteLate(q, known, task), general.Late, "delay %d, task at byte %d", d, off)
							late += general.Late
							off += n
						}
						assert.LessOrEqual(t, late, prevLate, "delay %d: no more late tuples than a smaller delay", d)
						prevLate = late
						if d == 0 {
							assert.Positive(t, late, "the input has late tuples")
						}
						if d >= 1000 {
							assert.Zero(t, late, "delay %d", d)
						}
					}
				})
			}
		}
	}
}
