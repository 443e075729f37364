package kernels

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/window"
)

// fastShape is a query of fastScanner's shape, YSB's kind: 64-byte tuples,
// ts at 0, an int32 kind at 8, a 16-byte key at 16, an int64 v at 32.
func fastShape(t *testing.T, r *rand.Rand, pred, join, max64 bool, w query.Window) (*query.Query, [][]byte) {
	s, err := query.NewSchema(64,
		query.Attribute{Name: "ts", Type: query.Int64, Offset: 0},
		query.Attribute{Name: "kind", Type: query.Int32, Offset: 8},
		query.Attribute{Name: "key", Type: query.Bytes, Offset: 16, Size: 16},
		query.Attribute{Name: "v", Type: query.Int64, Offset: 32},
	)
	require.NoError(t, err)
	q := &query.Query{Name: "fast", Schema: s, Window: w, Aggregates: []query.Aggregate{{Func: query.Count, As: "n"}}}
	if pred {
		q.Where = query.ColEq("kind", 0)
	}
	var keys [][]byte
	if join {
		table := &query.StaticTable{KeyWidth: 16, ValueWidth: 4}
		for i := range 50 {
			k := binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, r.Uint64()), uint64(i))
			table.Keys = append(table.Keys, k)
			table.Values = append(table.Values, binary.BigEndian.AppendUint32(nil, uint32(r.IntN(12))))
			keys = append(keys, k)
		}
		q.Join = &query.StaticJoin{Column: "key", Table: table, As: "g"}
		q.GroupBy = []query.Expr{query.C("g")}
	}
	if max64 {
		q.Aggregates = append(q.Aggregates, query.Aggregate{Func: query.Max, Arg: query.C("v"), As: "m"})
	}
	return q, keys
}

// fastData is n tuples in event-time order with jitter, late tuples sent
// back, unknown keys and negative values.
func fastData(r *rand.Rand, n int, keys [][]byte, step int64) []byte {
	b := make([]byte, n*64)
	ts := int64(r.IntN(1000)) - 500
	for i := range n {
		t := b[i*64 : i*64+64]
		ts += r.Int64N(step + 1)
		e := ts + r.Int64N(5) - 2
		if r.IntN(40) == 0 {
			e -= 50 + r.Int64N(200) // late, or out of order
		}
		binary.LittleEndian.PutUint64(t, uint64(e))
		binary.LittleEndian.PutUint32(t[8:], uint32(r.IntN(3)))
		if len(keys) > 0 && r.IntN(30) != 0 {
			copy(t[16:32], keys[r.IntN(len(keys))])
		} else {
			binary.LittleEndian.PutUint64(t[16:], r.Uint64())
		}
		binary.LittleEndian.PutUint64(t[32:], uint64(r.Int64N(2000)-1000))
	}
	return b
}

// TestFastScannerMatchesGeneralLoop: the fused kernel with its fast loop
// gives the very task results of the same kernel without it (the general
// loop, the oracle): fragments, their order, rows, Touched order, counters.
func TestFastScannerMatchesGeneralLoop(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	windows := []query.Window{query.Tumbling(100), query.Sliding(300, 50), query.Tumbling(7), query.Sliding(40, 13)}
	for _, pred := range []bool{false, true} {
		for _, join := range []bool{false, true} {
			for _, max64 := range []bool{false, true} {
				for wi, w := range windows {
					t.Run(fmt.Sprintf("pred%v/join%v/max%v/w%d", pred, join, max64, wi), func(t *testing.T) {
						q, keys := fastShape(t, r, pred, join, max64, w)
						p, err := Compile(q)
						require.NoError(t, err)
						k, ok := p.NewKernel().(*fusedKernel)
						require.True(t, ok, "the fused kernel")
						require.True(t, k.fast, "the fast loop applies")
						data := fastData(r, 3000, keys, 1+r.Int64N(4))
						for off := 0; off < len(data); {
							n := min(len(data)-off, 64*(1+r.IntN(700)))
							task := data[off : off+n]
							var fast, general window.TaskResult
							fast.Reset(p.Layout)
							general.Reset(p.Layout)
							k.fast = true
							k.Process(task, uint64(off/64), &fast)
							k.fast = false
							k.Process(task, uint64(off/64), &general)
							assertSameResult(t, &general, &fast, off)
							off += n
						}
					})
				}
			}
		}
	}
}

func assertSameResult(t *testing.T, want, got *window.TaskResult, off int) {
	t.Helper()
	require.Equal(t, [5]any{want.Tuples, want.MaxTS, want.Filtered, want.Unmatched, want.Late},
		[5]any{got.Tuples, got.MaxTS, got.Filtered, got.Unmatched, got.Late}, "counters, task at byte %d", off)
	require.Len(t, got.Frags, len(want.Frags), "fragments, task at byte %d", off)
	for i := range want.Frags {
		wf, gf := want.Frags[i], got.Frags[i]
		assert.Equal(t, wf.Pane, gf.Pane, "fragment %d", i)
		assert.Equal(t, wf.Tuples, gf.Tuples, "pane %d tuples", wf.Pane)
		assert.Equal(t, wf.State.Touched, gf.State.Touched, "pane %d rows in order", wf.Pane)
		assert.Equal(t, wf.State.Vals, gf.State.Vals, "pane %d values", wf.Pane)
	}
}

// TestFastScannerShapes: which fused queries take the fast loop.
func TestFastScannerShapes(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	q, _ := fastShape(t, r, true, true, true, query.Tumbling(10))
	for name, edit := range map[string]func(q *query.Query){
		"rows window":      func(q *query.Query) { q.Window.Type = query.Rows },
		"two predicates":   func(q *query.Query) { q.Where = query.And(query.ColEq("kind", 0), query.ColEq("kind", 0)) },
		"other comparison": func(q *query.Query) { q.Where = query.ColLt("kind", 1) },
		"sum":              func(q *query.Query) { q.Aggregates[1].Func = query.Sum },
		"max of int32":     func(q *query.Query) { q.Aggregates[1].Arg = query.C("kind") },
	} {
		c := *q
		c.Aggregates = append([]query.Aggregate(nil), q.Aggregates...)
		edit(&c)
		p, err := Compile(&c)
		require.NoError(t, err, name)
		if k, ok := p.NewKernel().(*fusedKernel); ok {
			assert.False(t, k.fast, name)
		}
	}
	p, err := Compile(q)
	require.NoError(t, err)
	assert.True(t, p.NewKernel().(*fusedKernel).fast)
}
