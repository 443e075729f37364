package gpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/window"
)

// TestDelayRunsOnTheCPU: the device seals panes at the end of their first
// window and knows no watermark delay, so a program of a query with a
// delay launches none of its tasks: every task with tuples is Wait's ok
// false (the CPU kernel runs it, with the delay); the same query without a
// delay runs on the emulator with the CPU's results.
func TestDelayRunsOnTheCPU(t *testing.T) {
	dev := NewEmulator()
	defer dev.Close()
	var devTasks0, tasks0 int
	for seed := range 30 {
		r := rand.New(rand.NewPCG(uint64(seed), 16))
		ts := newTestSchema(t, seed%2 == 1)
		table := testTable(r, 1+r.IntN(40), 1+r.IntN(12))
		var q *query.Query
		for q == nil || q.Stateless() {
			q = randQuery(r, ts, table)
		}
		data := randData(r, ts, table, randGen(r), 200+r.IntN(1500))
		delay := []int64{1, 3, q.Window.Size, 10 * q.Window.Size, math.MaxInt64}[r.IntN(5)]
		for _, d := range []int64{0, delay} {
			q.Window.Delay = d
			p, pg := compilePlans(t, q, kernels.Options{})
			require.NoError(t, Supported(p), "seed %d: a delay is supported, by the CPU fallback", seed)
			pr := compileEmu(t, dev, pg, 1+r.IntN(3))
			msg := fmt.Sprintf("seed %d, window %+v, where=%v join=%v group=%v aggs=%v", seed, q.Window, q.Where, q.Join != nil, q.GroupBy, q.Aggregates)
			if d != 0 {
				assert.False(t, pr.exact, "%s: no exact pane", msg)
			}
			k := p.NewKernel()
			var got, want window.TaskResult
			first := uint64(0)
			for i, task := range cutTasks(r, data, ts.s.TupleSize, 1+r.IntN(400)) {
				require.NoError(t, pr.Submit(0, task, first))
				got.Reset(pr.sh.layout)
				ok, err := pr.Wait(0, &got)
				require.NoError(t, err)
				n := len(task) / ts.s.TupleSize
				if d != 0 {
					assert.Equal(t, n == 0, ok, "%s, task %d of %d tuples: runs on the CPU", msg, i, n)
				} else if n > 0 {
					tasks0++
					if ok {
						devTasks0++
					}
				}
				if ok {
					want.Reset(p.Layout)
					k.Process(task, first, &want)
					requireSameResult(t, &want, &got, fmt.Sprintf("%s, task %d", msg, i))
				}
				first += uint64(n)
			}
		}
	}
	assert.Positive(t, devTasks0, "without a delay the emulator ran tasks (of %d)", tasks0)
}
