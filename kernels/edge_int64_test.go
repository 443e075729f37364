package kernels_test

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/window"
)

// int64Task is a task of 16-byte tuples (ts int64, a int32, pad) with the
// given event times and a = 1 except where a is 0 (filtered by a == 1).
func int64Task(ets []int64, filtered map[int]bool) []byte {
	b := make([]byte, 16*len(ets))
	for i, e := range ets {
		binary.LittleEndian.PutUint64(b[16*i:], uint64(e))
		if !filtered[i] {
			binary.LittleEndian.PutUint32(b[16*i+8:], 1)
		}
	}
	return b
}

// TestKernelsAtTheInt64Edges: both kernels (the fused one and its fast
// loop, the vectorised one) put the topmost pane's tuples in one fragment,
// never late, and refuse the first tuple that passes WHERE and whose
// first window starts below MinInt64, stopping there.
func TestKernelsAtTheInt64Edges(t *testing.T) {
	s, err := query.NewSchema(16, query.Attribute{Name: "ts", Type: query.Int64}, query.Attribute{Name: "a", Type: query.Int32, Offset: 8})
	require.NoError(t, err)
	for _, vec := range []bool{false, true} {
		q := &query.Query{Name: "k", Schema: s, Window: query.Tumbling(10000), Where: query.ColEq("a", 1),
			Aggregates: []query.Aggregate{{Func: query.Count}, {Func: query.Max, Arg: query.C("ts")}}}
		p, err := kernels.CompileWith(q, kernels.Options{Vectorised: vec})
		require.NoError(t, err)
		require.Equal(t, !vec, p.Fused)
		k := p.NewKernel()
		var r window.TaskResult

		// The top: MaxInt64 seals nothing, not even its own pane.
		r.Reset(p.Layout)
		k.Process(int64Task([]int64{math.MaxInt64 - 100, math.MaxInt64, math.MaxInt64 - 50, 0}, nil), 0, &r)
		require.False(t, r.Refused)
		top := p.Spec.PaneOf(math.MaxInt64)
		require.Len(t, r.Frags, 2, "vectorised %v", vec)
		assert.Equal(t, top, r.Frags[0].Pane)
		assert.Equal(t, uint64(3), r.Frags[0].Tuples, "vectorised %v: none late", vec)
		assert.Equal(t, uint64(1), r.Late, "vectorised %v: 0 is late after MaxInt64", vec)
		assert.Equal(t, []int64{3, math.MaxInt64}, r.Frags[0].State.Row(0))

		// The bottom: -9223372036854770000 starts its window; MinInt64 is
		// refused where it passes WHERE (tuple 3), and the kernel stops.
		r.Reset(p.Layout)
		k.Process(int64Task([]int64{-9223372036854770000, -9223372036854770000 + 9999, math.MinInt64, math.MinInt64, 5}, map[int]bool{2: true}), 0, &r)
		require.True(t, r.Refused, "vectorised %v", vec)
		assert.Equal(t, 3, r.RefusedAt)
		assert.Equal(t, int64(math.MinInt64), r.RefusedPos)
		require.NotEmpty(t, r.Frags)
		assert.Equal(t, int64(-9223372036854770000), p.Spec.PaneStart(r.Frags[0].Pane))
		assert.Equal(t, uint64(2), r.Frags[0].Tuples)
		for _, f := range r.Frags {
			assert.NotEqual(t, p.Spec.PaneOf(5), f.Pane, "vectorised %v: stopped at the refused tuple", vec)
		}
	}
}
