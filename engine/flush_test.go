package engine

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
)

// TestFlush: a flushed partial task is merged (its windows out) without
// the task filling; the results equal those of the same input unflushed;
// a partial tuple is refused.
func TestFlush(t *testing.T) {
	q := &query.Query{Name: "count", Schema: testSchema(t), Window: query.Tumbling(10), Aggregates: []query.Aggregate{{Func: query.Count, As: "n"}}}
	counts := func(flush bool) []int64 {
		var rows []int64
		eng, err := New(Config{Workers: 2, TaskSize: 64 * testTuple, BufferSize: 1 << 16}, q, func(w *Window) error {
			c, err := w.Column("n")
			if err != nil {
				return err
			}
			rows = append(rows, w.Start, w.Int(0, c))
			return nil
		})
		require.NoError(t, err)
		st := eng.Stream(0)
		tuple := make([]byte, testTuple)
		for i := range 100 {
			binary.LittleEndian.PutUint64(tuple, uint64(i))
			require.NoError(t, st.Write(tuple))
			if flush && i%25 == 24 {
				require.NoError(t, st.Flush())
				want := uint64(i+1) * testTuple
				require.Eventually(t, func() bool { return st.Progress().Merged == want }, 10*time.Second, time.Millisecond, "flushed tuples merged")
				// Progress reads Merged and Complete apart (each true when
				// read), and the merge publishes Merged first: Complete
				// may trail it by a moment.
				complete := int64(i-10)/10*10 + 10
				assert.Eventually(t, func() bool { return st.Progress().Complete == complete }, 10*time.Second, time.Millisecond,
					"the windows the watermark (%d) closed are out: Complete reaches %d", i, complete)
			}
		}
		require.NoError(t, st.Flush())
		require.NoError(t, st.Flush(), "nothing to flush")
		require.NoError(t, st.Write(tuple[:5]))
		assert.ErrorContains(t, st.Flush(), "inside a tuple")
		require.NoError(t, st.Write(tuple[5:]))
		_, err = eng.Close()
		require.NoError(t, err)
		assert.Error(t, st.Flush(), "after Close")
		return rows
	}
	assert.Equal(t, counts(false), counts(true))
}
