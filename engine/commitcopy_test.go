package engine

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/strview"
)

// TestCommitCopy: tuples whose long strings sit in an arena that the
// producer resets and overwrites after each CommitCopy are counted by
// their strings as written, at any task size.
func TestCommitCopy(t *testing.T) {
	base := runtime.NumGoroutine()
	s, err := query.NewSchema(24, query.Attribute{Name: "ts", Type: query.Int64, Offset: 0},
		query.Attribute{Name: "s", Type: query.String, Offset: 8})
	require.NoError(t, err)
	q := &query.Query{Name: "c", Schema: s, Window: query.Tumbling(1000), GroupBy: []query.Expr{query.C("s")},
		Aggregates: []query.Aggregate{{Func: query.Count, As: "n"}}}
	name := func(i int) string { return fmt.Sprintf("a string longer than inline, number %d", i%7) }
	for _, task := range []int{24, 240, 24 << 10} {
		got := map[string]int64{}
		e, err := Start(Config{Workers: 2, TaskSize: task, BufferSize: 1 << 16}, []Spec{{Query: q, Windows: func(w *Window) error {
			for i := range w.Rows() {
				// A string key's canonical form: a non-NULL mark, the bytes, zeros.
				got[string(bytes.TrimRight(w.CanonicalKey(i)[1:], "\x00"))] += w.Agg(i, 0)
			}
			return nil
		}}})
		require.NoError(t, err)
		arena := strview.NewArena(0)
		const n = 5000
		err = <-e.Produce(func() error {
			st := e.Stream(0)
			for i := 0; i < n; {
				buf, err := st.Buffer()
				if err != nil {
					return err
				}
				k := 0
				for ; k+24 <= len(buf) && i < n; k, i = k+24, i+1 {
					binary.LittleEndian.PutUint64(buf[k:], uint64(i))
					strview.Put(buf[k+8:k+24], []byte(name(i)), arena)
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
	base := runtime.NumGoroutine()
	s, err := query.NewSchema(40, query.Attribute{Name: "ts", Type: query.Int64},
		query.Attribute{Name: "s", Type: query.String, Offset: 8}, query.Attribute{Name: "u", Type: query.String, Offset: 24})
	require.NoError(t, err)
	q := &query.Query{Name: "c", Schema: s, Window: query.Tumbling(1000), GroupBy: []query.Expr{query.C("s")},
		Aggregates: []query.Aggregate{{Func: query.Count, As: "n"}}}
	got := map[string]int64{}
	e, err := Start(Config{Workers: 2, TaskSize: 400, BufferSize: 1 << 16}, []Spec{{Query: q, Windows: func(w *Window) error {
		for i := range w.Rows() {
			got[string(bytes.TrimRight(w.CanonicalKey(i)[1:], "\x00"))] += w.Agg(i, 0)
		}
		return nil
	}}})
	require.NoError(t, err)
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
	require.NoError(t, st.copyStrings(tuples, func(n int) ([]byte, error) { copied += n; return make([]byte, n), nil }))
	want := 0
	for i := range 10 {
		want += len(key(i))
		assert.Equal(t, key(i), string(strview.Bytes(tuples[i*40+8:i*40+24])))
		assert.Empty(t, strview.Bytes(tuples[i*40+24:i*40+40]))
	}
	assert.Equal(t, want, copied)

	const n = 3000
	err = <-e.Produce(func() error {
		for i := 0; i < n; {
			buf, err := st.Buffer()
			if err != nil {
				return err
			}
			k := 0
			for ; k+40 <= len(buf) && i < n; k, i = k+40, i+1 {
				binary.LittleEndian.PutUint64(buf[k:], uint64(i))
				strview.Put(buf[k+8:k+24], []byte(key(i)), arena)
				strview.Put(buf[k+24:k+40], []byte(unread), arena)
			}
			if err := st.CommitCopy(buf[:k]); err != nil {
				return err
			}
			arena.Reset()
			clear(arena.Alloc(4096))
			arena.Reset()
		}
		return nil
	})
	require.NoError(t, err)
	_, err = e.CloseAll()
	require.NoError(t, err)
	arena.Free()
	assert.Equal(t, map[string]int64{key(0): n / 3, key(1): n / 3, key(2): n / 3}, got)
	assertNoLeak(t, base)
}
