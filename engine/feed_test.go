package engine

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/doubling"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
)

// feedFill writes tuples k, k+1, ... into b: event time k, a = k mod 7 -
// 3, c = k.
func feedFill(b []byte, k uint64) {
	for o := 0; o+randTuple <= len(b); o += randTuple {
		clear(b[o : o+randTuple])
		binary.LittleEndian.PutUint64(b[o:], k)
		binary.LittleEndian.PutUint32(b[o+8:], uint32(int32(k%7)-3))
		binary.LittleEndian.PutUint64(b[o+16:], k)
		k++
	}
}

// TestFeedMatchesInput: a Feed's tuples reach the query whole and in
// order, whoever copies them (the producer, the workers, or shared), with
// the last task trimmed to Limit; Task sees every task once, in order,
// marked left exactly when the workers copy it.
func TestFeedMatchesInput(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	s := randSchema(t)
	const taskTuples = 50
	for _, ingest := range []Ingest{IngestProducer, IngestWorkers, IngestShared} {
		for _, limit := range []uint64{1, taskTuples, 7*taskTuples + 13} {
			t.Run(fmt.Sprintf("%v/%d", ingest, limit), func(t *testing.T) {
				q := &query.Query{Name: "sel", Schema: s, Where: query.ColGe("a", 0)}
				var got []byte
				e, err := Start(Config{Workers: 2, TaskSize: randTuple * taskTuples, BufferSize: 1 << 14},
					[]Spec{{Query: q, Tuples: func(b []byte) error { got = doubling.Append(got, b...); return nil }}})
				require.NoError(t, err)
				st := e.Stream(0)
				if ingest != IngestProducer {
					st.SetFill(func(dst []byte, pos uint64) { feedFill(dst, pos/randTuple) })
				}
				var next, tasks, left uint64
				f := Feed{TupleSize: randTuple, Ingest: ingest, Workers: 2, Limit: limit, Fill: feedFill,
					Task: func(b []byte, k uint64, l bool) {
						assert.Equal(t, next, k, "tasks in order")
						assert.Zero(t, len(b)%randTuple)
						next += uint64(len(b) / randTuple)
						tasks++
						if l {
							left++
						}
					}}
				k, err := f.Run(st, 0)
				require.NoError(t, err)
				_, err = e.CloseAll()
				require.NoError(t, err)
				assert.Equal(t, limit, k)
				assert.Equal(t, limit, next)
				assert.Equal(t, (limit+taskTuples-1)/taskTuples, tasks)
				switch ingest {
				case IngestProducer:
					assert.Zero(t, left)
				case IngestWorkers:
					assert.Equal(t, tasks, left)
				}
				input := make([]byte, limit*randTuple)
				feedFill(input, 0)
				want, err := reference.Evaluate(q, input)
				require.NoError(t, err)
				assert.Equal(t, len(want.Tuples), len(got))
				assert.True(t, string(want.Tuples) == string(got), "output differs from the reference")
			})
		}
	}
	assertNoLeak(t, base)
}

// TestFeedStops: Stop is asked before every task and ends the feed; an
// error of Buffer ends it with the tuples fed so far.
func TestFeedStops(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	s := randSchema(t)
	const taskTuples = 20
	e, err := Start(Config{Workers: 1, TaskSize: randTuple * taskTuples, BufferSize: 1 << 14},
		[]Spec{{Query: &query.Query{Name: "sel", Schema: s}, Tuples: func([]byte) error { return nil }}})
	require.NoError(t, err)
	st := e.Stream(0)
	asked := 0
	f := Feed{TupleSize: randTuple, Fill: feedFill, Stop: func() bool { asked++; return asked > 3 }}
	k, err := f.Run(st, 100)
	require.NoError(t, err)
	assert.Equal(t, uint64(100+3*taskTuples), k)
	assert.Equal(t, 4, asked)
	_, err = e.CloseAll()
	require.NoError(t, err)

	f.Stop = nil
	k, err = f.Run(st, 7)
	assert.ErrorContains(t, err, "Buffer after Close")
	assert.Equal(t, uint64(7), k)
	assertNoLeak(t, base)
}

// TestFeedDoesNotAllocate: in steady state a Feed costs no allocation per
// task, writing the tasks or leaving them to the workers (the engine's own
// task path allocates nothing either: TestTaskPathDoesNotAllocate).
func TestFeedDoesNotAllocate(t *testing.T) {
	s := randSchema(t)
	const taskTuples, perRun = 64, 8
	for _, ingest := range []Ingest{IngestProducer, IngestWorkers} {
		t.Run(fmt.Sprint(ingest), func(t *testing.T) {
			e, err := Start(Config{Workers: 2, TaskSize: randTuple * taskTuples, BufferSize: 1 << 16},
				[]Spec{{Query: &query.Query{Name: "sel", Schema: s, Where: query.ColGe("a", 0)}, Tuples: func([]byte) error { return nil }}})
			require.NoError(t, err)
			st := e.Stream(0)
			st.SetFill(func(dst []byte, pos uint64) { feedFill(dst, pos/randTuple) })
			var produced uint64
			f := Feed{TupleSize: randTuple, Ingest: ingest, Workers: 2, Fill: feedFill,
				Task: func(b []byte, k uint64, _ bool) { produced = k + uint64(len(b)/randTuple) }}
			var k uint64
			feed := func() {
				f.Limit = k + perRun*taskTuples
				if k, err = f.Run(st, k); err != nil {
					panic(err)
				}
			}
			allocs := steadyAllocs(st, feed)
			_, err = e.CloseAll()
			require.NoError(t, err)
			assert.Equal(t, k, produced)
			assert.Zero(t, allocs, "allocations per %d tasks", perRun)
		})
	}
}
