package window

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// genSessionTask fills res with a session kernel's records of a random
// task around event time *now, and moves *now on: times out of order
// within a window of disorder, late ones, filtered tuples (they move the
// watermark, but bring no record), empty tasks, keys of a few groups.
func genSessionTask(r *rand.Rand, l *Layout, res *TaskResult, now *int64, keys int) {
	rs := SessionRecordSize(l)
	res.Out, res.Tuples, res.Filtered, res.MaxTS = res.Out[:0], 0, 0, 0
	wm := int64(-1 << 63)
	for range r.IntN(40) {
		*now += int64(r.IntN(6))
		t := *now - int64(r.IntN(30))
		if r.IntN(20) == 0 {
			t -= 200 // late, most likely
		}
		res.Tuples++
		if r.IntN(8) == 0 {
			res.Filtered++
		} else {
			rec := make([]byte, rs)
			le := binary.LittleEndian
			le.PutUint64(rec, uint64(t))
			le.PutUint64(rec[8:], uint64(wm))
			k := uint64(r.IntN(keys))
			binary.BigEndian.PutUint64(rec[16:], k)
			binary.BigEndian.PutUint64(rec[24:], k%3)
			for i := range l.Kinds {
				le.PutUint64(rec[32+8*i:], uint64(r.Int64N(1000)-500))
			}
			res.Out = append(res.Out, rec...)
		}
		wm = max(wm, t)
	}
	res.MaxTS = wm
}

// reverseKeys orders keys by their bytes backwards: unlike the bytes'
// order, as a query's string keys' order is unlike their numbers'.
func reverseKeys() func(a, b []byte) int {
	return func(a, b []byte) int { return -bytes.Compare(a, b) }
}

// TestSessionPartsMatchSessions: random records (out of order, late,
// filtered, empty tasks) fed to one Sessions and to SessionParts of 1 to 8
// partitions, with and without HAVING and a key order: the same sessions
// in the same order, the same counters, watermark and Complete, also
// across snapshots taken of one and restored into the other, and at the
// flush.
func TestSessionPartsMatchSessions(t *testing.T) {
	r := rand.New(rand.NewPCG(26, 11))
	kindsets := [][]AggKind{{AggAdd}, {AggAdd, AggMax, AggMin}, {AggMin}}
	emitted := 0
	for c := range 40 {
		n := partCounts[c%len(partCounts)]
		l := &Layout{Groups: 16, Hashed: true, Kinds: kindsets[c%len(kindsets)]}
		gap, delay := 1+r.Int64N(40), r.Int64N(20)
		keep := testFilters[c%len(testFilters)]
		order := c%2 == 1
		mk := func(n int) (*Sessions, *SessionParts) {
			s, p := NewSessions(gap, delay, l), NewSessionParts(gap, delay, l, n)
			s.SetFilter(keep)
			p.SetFilters(func() func(*GroupState, int32) bool { return keep })
			if order {
				s.SetKeyOrder(reverseKeys())
				p.SetKeyOrder(reverseKeys)
			}
			return s, p
		}
		s, p := mk(n)
		var want, got []winOut
		now := int64(r.IntN(100))
		var res TaskResult
		for i := range 200 {
			genSessionTask(r, l, &res, &now, 1+c%12)
			require.NoError(t, p.MergeTake(&res, collect(&got)), "case %d", c)
			require.NoError(t, s.MergeTake(&res, collect(&want)), "case %d", c)
			require.Equal(t, s.Counters, *p.Counts(), "case %d task %d", c, i)
			require.Equal(t, s.Watermark(), p.Watermark())
			require.Equal(t, s.Complete(), p.Complete())
			if i%50 == 49 {
				// Each restores the other's snapshot.
				ss, sp := s.AppendSnapshot(nil), p.AppendSnapshot(nil)
				s, p = mk(partCounts[(c+i)%len(partCounts)])
				rest, err := s.RestoreSnapshot(sp)
				require.NoError(t, err)
				require.Empty(t, rest)
				rest, err = p.RestoreSnapshot(ss)
				require.NoError(t, err)
				require.Empty(t, rest)
				require.Equal(t, s.Counters, *p.Counts())
				require.Equal(t, s.Complete(), p.Complete())
				require.Equal(t, s.Watermark(), p.Watermark())
			}
		}
		require.NoError(t, p.Flush(collect(&got)))
		require.NoError(t, s.Flush(collect(&want)))
		require.Equal(t, s.Counters, *p.Counts(), "case %d", c)
		emitted += len(want)
		require.Equal(t, want, got, "case %d (%d partitions, gap %d, delay %d)", c, n, gap, delay)
	}
	assert.Greater(t, emitted, 1000)
}

// TestSessionPartsConcurrent: tasks split by several goroutines, each
// partition merged by one of its own, assembled in task order: the
// sessions one SessionParts emits on one goroutine.
func TestSessionPartsConcurrent(t *testing.T) {
	r := rand.New(rand.NewPCG(26, 12))
	l := &Layout{Groups: 16, Hashed: true, Kinds: []AggKind{AggAdd, AggMax}}
	results := make([]TaskResult, 400)
	now := int64(0)
	for i := range results {
		genSessionTask(r, l, &results[i], &now, 10)
	}
	seq := NewSessionParts(30, 5, l, 4)
	assert.Equal(t, runPartsConcurrently(t, seq, NewSessionParts(30, 5, l, 4), results), *seq.Counts())
}

// TestSessionPartsAllocateNothing: in steady state a task is split,
// merged into every partition, assembled and emitted without allocating.
func TestSessionPartsAllocateNothing(t *testing.T) {
	l := &Layout{Groups: 64, Hashed: true, Kinds: []AggKind{AggAdd}}
	p := NewSessionParts(10, 0, l, 4)
	var res TaskResult
	sessions := 0
	emit := func(*Result) error { sessions++; return nil }
	now := int64(0)
	rs := SessionRecordSize(l)
	res.Out = make([]byte, 64*rs)
	task := func() {
		// 64 keys, one record each, 20 apart: each key's session closes
		// and a new one opens every task.
		le := binary.LittleEndian
		for k := range 64 {
			rec := res.Out[k*rs:]
			le.PutUint64(rec, uint64(now))
			le.PutUint64(rec[8:], uint64(now))
			binary.BigEndian.PutUint64(rec[16:], uint64(k))
			le.PutUint64(rec[32:], 1)
		}
		res.Tuples, res.MaxTS = 64, now
		require.NoError(t, p.MergeTake(&res, emit))
		now += 20
	}
	for range 100 {
		task()
	}
	assert.Zero(t, testing.AllocsPerRun(200, task))
	assert.Positive(t, sessions)
}
