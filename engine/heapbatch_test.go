package engine

import (
	"encoding/binary"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/strview"
)

// TestCommitCopyBatchLongerThanHeap: one CommitCopy of tuples whose long
// strings are each under half the string heap but together more than the
// heap: the copy commits the tuples placed and dispatches their task
// before it waits, where it waited for ever on a heap full of the strings
// of tuples no task held.
func TestCommitCopyBatchLongerThanHeap(t *testing.T) {
	parallel(t)
	q := countByS("c", stringSchema(t, false))
	e, got := countStrings(t, Config{Workers: 2, TaskSize: 24 << 6, BufferSize: 1 << 16}, q)
	st := e.Stream(0)
	require.Equal(t, 4<<20, st.heap.Size())
	name := func(i int) string { return fmt.Sprint(i) + strings.Repeat("x", 1500<<10) } // 1.5 MiB < heap/2
	arena := strview.NewArena(0)
	const n = 4 // 6 MiB of strings in one batch, heap 4 MiB
	done := e.Produce(func() error {
		return commitCopyAll(st, n, 24, arena, func(t []byte, i int) {
			binary.LittleEndian.PutUint64(t, uint64(i))
			strview.Put(t[8:24], []byte(name(i)), arena)
		})
	})
	select {
	case err := <-done:
		require.NoError(t, err)
		_, err = e.CloseAll()
		require.NoError(t, err)
		assert.Len(t, got, n)
		for i := range n {
			assert.Equal(t, int64(1), got[name(i)], "tuple %d's string", i)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the producer is stuck in Stream.Strings: the batch's strings fill the heap")
	}
}

// TestPushBatchLongerThanHeap: a stateless query that projects a long
// string twice feeds a query downstream; an upstream task's output holds
// more long-string bytes than the downstream stream's heap (each string
// under half of it): the push commits what it placed before it waits.
func TestPushBatchLongerThanHeap(t *testing.T) {
	parallel(t)
	in := stringSchema(t, false)
	up := &query.Query{Name: "up", Schema: in, Project: []query.Projection{{Expr: query.C("s"), As: "a"}, {Expr: query.C("s"), As: "b"}}}
	out, err := up.OutputSchema()
	require.NoError(t, err)
	var mu sync.Mutex
	rows, bad := 0, 0
	// 1.5 MiB < heap/2, each tuple's its own: a string freed with an
	// earlier task and written over by a later one would show.
	long := func(i int64) string { return fmt.Sprint(i) + strings.Repeat("y", 1500<<10) }
	down := &query.Query{Name: "down", Schema: out}
	dout, err := down.OutputSchema()
	require.NoError(t, err)
	e, err := Start(Config{Workers: 2, TaskSize: 24 * 4, BufferSize: 1 << 16}, []Spec{
		{Query: up},
		{Query: down, Upstream: Output(0), Tuples: func(b []byte) error {
			mu.Lock()
			defer mu.Unlock()
			for o := 0; o+dout.TupleSize <= len(b); o += dout.TupleSize {
				rows++
				want := long(int64(binary.LittleEndian.Uint64(b[o:])))
				for _, a := range dout.Attrs[1:] {
					if string(strview.Bytes(b[o+a.Offset:o+a.Offset+strview.Size])) != want {
						bad++
					}
				}
			}
			return nil
		}},
	})
	require.NoError(t, err)
	st := e.Stream(0)
	arena := strview.NewArena(0)
	const n = 6
	done := e.Produce(func() error {
		for i := range n {
			buf, err := st.Buffer()
			if err != nil {
				return err
			}
			binary.LittleEndian.PutUint64(buf, uint64(i))
			strview.Put(buf[8:24], []byte(long(int64(i))), arena)
			if err := st.CommitCopy(buf[:24]); err != nil { // one tuple a commit: the producer's side fits
				return err
			}
			arena.Reset()
		}
		return nil
	})
	select {
	case err := <-done:
		require.NoError(t, err)
		_, err = e.CloseAll()
		require.NoError(t, err)
		assert.Equal(t, n, rows)
		assert.Zero(t, bad, "strings that are not the tuples'")
	case <-time.After(20 * time.Second):
		t.Fatal("stuck: the push waits for heap room that only its own tuples not yet committed hold")
	}
}
