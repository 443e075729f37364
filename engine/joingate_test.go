package engine

import (
	"encoding/binary"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
)

// gateData is n tuples of randSchema, two to a time unit, b cycling
// through 7 values.
func gateData(n int) []byte {
	b := make([]byte, n*randTuple)
	for i := range n {
		t := b[i*randTuple:]
		binary.LittleEndian.PutUint64(t[0:], uint64(i/2))
		binary.LittleEndian.PutUint32(t[12:], uint32(i%7))
	}
	return b
}

// gateJoin starts a join of two producers' streams with small rings: a
// side is ahead once it holds more than 8 KiB.
func gateJoin(t *testing.T, got *[]byte) (*Engine, *joinStage, *query.WindowJoin) {
	s := randSchema(t)
	j := &query.WindowJoin{Name: "j", Left: s, Right: s, Window: query.Tumbling(20),
		Where: query.Cmp(query.C("l.b"), query.Eq, query.C("r.b"))}
	e, err := Start(Config{Workers: 2, TaskSize: 32 * randTuple, BufferSize: 1 << 13}, []Spec{
		{Join: j, Tuples: func(b []byte) error { *got = append(*got, b...); return nil }},
	})
	require.NoError(t, err)
	return e, e.entries[0].join, j
}

// closeAndCompare ends the run and compares the pairs got with the
// reference's over left and right.
func closeAndCompare(t *testing.T, e *Engine, j *query.WindowJoin, left, right []byte, got *[]byte) {
	t.Helper()
	_, err := e.CloseAll()
	require.NoError(t, err)
	want, err := reference.EvaluateJoin(j, left, right)
	require.NoError(t, err)
	require.NotEmpty(t, want.Tuples)
	assert.True(t, string(want.Tuples) == string(*got), "pairs differ: %d bytes, want %d", len(*got), len(want.Tuples))
}

// TestJoinSideAheadWaitsForTheOther: the left producer writes as fast as
// it can, the right one a chunk a millisecond; the left side's producer
// waits for the right side, so the join holds a bounded part of the left
// side's input (without the wait, nearly all of it), and the pairs are the
// reference's.
func TestJoinSideAheadWaitsForTheOther(t *testing.T) {
	base := runtime.NumGoroutine()
	var got []byte
	e, js, j := gateJoin(t, &got)
	// The right side's moves may come further apart than gateIdle on a
	// loaded machine (-race): the left producer would give up on it.
	js.lead[0].idle = 10 * time.Second
	left, right := gateData(10000), gateData(10000)
	const chunk = 64 * randTuple
	maxHeld := 0
	errs := make(chan error, 1)
	go func() {
		for o := 0; o < len(right); o += chunk {
			if err := e.Stream(0).Right().Write(right[o:min(len(right), o+chunk)]); err != nil {
				errs <- err
				return
			}
			time.Sleep(time.Millisecond)
		}
		errs <- nil
	}()
	for o := 0; o < len(left); o += chunk {
		require.NoError(t, e.Stream(0).Write(left[o:min(len(left), o+chunk)]))
		js.mu.Lock()
		held, _ := js.op.Lead(0)
		js.mu.Unlock()
		maxHeld = max(maxHeld, held)
	}
	require.NoError(t, <-errs)
	closeAndCompare(t, e, j, left, right, &got)
	assert.Positive(t, js.producerWaits.Load(), "the left producer never waited")
	assert.Less(t, maxHeld, len(left)/4, "bytes the join held for the left side (its input: %d)", len(left))
	assertNoLeak(t, base)
}

// TestJoinProducerDoesNotWaitForAQuietSide: the right side brings nothing
// until the left producer is done: the left producer waits once, for
// gateIdle, and then not again while the right side has not moved.
func TestJoinProducerDoesNotWaitForAQuietSide(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	var got []byte
	e, js, j := gateJoin(t, &got)
	left, right := gateData(4000), gateData(4000)
	const chunk = 64 * randTuple
	for o := 0; o < len(left); o += chunk {
		require.NoError(t, e.Stream(0).Write(left[o:min(len(left), o+chunk)]))
	}
	assert.Equal(t, uint64(1), js.producerWaits.Load(), "waits of the left producer for a side that never moved")
	require.NoError(t, e.Stream(0).Right().Write(right))
	closeAndCompare(t, e, j, left, right, &got)
	assertNoLeak(t, base)
}
