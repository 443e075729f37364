package engine

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
)

// writeChunks writes data to s in random chunks.
func writeChunks(s *Stream, data []byte, r *rand.Rand, taskSize int) error {
	for len(data) > 0 {
		n := min(len(data), 1+r.IntN(2*taskSize))
		if err := s.Write(data[:n]); err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

// TestSnapshotRestoreRandomQueries: random queries (tumbling and sliding
// range and session windows, groups, HAVING, stateless ones) snapshotted after k
// tuples; the engine is then abandoned (a crash: Abort, nothing more
// emitted) and a fresh one restored from the snapshot is fed the rest.
// What the two emitted together is what the reference, and the
// uninterrupted engine, give for the whole input, counters included.
func TestSnapshotRestoreRandomQueries(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	s := randSchema(t)
	n := seeds(16, 20, 80)
	crash := errors.New("crash")
	for seed := range n {
		r := rand.New(rand.NewPCG(uint64(seed), 18))
		q := randQuery(r, s)
		q.Window.Type = query.Range
		if seed%4 == 2 && len(q.Aggregates) > 0 {
			delay := q.Window.Delay
			q.Window = query.Sessions(1 + r.Int64N(50))
			q.Window.Delay = delay
		}
		require.NoError(t, q.Validate(), "%+v", q)
		tuples := 100 + r.IntN(3000)
		data := randData(r, tuples)
		k := r.IntN(tuples + 1)
		cfg := Config{Workers: 1 + r.IntN(3), TaskSize: randTuple * (1 + r.IntN(200)), BufferSize: 1 << 14}
		for cfg.BufferSize < 2*cfg.TaskSize {
			cfg.BufferSize *= 2
		}
		name := func() string {
			return "seed " + itoa(seed) + " k " + itoa(k) + " of " + itoa(tuples)
		}
		want, err := reference.Evaluate(q, data)
		require.NoError(t, err)
		whole, err := collect(t, cfg, q, data, r)
		require.NoError(t, err)

		got := &reference.Result{}
		e1, err := Start(cfg, []Spec{specInto(q, got)})
		require.NoError(t, err)
		require.NoError(t, writeChunks(e1.Stream(0), data[:k*randTuple], r, cfg.TaskSize), name())
		require.NoError(t, e1.Stream(0).Flush())
		snap, err := e1.Snapshot([]byte("x"))
		require.NoError(t, err, name())
		snap = snap[1:]
		if seed%2 == 1 && q.Window.Type != query.Session {
			snap = asVersion1(t, snap) // still restored
		}
		before := e1.Stream(0).Stats()
		e1.Abort(crash)
		_, err = e1.CloseAll()
		require.ErrorIs(t, err, crash)

		e2, err := Start(cfg, []Spec{specInto(q, got)})
		require.NoError(t, err)
		restored, err := e2.Restore(snap)
		require.NoError(t, err, name())
		require.Equal(t, []Restored{{Query: q.Name, Tasks: before.Tasks, Bytes: uint64(k * randTuple)}}, restored, name())
		after := e2.Stream(0).Stats()
		assert.Equal(t, before.Tuples, after.Tuples, name())
		assert.Equal(t, before.Windows, after.Windows, name())
		assert.Zero(t, after.Bytes, name())
		require.NoError(t, writeChunks(e2.Stream(0), data[k*randTuple:], r, cfg.TaskSize), name())
		st, err := e2.CloseAll()
		require.NoError(t, err, name())
		got.Counts = reference.Counts{Tuples: st[0].Tuples, Filtered: st[0].Filtered, Unmatched: st[0].Unmatched, Late: st[0].Late, Counted: st[0].Counted}
		if d := reference.Diff(q, want, got, 1e-9); d != "" {
			t.Errorf("%s, workers %d, task %d, query where=%v window=%+v group=%v aggs=%v having=%v project=%v: against the reference:\n%s",
				name(), cfg.Workers, cfg.TaskSize, q.Where, q.Window, q.GroupBy, q.Aggregates, q.Having, q.Project, d)
		}
		if d := reference.Diff(q, whole, got, 1e-9); d != "" {
			t.Errorf("%s: against the uninterrupted engine:\n%s", name(), d)
		}
	}
	assertNoLeak(t, base)
}

// asVersion1 re-encodes a snapshot of one query as version 1 wrote it:
// its counters before its kind, and no stream position.
func asVersion1(t *testing.T, snap []byte) []byte {
	le := binary.LittleEndian
	require.Equal(t, byte(engineSnapshotVersion), snap[0])
	require.Equal(t, uint32(1), le.Uint32(snap[1:]))
	b := snap[5:]
	name := b[:2+int(le.Uint16(b))]
	b = b[len(name):]
	kind, counters, rest := b[0], b[1:1+48], b[1+64:]
	if kind == snapAggregation {
		// Version 3's strings of the keys (none: a count of 0) are
		// not in version 1.
		require.Equal(t, []byte{0, 0, 0, 0}, rest[len(rest)-4:])
		rest = rest[:len(rest)-4]
	}
	out := append([]byte{1}, snap[1:5]...)
	out = append(append(out, name...), counters...)
	return append(append(out, kind), rest...)
}

// asVersion5 re-encodes a snapshot of one query that is not a join as
// version 5 wrote it: its counters without the unmatched tuples.
func asVersion5(snap []byte) []byte {
	at := 5 + 2 + int(binary.LittleEndian.Uint16(snap[5:])) + 1 + 56
	return append(append([]byte{5}, snap[1:at]...), snap[at+8:]...)
}

func itoa(n int) string {
	b := []byte{}
	if n == 0 {
		return "0"
	}
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

func snapshotQuery(t *testing.T, w query.Window) *query.Query {
	q := &query.Query{Name: "q", Schema: randSchema(t), Window: w, GroupBy: []query.Expr{query.C("a")},
		Aggregates: []query.Aggregate{{Func: query.Count, As: "n"}}}
	require.NoError(t, q.Validate())
	return q
}

func TestSnapshotRefusals(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	q := snapshotQuery(t, query.Sliding(10, 5))
	data := randData(rand.New(rand.NewPCG(1, 1)), 100)
	// A ring of 4 KiB: the default 4 MiB one, of tasks of 4 tuples,
	// preallocates a group state per task slot, for each of the 8 engines.
	e, err := Start(Config{Workers: 1, TaskSize: randTuple * 4, BufferSize: 1 << 12}, []Spec{{Query: q, Windows: func(*Window) error { return nil }}})
	require.NoError(t, err)
	require.NoError(t, e.Stream(0).Write(data[:randTuple*6]))
	_, err = e.Snapshot(nil)
	assert.ErrorContains(t, err, "Flush first")
	require.NoError(t, e.Stream(0).Flush())
	snap, err := e.Snapshot(nil)
	require.NoError(t, err)
	_, err = e.Restore(snap)
	assert.ErrorContains(t, err, "took input")
	_, err = e.CloseAll()
	require.NoError(t, err)

	// Another query, a truncated snapshot, trailing bytes: refused, and the
	// engine is left as Start made it.
	other := snapshotQuery(t, query.Sliding(10, 10))
	for _, c := range []struct {
		q    *query.Query
		snap []byte
		msg  string
	}{
		{other, snap, "window"},
		{q, snap[:len(snap)-1], "truncated"},
		{q, append(append([]byte{}, snap...), 0), "after the snapshot"},
		{&query.Query{Name: "r", Schema: q.Schema, Window: q.Window, GroupBy: q.GroupBy, Aggregates: q.Aggregates}, snap, "\"q\""},
		{&query.Query{Name: "q", Schema: q.Schema, Project: []query.Projection{{Expr: query.C("a")}}}, snap, "kind"},
		{q, append([]byte{9}, snap[1:]...), "version 9"},
		{snapshotQuery(t, query.Window{Type: query.Rows, Size: 10, Slide: 5}), asVersion1(t, snap), "version 1"},
	} {
		e, err := Start(Config{Workers: 1, TaskSize: randTuple * 4, BufferSize: 1 << 12}, []Spec{{Query: c.q, Windows: func(*Window) error { return nil }}})
		require.NoError(t, err)
		_, err = e.Restore(c.snap)
		assert.ErrorIs(t, err, ErrConfig)
		assert.ErrorContains(t, err, c.msg)
		assert.Zero(t, e.Stream(0).Stats().Tuples)
		_, err = e.CloseAll()
		require.NoError(t, err)
	}
	assertNoLeak(t, base)
}

// TestSnapshotVersion3WithStringKeys: a version 3 snapshot (string group
// keys in 8 bytes) is refused by an engine with a string group key, with
// what to do, and restored by one without.
func TestSnapshotVersion3WithStringKeys(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	s, err := query.NewSchema(24, query.Attribute{Name: "ts", Type: query.Int64}, query.Attribute{Name: "s", Type: query.String, Offset: 8})
	require.NoError(t, err)
	for _, c := range []struct {
		group []query.Expr
		err   string
	}{{[]query.Expr{query.C("s")}, "snapshot version 3 holds string group keys in 8 bytes"}, {nil, ""}} {
		q := &query.Query{Name: "c", Schema: s, Window: query.Tumbling(1000), GroupBy: c.group,
			Aggregates: []query.Aggregate{{Func: query.Count, As: "n"}}}
		e, err := Start(Config{Workers: 1, TaskSize: 2400}, []Spec{{Query: q, Windows: func(*Window) error { return nil }}})
		require.NoError(t, err)
		snap, err := e.Snapshot(nil)
		require.NoError(t, err)
		_, err = e.CloseAll()
		require.NoError(t, err)
		snap = asVersion5(snap)
		snap[0] = 3
		e2, err := Start(Config{Workers: 1, TaskSize: 2400}, []Spec{{Query: q, Windows: func(*Window) error { return nil }}})
		require.NoError(t, err)
		_, err = e2.Restore(snap)
		if c.err != "" {
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.err)
		} else {
			assert.NoError(t, err)
		}
		_, err = e2.CloseAll()
		require.NoError(t, err)
	}
	assertNoLeak(t, base)
}

// TestSnapshotKeepsUnmatched: a lookup join's unmatched tuples are in the
// snapshot, so that a restored run's counters add up and equal the
// uninterrupted run's; a version 5 snapshot, which had none, restores
// them as 0.
func TestSnapshotKeepsUnmatched(t *testing.T) {
	parallel(t)
	s := randSchema(t)
	vs, err := query.NewSchema(8, query.Attribute{Name: "v", Type: query.Int64, Offset: 0})
	require.NoError(t, err)
	tab := &query.StaticTable{KeyWidth: 8, ValueWidth: 8}
	for i := range 4 { // k's first byte 0..3 match, 4..7 do not
		k := make([]byte, 8)
		k[0] = byte(i)
		tab.Keys = append(tab.Keys, k)
		tab.Values = append(tab.Values, binary.LittleEndian.AppendUint64(nil, uint64(100+i)))
	}
	q := &query.Query{Name: "lookup", Schema: s, Join: &query.StaticJoin{Column: "k", Table: tab, Values: vs},
		Project: []query.Projection{{Expr: query.C("ts")}, {Expr: query.C("v")}}}
	require.NoError(t, q.Validate())
	data := make([]byte, 1000*randTuple)
	for i := range 1000 {
		binary.LittleEndian.PutUint64(data[i*randTuple:], uint64(i))
		data[i*randTuple+40] = byte(i % 8)
	}
	cfg := Config{Workers: 1, TaskSize: randTuple * 50, BufferSize: 1 << 16}
	start := func() *Engine {
		e, err := Start(cfg, []Spec{{Query: q, Tuples: func([]byte) error { return nil }}})
		require.NoError(t, err)
		return e
	}
	e := start()
	require.NoError(t, e.Stream(0).Write(data))
	whole, err := e.CloseAll()
	require.NoError(t, err)
	require.Equal(t, uint64(500), whole[0].Unmatched)

	e = start()
	require.NoError(t, e.Stream(0).Write(data[:500*randTuple]))
	require.NoError(t, e.Stream(0).Flush())
	snap, err := e.Snapshot(nil)
	require.NoError(t, err)
	_, err = e.CloseAll()
	require.NoError(t, err)

	resume := func(snap []byte) Stats {
		e := start()
		_, err := e.Restore(snap)
		require.NoError(t, err)
		require.NoError(t, e.Stream(0).Write(data[500*randTuple:]))
		st, err := e.CloseAll()
		require.NoError(t, err)
		return st[0]
	}
	got := resume(snap)
	assert.Equal(t, whole[0].Unmatched, got.Unmatched)
	assert.Equal(t, got.Tuples, got.Filtered+got.Unmatched+got.Late+got.Counted, "the counters add up")

	got = resume(asVersion5(snap))
	after := uint64(0)
	for i := 500; i < 1000; i++ {
		if i%8 >= 4 {
			after++
		}
	}
	assert.Equal(t, after, got.Unmatched, "counted from the restore on")
}

// TestRestoredStats: a restored engine's counters go on from the
// snapshot's, RestoredStats holds what they carried over, and the
// difference is what the engine counted itself.
func TestRestoredStats(t *testing.T) {
	parallel(t)
	q := snapshotQuery(t, query.Tumbling(10))
	data := randData(rand.New(rand.NewPCG(3, 3)), 400)
	cfg := Config{Workers: 1, TaskSize: randTuple * 8, BufferSize: 1 << 14}
	spec := func() []Spec { return []Spec{{Query: q, Windows: func(*Window) error { return nil }}} }
	e, err := Start(cfg, spec())
	require.NoError(t, err)
	require.NoError(t, e.Stream(0).Write(data[:200*randTuple]))
	require.NoError(t, e.Stream(0).Flush())
	snap, err := e.Snapshot(nil)
	require.NoError(t, err)
	before := e.Stream(0).Stats()
	_, err = e.CloseAll()
	require.NoError(t, err)
	assert.Equal(t, Stats{}, e.Stream(0).RestoredStats(), "not restored")

	e, err = Start(cfg, spec())
	require.NoError(t, err)
	_, err = e.Restore(snap)
	require.NoError(t, err)
	r := e.Stream(0).RestoredStats()
	assert.Equal(t, before.Tuples, r.Tuples)
	assert.Equal(t, before.Windows, r.Windows)
	own := e.Stream(0).Stats().Since(r)
	assert.Zero(t, own.Tuples+own.Filtered+own.Counted+own.Windows+own.Rows, "nothing counted yet: %+v", own)
	require.NoError(t, e.Stream(0).Write(data[200*randTuple:]))
	st, err := e.CloseAll()
	require.NoError(t, err)
	assert.Equal(t, uint64(200), st[0].Since(r).Tuples, "the engine's own tuples")
}
