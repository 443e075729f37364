package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/testenv"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
	"github.com/saber-hx/saber-hx/window"
)

// denseSchema: 64-byte tuples: ts int64 at 0, a int32 at 8, b int64 at 16,
// f float64 at 24, key 16 bytes at 32, k8 8 bytes at 48.
func denseSchema(t *testing.T) *query.Schema {
	s, err := query.NewSchema(64,
		query.Attribute{Name: "ts", Type: query.Int64, Offset: 0},
		query.Attribute{Name: "a", Type: query.Int32, Offset: 8},
		query.Attribute{Name: "b", Type: query.Int64, Offset: 16},
		query.Attribute{Name: "f", Type: query.Float64, Offset: 24},
		query.Attribute{Name: "key", Type: query.Bytes, Offset: 32, Size: 16},
		query.Attribute{Name: "k8", Type: query.Bytes, Offset: 48, Size: 8},
	)
	require.NoError(t, err)
	return s
}

// denseEdges are values that the interval tests get wrong first.
var denseEdges = []int64{math.MinInt64, math.MinInt64 + 1, math.MinInt32, math.MinInt32 + 1, -1, 0, 1, 2, math.MaxInt32 - 1, math.MaxInt32, math.MaxInt64 - 1, math.MaxInt64}

func denseConst(r *rand.Rand) int64 {
	if r.IntN(3) == 0 {
		return denseEdges[r.IntN(len(denseEdges))]
	}
	return r.Int64N(7) - 3
}

// denseWhere is a random WHERE of the shapes the dense kernel plans for
// (integer column-constant comparisons, alone or in a conjunction) and of
// others (OR, float, column against column), or none.
func denseWhere(r *rand.Rand) query.Expr {
	ops := []query.CmpOp{query.Eq, query.Ne, query.Lt, query.Le, query.Gt, query.Ge}
	cmp := func() query.Expr {
		col := []string{"a", "b"}[r.IntN(2)]
		if r.IntN(4) == 0 {
			return query.Cmp(query.Int(denseConst(r)), ops[r.IntN(6)], query.C(col))
		}
		return query.Cmp(query.C(col), ops[r.IntN(6)], query.Int(denseConst(r)))
	}
	switch r.IntN(7) {
	case 0:
		return nil
	case 1, 2:
		return cmp()
	case 3:
		return query.And(cmp(), cmp(), cmp())
	case 4:
		return query.Or(cmp(), cmp())
	case 5:
		return query.Cmp(query.C("f"), query.Lt, query.Float(0.25))
	default:
		return query.And(cmp(), query.Cmp(query.C("a"), query.Le, query.C("b")))
	}
}

func denseAggs(r *rand.Rand) []query.Aggregate {
	aggs := []query.Aggregate{{Func: query.Count, As: "n"}}
	args := []query.Expr{query.C("ts"), query.C("a"), query.C("b"), query.C("f"), query.Add(query.C("a"), query.Int(3)), query.Mul(query.C("f"), query.C("ts"))}
	funcs := []query.AggFunc{query.Sum, query.Min, query.Max, query.Avg}
	for i := range r.IntN(4) {
		aggs = append(aggs, query.Aggregate{Func: funcs[r.IntN(4)], Arg: args[r.IntN(len(args))], As: fmt.Sprint("x", i)})
	}
	if r.IntN(4) == 0 {
		aggs = aggs[1:]
		if len(aggs) == 0 {
			aggs = []query.Aggregate{{Func: query.Max, Arg: query.C("ts"), As: "m"}}
		}
	}
	return aggs
}

// denseData: n tuples in event-time order with jitter, late tuples sent
// back, edge values in a and b, keys of the table or not.
func denseData(r *rand.Rand, n int, keys, keys8 [][]byte, step int64) []byte {
	b := make([]byte, n*64)
	ts := int64(r.IntN(1000)) - 500
	lateOne := 40 // one tuple in lateOne is sent back, if any
	if r.IntN(3) == 0 {
		lateOne = 1 << 30
	}
	for i := range n {
		t := b[i*64 : i*64+64]
		ts += r.Int64N(step + 1)
		e := ts + r.Int64N(5) - 2
		if r.IntN(lateOne) == 0 {
			e -= 50 + r.Int64N(200)
		}
		binary.LittleEndian.PutUint64(t, uint64(e))
		a, bv := r.Int64N(7)-3, r.Int64N(7)-3
		if r.IntN(8) == 0 {
			a = denseEdges[r.IntN(len(denseEdges))]
		}
		if r.IntN(8) == 0 {
			bv = denseEdges[r.IntN(len(denseEdges))]
		}
		binary.LittleEndian.PutUint32(t[8:], uint32(int32(a)))
		binary.LittleEndian.PutUint64(t[16:], uint64(bv))
		binary.LittleEndian.PutUint64(t[24:], math.Float64bits(r.Float64()-0.5))
		if r.IntN(30) != 0 {
			copy(t[32:48], keys[r.IntN(len(keys))])
			copy(t[48:56], keys8[r.IntN(len(keys8))])
		} else {
			binary.LittleEndian.PutUint64(t[32:], r.Uint64())
			binary.LittleEndian.PutUint64(t[48:], r.Uint64())
		}
	}
	return b
}

// denseRun runs the tasks of data (random sizes) through k and a window
// assembler and returns the output in the reference's form, and whether
// the kernel refused a tuple.
func denseRun(t *testing.T, p *Plan, k Kernel, data []byte, r *rand.Rand) (*reference.Result, bool) {
	ts := p.TupleSize
	res := &reference.Result{}
	asm := window.NewAssembler(p.Spec, p.Layout)
	emit := func(o *window.Result) error {
		var rows []reference.Row
		for _, g := range o.Rows {
			row := reference.Row{Start: o.Start, End: o.End, Key: string(p.GroupKeys[g])}
			for a := range p.Aggs {
				i, f, isFloat := p.AggValue(o.State.Row(g), a)
				if isFloat {
					row.Values = append(row.Values, reference.Float(f))
				} else {
					row.Values = append(row.Values, reference.Int(i))
				}
			}
			rows = append(rows, row)
		}
		// The reference orders a window's rows by key, an engine's output
		// by its own rule: the rows are compared as a set per window.
		slices.SortFunc(rows, func(x, y reference.Row) int { return strings.Compare(x.Key, y.Key) })
		res.Rows = append(res.Rows, rows...)
		return nil
	}
	var tr window.TaskResult
	for off := 0; off < len(data); {
		n := min(len(data)-off, ts*(1+r.IntN(1500)))
		tr.Reset(p.Layout)
		k.Process(data[off:off+n], uint64(off/ts), &tr)
		if tr.Refused {
			return nil, true
		}
		require.NoError(t, asm.Merge(&tr, emit))
		off += n
	}
	require.NoError(t, asm.Flush(emit))
	c := asm.Counters
	res.Counts = reference.Counts{Tuples: c.Tuples, Filtered: c.Filtered, Unmatched: c.Unmatched, Late: c.Late, Counted: c.Counted}
	return res, false
}

// TestDenseKernelMatchesReference: the dense kernel's planned passes (the
// front pass's interval, the join probe, the counts without a test per
// tuple where a chunk lies in one pane, the folds over one group or the
// join's ordinals) against the reference evaluator: random WHERE, joins,
// aggregates and windows (panes smaller than a chunk and far larger, row
// windows, a watermark delay), over out-of-order inputs with late tuples
// and edge values, cut into tasks of random sizes; a tuple whose first
// window starts below MinInt64 refused where the reference refuses it.
func TestDenseKernelMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 15))
	s := denseSchema(t)
	var keys, keys8 [][]byte
	table := &query.StaticTable{KeyWidth: 16, ValueWidth: 4}
	table8 := &query.StaticTable{KeyWidth: 8, ValueWidth: 4}
	for i := range 40 {
		k := binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, r.Uint64()), uint64(i))
		k8 := binary.LittleEndian.AppendUint64(nil, r.Uint64())
		keys, keys8 = append(keys, k), append(keys8, k8)
		table.Keys, table8.Keys = append(table.Keys, k), append(table8.Keys, k8)
		v := binary.BigEndian.AppendUint32(nil, uint32(r.IntN(9)))
		table.Values, table8.Values = append(table.Values, v), append(table8.Values, v)
	}
	windows := []query.Window{query.Tumbling(100), query.Sliding(300, 50), query.Tumbling(7), query.Sliding(40, 13),
		{Type: query.Rows, Size: 64, Slide: 64}, {Type: query.Rows, Size: 200, Slide: 50}, {Type: query.Range, Size: 100, Slide: 20, Delay: 30},
		// Panes that hold whole chunks: the count loop without tests.
		query.Tumbling(1 << 40), query.Sliding(1<<41, 1<<40), {Type: query.Rows, Size: 1 << 20, Slide: 1 << 20}}
	cases := testenv.Scale(50, 150)
	if testing.Short() {
		cases = 50
	}
	refused := 0
	for c := range cases {
		q := &query.Query{Name: "dense", Schema: s, Window: windows[r.IntN(len(windows))], Where: denseWhere(r), Aggregates: denseAggs(r)}
		switch r.IntN(4) {
		case 1:
			q.Join = &query.StaticJoin{Column: "key", Table: table, As: "g"}
		case 2:
			q.Join = &query.StaticJoin{Column: "key", Table: table, As: "g"}
			q.GroupBy = []query.Expr{query.C("g")}
		case 3:
			q.Join = &query.StaticJoin{Column: "k8", Table: table8, As: "g"}
			q.GroupBy = []query.Expr{query.C("g")}
		}
		name := fmt.Sprintf("%d: where %v join %v groups %v aggs %v window %+v", c, q.Where, q.Join != nil, q.GroupBy, q.Aggregates, q.Window)
		p, err := CompileWith(q, Options{Vectorised: true})
		require.NoError(t, err, name)
		k, ok := p.NewKernel().(*denseKernel)
		require.True(t, ok, "%s: the dense kernel", name)
		data := denseData(r, 2500, keys, keys8, 1+r.Int64N(4))
		if r.IntN(10) == 0 { // a refused tuple: its first window starts below MinInt64
			binary.LittleEndian.PutUint64(data[64*r.IntN(2500):], 1<<63)
		}
		want, wantErr := reference.Evaluate(q, data)
		got, gotRefused := denseRun(t, p, k, data, r)
		if wantErr != nil || gotRefused {
			assert.True(t, wantErr != nil && gotRefused, "%s: refused: reference %v, kernel %v", name, wantErr, gotRefused)
			refused++
			continue
		}
		if d := reference.Diff(q, want, got, 1e-9); d != "" {
			t.Fatalf("%s:\n%s", name, d)
		}
	}
	assert.Positive(t, refused, "some inputs refused")
}

// TestRangeOf: the interval of each comparison holds exactly where the
// comparison does.
func TestRangeOf(t *testing.T) {
	ops := []query.CmpOp{query.Eq, query.Ne, query.Lt, query.Le, query.Gt, query.Ge}
	for _, c := range denseEdges {
		for _, op := range ops {
			lo, span, neg := rangeOf(op, c)
			for _, v := range append(denseEdges, c-1, c, c+1) {
				assert.Equal(t, query.Holds(op, v, c), (uint64(v-lo) <= span) != neg, "%d %v %d", v, op, c)
			}
		}
	}
}
