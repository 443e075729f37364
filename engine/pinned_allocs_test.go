package engine

import (
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
)

// TestSlidingGroupsDoNotAllocate: sg2's shape (AVG over a sliding window,
// GROUP BY small integers: the kernel's direct tables, whose mapping the
// assembler pins, its panes taking the tables' storage through MergeTake)
// costs no allocation per task in steady state (panes of 48 tuples over
// tasks of 64: a pane takes one table's storage and absorbs the next),
// with every window's rows handed to a sink. (Broken on purpose, to see it
// fail: absorbPinned growing a pane's group list at every fragment.)
func TestSlidingGroupsDoNotAllocate(t *testing.T) {
	s := randSchema(t)
	const tupleTasks, perRun, groups = 64, 8, 16
	q := &query.Query{Name: "sliding", Schema: s, Window: query.Sliding(480, 48),
		GroupBy:    []query.Expr{query.C("b"), query.C("a")},
		Aggregates: []query.Aggregate{{Func: query.Avg, Arg: query.C("x")}, {Func: query.Count}}}
	rows := 0
	e, err := Start(Config{Workers: 2, TaskSize: randTuple * tupleTasks, BufferSize: 1 << 16},
		[]Spec{{Query: q, Windows: func(w *Window) error { rows += w.Rows(); return nil }}})
	require.NoError(t, err)
	st := e.Stream(0)
	var next int64
	chunk := make([]byte, perRun*tupleTasks*randTuple)
	run := func() {
		for o := 0; o < len(chunk); o += randTuple {
			binary.LittleEndian.PutUint64(chunk[o:], uint64(next))
			binary.LittleEndian.PutUint32(chunk[o+8:], uint32(next%2))
			binary.LittleEndian.PutUint32(chunk[o+12:], uint32(next%groups))
			binary.LittleEndian.PutUint32(chunk[o+24:], uint32(next%7)<<20)
			next++
		}
		if err := st.Write(chunk); err != nil {
			panic(err)
		}
		for st.InFlight() > 0 {
			runtime.Gosched()
		}
	}
	for range 40 { // warm up: every record used, every pane's storage grown
		run()
	}
	allocs := testing.AllocsPerRun(50, run)
	_, err = e.Close()
	require.NoError(t, err)
	assert.Zero(t, allocs, "allocations per %d tasks", perRun)
	assert.Positive(t, rows)
}

// TestTaskRecordsHoldNoStates: tiny tasks in a big ring put hundreds of
// task records in flight; each gives its group states back to the
// stream's pool at its merge, so that what the states take grows with the
// tasks being run and merged, not with the records. After the run no
// record holds a state, its partitions' splits included, and the pool
// holds what they gave back. (Broken on purpose, to see it fail: merge
// taking no state from the task, as before the pool, when every record
// kept its states.)
func TestTaskRecordsHoldNoStates(t *testing.T) {
	parallel(t)
	s := randSchema(t)
	q := &query.Query{Name: "sliding", Schema: s, Window: query.Sliding(480, 48),
		GroupBy:    []query.Expr{query.C("b"), query.C("a")},
		Aggregates: []query.Aggregate{{Func: query.Avg, Arg: query.C("x")}, {Func: query.Count}}}
	rows := 0
	e, err := Start(Config{Workers: 2, TaskSize: randTuple * 2, BufferSize: 1 << 16},
		[]Spec{{Query: q, Windows: func(w *Window) error { rows += w.Rows(); return nil }}})
	require.NoError(t, err)
	st := e.Stream(0)
	chunk := make([]byte, 20000*randTuple)
	for i := range 20000 {
		o := i * randTuple
		binary.LittleEndian.PutUint64(chunk[o:], uint64(i))
		binary.LittleEndian.PutUint32(chunk[o+8:], uint32(i%2))
		binary.LittleEndian.PutUint32(chunk[o+12:], uint32(i%16))
	}
	require.NoError(t, st.Write(chunk))
	_, err = e.Close()
	require.NoError(t, err)
	require.Greater(t, st.made, preallocRecords, "records made past those made up front")
	require.NotNil(t, st.parts, "a partitioned result stage")
	for i, r := range st.records[:st.made] {
		assert.Zero(t, r.result.States(), "record %d", i)
		for k := range r.parts.subs {
			assert.Zero(t, r.parts.subs[k].States(), "record %d, partition %d", i, k)
		}
	}
	states, directs := st.pool.Len()
	assert.Positive(t, states+directs)
	assert.Positive(t, rows)
}
