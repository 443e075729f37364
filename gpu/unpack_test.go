package gpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/testenv"
	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/window"
)

// TestUnpackOnAnotherGoroutine: Unpack of one slot runs on a goroutine of
// its own while the test's goroutine submits and finishes the program's
// other slots (as the engine's GPU worker does), and the results are the
// CPU kernel's, task by task (run with -race).
func TestUnpackOnAnotherGoroutine(t *testing.T) {
	dev := NewEmulator()
	defer dev.Close()
	// The long run's 30, at most 10 under -short, 10 by default.
	n := testenv.Scale(10, 30)
	if testing.Short() {
		n = min(n, 10)
	}
	for seed := range n {
		r := rand.New(rand.NewPCG(uint64(seed), 41))
		ts := newTestSchema(t, seed%2 == 0)
		table := testTable(r, 1+r.IntN(40), 1+r.IntN(12))
		q := randQuery(r, ts, table)
		p, pg := compilePlans(t, q, kernels.Options{})
		depth := 2 + r.IntN(3)
		pr := compileEmu(t, dev, pg, depth)
		data := randData(r, ts, table, randGen(r), r.IntN(4000))
		msg := fmt.Sprintf("seed %d, depth %d, %+v", seed, depth, q)

		type job struct {
			s, i         int
			data         []byte
			first        uint64
			base, npanes int64
			slots        int64
		}
		type done struct {
			job
			ok        bool
			err       error
			got, want *window.TaskResult
		}
		jobs, results := make(chan job, depth), make(chan done, depth)
		go func() {
			defer close(results)
			k := p.NewKernel() // the unpacker's own
			for j := range jobs {
				d := done{job: j, got: &window.TaskResult{}}
				d.got.Reset(pr.sh.layout)
				d.ok, d.err = pr.Unpack(j.s, d.got)
				d.want = cpuResult(p, k, j.data, j.first)
				if !d.ok {
					// The fallback, into the program's result (runCase).
					d.got.Reset(pr.sh.layout)
					k.Process(j.data, j.first, d.got)
				}
				results <- d
			}
		}()
		ring := make([]job, depth)
		head, inFlight, unpacking := 0, 0, 0
		receive := func() {
			d := <-results
			require.NoError(t, d.err, msg)
			require.Equal(t, ring[head].s, d.s, "%s: unpacked in order", msg)
			m := fmt.Sprintf("%s, task %d", msg, d.i)
			if !p.Stateless() {
				fits := !pr.sh.hashed || groupsOf(d.want) <= d.slots
				require.Equal(t, inRange(d.want, d.base, d.npanes) && fits, d.ok, m)
			} else {
				require.True(t, d.ok, m)
			}
			requireSameResult(t, d.want, d.got, m)
			head, inFlight, unpacking = (head+1)%depth, inFlight-1, unpacking-1
		}
		var first uint64
		for i, task := range cutTasks(r, data, p.TupleSize, 1+r.IntN(1500)) {
			for inFlight == depth {
				if unpacking < inFlight {
					s := (head + unpacking) % depth
					require.NoError(t, pr.Finish(s), msg)
					jobs <- ring[s]
					unpacking++
				} else {
					receive()
				}
			}
			s := (head + inFlight) % depth
			require.NoError(t, pr.Submit(s, task, first), msg)
			st := pr.slots[s].t
			ring[s] = job{s: s, i: i, data: task, first: first, base: st.base, npanes: st.npanes, slots: st.slots}
			first += uint64(len(task) / p.TupleSize)
			inFlight++
		}
		for unpacking < inFlight {
			s := (head + unpacking) % depth
			require.NoError(t, pr.Finish(s), msg)
			jobs <- ring[s]
			unpacking++
		}
		for inFlight > 0 {
			receive()
		}
		close(jobs)
		_, open := <-results
		require.False(t, open)
	}
}

// TestFinishUnpackMisuse: Finish and Unpack say what is wrong with a slot
// in the wrong state.
func TestFinishUnpackMisuse(t *testing.T) {
	dev := NewEmulator()
	defer dev.Close()
	r := rand.New(rand.NewPCG(1, 2))
	ts := newTestSchema(t, false)
	q := randQuery(r, ts, testTable(r, 5, 3))
	_, pg := compilePlans(t, q, kernels.Options{})
	pr := compileEmu(t, dev, pg, 2)
	var res window.TaskResult
	res.Reset(pr.sh.layout)
	require.ErrorContains(t, pr.Finish(0), "no task in flight")
	_, err := pr.Unpack(0, &res)
	require.ErrorContains(t, err, "no finished task")
	data := randData(r, ts, testTable(r, 5, 3), randGen(r), 100)
	require.NoError(t, pr.Submit(0, data, 0))
	_, err = pr.Unpack(0, &res)
	require.ErrorContains(t, err, "no finished task")
	require.NoError(t, pr.Finish(0))
	require.ErrorContains(t, pr.Finish(0), "no task in flight")
	require.ErrorContains(t, pr.Submit(0, data, 0), "busy")
	_, err = pr.Unpack(0, &res)
	require.NoError(t, err)
	_, err = pr.Unpack(0, &res)
	require.ErrorContains(t, err, "no finished task")
}
