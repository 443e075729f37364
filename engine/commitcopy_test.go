package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/strview"
)

// stringSchema is ts, an Int64, then s (and, with two, u): strings.
func stringSchema(t *testing.T, two bool) *query.Schema {
	attrs := []query.Attribute{{Name: "ts", Type: query.Int64}, {Name: "s", Type: query.String, Offset: 8}}
	size := 24
	if two {
		attrs, size = append(attrs, query.Attribute{Name: "u", Type: query.String, Offset: 24}), 40
	}
	s, err := query.NewSchema(size, attrs...)
	require.NoError(t, err)
	return s
}

// countByS is a COUNT of s's tuples, as n, in tumbling windows of 1000,
// grouped by column s.
func countByS(name string, s *query.Schema) *query.Query {
	return &query.Query{Name: name, Schema: s, Window: query.Tumbling(1000), GroupBy: []query.Expr{query.C("s")},
		Aggregates: []query.Aggregate{{Func: query.Count, As: "n"}}}
}

// countStrings starts an engine of cfg running q (a COUNT grouped by one
// string key) whose windows add their counts into the map it returns, by
// string.
func countStrings(t *testing.T, cfg Config, q *query.Query) (*Engine, map[string]int64) {
	got := map[string]int64{}
	e, err := Start(cfg, []Spec{{Query: q, Windows: func(w *Window) error {
		for i := range w.Rows() {
			// A string key's canonical form: a non-NULL mark, the bytes, zeros.
			got[string(bytes.TrimRight(w.CanonicalKey(i)[1:], "\x00"))] += w.Agg(i, 0)
		}
		return nil
	}}})
	require.NoError(t, err)
	return e, got
}

// commitCopyAll writes n tuples of ts bytes into st by Buffer and
// CommitCopy, fill writing tuple i (its long strings into arena); after
// each commit the arena is reset and its memory overwritten, as a
// producer that reuses it does.
func commitCopyAll(st *Stream, n, ts int, arena *strview.Arena, fill func(t []byte, i int)) error {
	for i := 0; i < n; {
		buf, err := st.Buffer()
		if err != nil {
			return err
		}
		k := 0
		for ; k+ts <= len(buf) && i < n; k, i = k+ts, i+1 {
			fill(buf[k:k+ts], i)
		}
		if err := st.CommitCopy(buf[:k]); err != nil {
			return err
		}
		arena.Reset()
		garble := arena.Alloc(4096)
		for j := range garble {
			garble[j] = '#'
		}
		arena.Reset()
	}
	return nil
}

// TestCommitCopy: tuples whose long strings sit in an arena that the
// producer resets and overwrites after each CommitCopy are counted by
// their strings as written, at any task size.
func TestCommitCopy(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	q := countByS("c", stringSchema(t, false))
	name := func(i int) string { return fmt.Sprintf("a string longer than inline, number %d", i%7) }
	for _, task := range []int{24, 240, 24 << 10} {
		e, got := countStrings(t, Config{Workers: 2, TaskSize: task, BufferSize: 1 << 16}, q)
		arena := strview.NewArena(0)
		const n = 5000
		err := <-e.Produce(func() error {
			return commitCopyAll(e.Stream(0), n, 24, arena, func(t []byte, i int) {
				binary.LittleEndian.PutUint64(t, uint64(i))
				strview.Put(t[8:24], []byte(name(i)), arena)
			})
		})
		require.NoError(t, err)
		_, err = e.CloseAll()
		require.NoError(t, err)
		arena.Free()
		want := map[string]int64{}
		for i := range n {
			want[name(i)]++
		}
		assert.Equal(t, want, got, "task %d", task)
	}
	assertNoLeak(t, base)
}

// TestCopyStringsSkipsWhatTheQueryDoesNotRead: a long string of a column
// that the query never reads is not copied into the stream's heap; its
// view becomes the empty string (nothing left pointing at the producer's
// memory), while the strings the query reads are copied, and the query's
// results are those of the strings as written.
func TestCopyStringsSkipsWhatTheQueryDoesNotRead(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	q := countByS("c", stringSchema(t, true))
	e, got := countStrings(t, Config{Workers: 2, TaskSize: 400, BufferSize: 1 << 16}, q)
	st := e.Stream(0)
	require.Len(t, st.heapAttrs, 1)
	require.Len(t, st.blankAttrs, 1)
	assert.Equal(t, "s", st.heapAttrs[0].Name)
	assert.Equal(t, "u", st.blankAttrs[0].Name)

	key := func(i int) string { return fmt.Sprintf("a key longer than inline, number %d", i%3) }
	const unread = "a string of a column that nobody reads"
	arena := strview.NewArena(0)
	tuples := make([]byte, 10*40)
	for i := range 10 {
		strview.Put(tuples[i*40+8:i*40+24], []byte(key(i)), arena)
		strview.Put(tuples[i*40+24:i*40+40], []byte(unread), arena)
	}
	copied := 0
	done, err := st.copyStrings(tuples, func(n int) ([]byte, error) { copied += n; return arena.Alloc(n), nil })
	require.NoError(t, err)
	assert.Zero(t, done, "nothing committed: the strings fit")
	want := 0
	for i := range 10 {
		want += len(key(i))
		assert.Equal(t, key(i), string(strview.Bytes(tuples[i*40+8:i*40+24])))
		assert.Empty(t, strview.Bytes(tuples[i*40+24:i*40+40]))
	}
	assert.Equal(t, want, copied)

	const n = 3000
	err = <-e.Produce(func() error {
		return commitCopyAll(st, n, 40, arena, func(t []byte, i int) {
			binary.LittleEndian.PutUint64(t, uint64(i))
			strview.Put(t[8:24], []byte(key(i)), arena)
			strview.Put(t[24:40], []byte(unread), arena)
		})
	})
	require.NoError(t, err)
	_, err = e.CloseAll()
	require.NoError(t, err)
	arena.Free()
	assert.Equal(t, map[string]int64{key(0): n / 3, key(1): n / 3, key(2): n / 3}, got)
	assertNoLeak(t, base)
}

// TestWriteSharedKeepsTheViews: WriteShared leaves a long string's view
// pointing where the producer put it (memory that outlives the stream),
// where Write points it at a copy in the stream's heap; the query counts
// the same strings either way.
func TestWriteSharedKeepsTheViews(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	q := countByS("c", stringSchema(t, false))
	const long = "a string that lives as long as the process"
	// Off the Go heap, as strings that views point at are.
	held := strview.NewArena(0)
	defer held.Free()
	longBytes := held.Copy([]byte(long))
	for _, shared := range []bool{false, true} {
		e, got := countStrings(t, Config{Workers: 2, TaskSize: 240, BufferSize: 1 << 16}, q)
		st := e.Stream(0)
		var pointed []uint64
		err := <-e.Produce(func() error {
			tuples := make([]byte, 100*24)
			for i := range 100 {
				binary.LittleEndian.PutUint64(tuples[i*24:], uint64(i))
				strview.PutRef(tuples[i*24+8:i*24+24], longBytes)
			}
			write := st.Write
			if shared {
				write = st.WriteShared
			}
			b, err := st.Buffer() // where write puts the first tuple
			if err != nil {
				return err
			}
			if err := write(tuples); err != nil {
				return err
			}
			pointed = append(pointed, binary.LittleEndian.Uint64(b[8+8:8+16]))
			return nil
		})
		require.NoError(t, err)
		_, err = e.CloseAll()
		require.NoError(t, err)
		assert.Equal(t, map[string]int64{long: 100}, got, "shared %v", shared)
		addr := uint64(uintptr(unsafe.Pointer(&longBytes[0])))
		if shared {
			assert.Equal(t, []uint64{addr}, pointed)
		} else {
			assert.NotEqual(t, []uint64{addr}, pointed)
		}
	}
	assertNoLeak(t, base)
}

// TestJoinSidesCopyOnlyTheStringsReadAfter: a window join's input streams
// copy the long strings that its WHERE or the queries after it read, and
// empty the others; a join whose pairs go to a sink of its own copies
// them all. The strings read come out as written.
func TestJoinSidesCopyOnlyTheStringsReadAfter(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	j := stringJoin(t, 100)
	out := j.OutputSchemaUnchecked()
	down := &query.Query{Name: "down", Schema: out, Project: []query.Projection{{Expr: query.C("l.a"), As: "a"}, {Expr: query.C("r.k"), As: "k"}}}
	const n = 200
	for _, ownSink := range []bool{false, true} {
		var rows []string
		sp := []Spec{{Join: j}, {Query: down, Upstream: Output(0), Tuples: func(b []byte) error {
			for o := 0; o < len(b); o += 32 {
				rows = append(rows, string(strview.Bytes(b[o+8:o+24])))
			}
			return nil
		}}}
		if ownSink {
			sp[0].Tuples = func([]byte) error { return nil }
		}
		e, err := Start(Config{Workers: 2, TaskSize: 480, BufferSize: 1 << 16}, sp)
		require.NoError(t, err)
		l, r := e.Stream(0), e.Stream(0).Right()
		if ownSink {
			assert.Equal(t, []string{"a", "b"}, names(l.heapAttrs))
			assert.Empty(t, l.blankAttrs)
		} else {
			assert.Equal(t, []string{"a"}, names(l.heapAttrs))
			assert.Equal(t, []string{"b"}, names(l.blankAttrs))
			assert.Empty(t, r.heapAttrs)
			assert.Equal(t, []string{"a", "b"}, names(r.blankAttrs))
		}
		require.NoError(t, writeStringJoin(e, n, func(_ string, i int64) int64 { return i }))
		_, err = e.CloseAll()
		require.NoError(t, err)
		var want []string
		for i := range int64(n) {
			want = append(want, longString("left a", i))
		}
		assert.Equal(t, want, rows, "own sink %v", ownSink)
	}
	assertNoLeak(t, base)
}

// stringJoin joins two streams of tuples of an event time, a key k and two
// strings a and b (48 bytes) on their keys, in tumbling windows of size.
func stringJoin(t *testing.T, size int64) *query.WindowJoin {
	s, err := query.NewSchema(48, query.Attribute{Name: "ts", Type: query.Int64}, query.Attribute{Name: "k", Type: query.Int64, Offset: 8},
		query.Attribute{Name: "a", Type: query.String, Offset: 16}, query.Attribute{Name: "b", Type: query.String, Offset: 32})
	require.NoError(t, err)
	return &query.WindowJoin{Name: "j", Left: s, Right: s, Window: query.Tumbling(size),
		Where: query.Cmp(query.C("l.k"), query.Eq, query.C("r.k"))}
}

// longString is column col's string for key k (col: "left a", say),
// longer than inline.
func longString(col string, k int64) string {
	return fmt.Sprintf("the %s string number %d, longer than inline", col, k)
}

// writeStringJoin writes n tuples of stringJoin's into each input of e's
// first query, concurrently: tuple i at event time i, its key key(side,
// i) and its strings longString(side+" a", key) and (side+" b", key).
// Each string's memory is scribbled over once the tuple is written, so
// that a view kept past its copy reads something else.
func writeStringJoin(e *Engine, n int64, key func(side string, i int64) int64) error {
	write := func(st *Stream, side string) error {
		arena := strview.NewArena(0)
		defer arena.Free()
		tuple := make([]byte, 48)
		for i := range n {
			k := key(side, i)
			binary.LittleEndian.PutUint64(tuple, uint64(i))
			binary.LittleEndian.PutUint64(tuple[8:], uint64(k))
			strview.Put(tuple[16:32], []byte(longString(side+" a", k)), arena)
			strview.Put(tuple[32:48], []byte(longString(side+" b", k)), arena)
			if err := st.Write(tuple); err != nil {
				return err
			}
			arena.Reset()
			clear(arena.Alloc(256))
			arena.Reset()
		}
		return nil
	}
	errs := make(chan error, 2)
	go func() { errs <- write(e.Stream(0), "left") }()
	go func() { errs <- write(e.Stream(0).Right(), "right") }()
	return errors.Join(<-errs, <-errs)
}

// TestStatelessUpstreamEmptiesWhatDownstreamDoesNotRead: a stateless
// query whose output feeds only queries downstream empties, on its
// workers, the long strings of the columns none of them reads (outBlank),
// so that its ordered push has nothing to empty; a column one of them
// reads, or an output that a sink also takes, is left whole. The counts
// are those of the strings as written.
func TestStatelessUpstreamEmptiesWhatDownstreamDoesNotRead(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	s := stringSchema(t, true)
	up := &query.Query{Name: "up", Schema: s, Project: []query.Projection{{Expr: query.C("s"), As: "s"}, {Expr: query.C("u"), As: "u"}}}
	out, err := up.OutputSchema()
	require.NoError(t, err)
	count := func(by string) *query.Query {
		return &query.Query{Name: "by_" + by, Schema: out, Window: query.Tumbling(1000), GroupBy: []query.Expr{query.C(by)},
			Aggregates: []query.Aggregate{{Func: query.Count, As: "n"}}}
	}
	key := func(i int) string { return fmt.Sprintf("a key longer than inline, number %d", i%3) }
	other := func(i int) string { return fmt.Sprintf("another string longer than inline, %d", i%2) }
	const n = 3000
	for _, c := range []struct {
		name      string
		downs     []string // the columns the queries downstream group by
		sink      bool     // the upstream's output also goes to a sink
		wantBlank []string
	}{
		{"u read by none", []string{"s"}, false, []string{"u"}},
		{"u read by one", []string{"s", "u"}, false, nil},
		{"a sink takes the output", []string{"s"}, true, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			counts := make([]map[string]int64, len(c.downs))
			upSpec := Spec{Query: up}
			sunk := 0
			if c.sink {
				upSpec.Tuples = func(b []byte) error {
					for o := 0; o < len(b); o += out.TupleSize {
						if u := string(strview.Bytes(b[o+24 : o+40])); u == other(0) || u == other(1) {
							sunk++
						}
					}
					return nil
				}
			}
			specs := []Spec{upSpec}
			for i, by := range c.downs {
				counts[i] = map[string]int64{}
				m := counts[i]
				specs = append(specs, Spec{Query: count(by), Upstream: Output(0), Windows: func(w *Window) error {
					for r := range w.Rows() {
						m[string(bytes.TrimRight(w.CanonicalKey(r)[1:], "\x00"))] += w.Agg(r, 0)
					}
					return nil
				}})
			}
			e, err := Start(Config{Workers: 2, TaskSize: 400, BufferSize: 1 << 16}, specs)
			require.NoError(t, err)
			upStream := e.Stream(0)
			assert.Equal(t, c.wantBlank, names(upStream.outBlank))
			for i := range c.downs {
				for _, b := range c.wantBlank {
					assert.NotContains(t, names(e.Stream(i+1).blankAttrs), b, "downstream %d empties nothing the upstream did", i)
				}
			}
			if c.wantBlank != nil {
				// The upstream's workers empty a task's output in place.
				arena := strview.NewArena(0)
				tu := make([]byte, out.TupleSize)
				strview.Put(tu[8:24], []byte(key(0)), arena)
				strview.Put(tu[24:40], []byte(other(0)), arena)
				upStream.blankOutput(tu)
				assert.Equal(t, key(0), string(strview.Bytes(tu[8:24])))
				assert.Empty(t, strview.Bytes(tu[24:40]))
				arena.Free()
			}
			arena := strview.NewArena(0)
			err = <-e.Produce(func() error {
				return commitCopyAll(upStream, n, 40, arena, func(t []byte, i int) {
					binary.LittleEndian.PutUint64(t, uint64(i))
					strview.Put(t[8:24], []byte(key(i)), arena)
					strview.Put(t[24:40], []byte(other(i)), arena)
				})
			})
			require.NoError(t, err)
			_, err = e.CloseAll()
			require.NoError(t, err)
			arena.Free()
			for i, by := range c.downs {
				want := map[string]int64{key(0): n / 3, key(1): n / 3, key(2): n / 3}
				if by == "u" {
					want = map[string]int64{other(0): n / 2, other(1): n / 2}
				}
				assert.Equal(t, want, counts[i], "grouped by %s", by)
			}
			if c.sink {
				assert.Equal(t, n, sunk, "the sink read every u")
			}
		})
	}
	assertNoLeak(t, base)
}

// names are the attributes' names, in order.
func names(as []query.Attribute) []string {
	var n []string
	for _, a := range as {
		n = append(n, a.Name)
	}
	return n
}

// TestDispatchFreesOnlyCommittedStrings: a task dispatched while the
// strings of the producer's next tuples are in the heap but the tuples
// not committed (Strings dispatches so when the heap is full: the task
// being filled holds it) frees, at its merge, the heap up to its own
// tuples' strings only; the next tuples, committed into the next task,
// keep theirs. It freed up to where the heap stood at the dispatch, and
// the strings of the next tuples were overwritten once the heap wrapped
// while their task waited.
func TestDispatchFreesOnlyCommittedStrings(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	q := countByS("c", stringSchema(t, false))
	e, got := countStrings(t, Config{Workers: 1, TaskSize: 24 * 4, BufferSize: 1 << 16}, q)
	st := e.Stream(0)
	long := strings.Repeat("a long string ", 8)
	var committed, heapEnd, written uint64
	err := <-e.Produce(func() error {
		put := func(i int) error {
			buf, err := st.Buffer()
			if err != nil {
				return err
			}
			binary.LittleEndian.PutUint64(buf, uint64(i))
			b, err := st.Strings(len(long))
			if err != nil {
				return err
			}
			copy(b, long)
			strview.PutRef(buf[8:24], b)
			return nil
		}
		if err := put(0); err != nil {
			return err
		}
		if err := st.Commit(24); err != nil {
			return err
		}
		committed = st.heap.Written()
		if err := put(1); err != nil { // its string placed, the tuple not committed
			return err
		}
		st.dispatch()
		for _, r := range st.records[:st.made] {
			if r.ID == st.nextID-1 && r.Dispatched != 0 {
				heapEnd = r.heapEnd
			}
		}
		written = st.heap.Written()
		return st.Commit(24)
	})
	require.NoError(t, err)
	_, err = e.CloseAll()
	require.NoError(t, err)
	assert.Equal(t, committed, heapEnd, "the dispatched task frees its own tuple's string")
	assert.Less(t, heapEnd, written, "and not the next one's")
	assert.Equal(t, map[string]int64{long: 2}, got)
	assertNoLeak(t, base)
}
