package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/testenv"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/window"
)

// directSchema: ts, two int32 keys, an int64 key, an int32, a float32 and
// a float64 value (40 bytes).
func directSchema(t *testing.T) *query.Schema {
	s, err := query.NewSchema(40,
		query.Attribute{Name: "ts", Type: query.Int64, Offset: 0},
		query.Attribute{Name: "a", Type: query.Int32, Offset: 8},
		query.Attribute{Name: "b", Type: query.Int32, Offset: 12},
		query.Attribute{Name: "c", Type: query.Int64, Offset: 16},
		query.Attribute{Name: "v", Type: query.Int32, Offset: 24},
		query.Attribute{Name: "y", Type: query.Float32, Offset: 28},
		query.Attribute{Name: "x", Type: query.Float64, Offset: 32},
	)
	require.NoError(t, err)
	return s
}

// directTuples returns n tuples from event time *now on, with keys of a
// phase: small ranges, ranges that drift up or down, negative ones, or
// spread (int32 and int64 extremes: too many for a direct table).
func directTuples(r *rand.Rand, n int, now *int64, phase int) []byte {
	b := make([]byte, 40*n)
	le := binary.LittleEndian
	for i := range n {
		t := b[40*i:]
		*now += r.Int64N(3)
		if r.IntN(50) == 0 {
			le.PutUint64(t, uint64(*now-r.Int64N(40))) // out of order, some late
		} else {
			le.PutUint64(t, uint64(*now))
		}
		var a, bb int32
		var c int64
		switch phase % 5 {
		case 0:
			a, bb, c = int32(r.IntN(10)), int32(r.IntN(4)), int64(r.IntN(7))
		case 1: // drifting up
			a, bb, c = int32(int(*now/50)%2000+r.IntN(5)), int32(r.IntN(4)), int64(r.IntN(7))
		case 2: // negative, drifting down
			a, bb, c = int32(-r.IntN(30)), int32(r.IntN(4)-int(*now/40)), -int64(r.IntN(9))
		case 3: // spread
			a, bb = int32(r.Uint32()), int32(r.IntN(3))
			c = []int64{math.MinInt64, math.MaxInt64, 0, -1, 1}[r.IntN(5)]
		case 4:
			a, bb, c = int32(r.IntN(3)), int32(r.IntN(2)), int64(r.IntN(2))
		}
		le.PutUint32(t[8:], uint32(a))
		le.PutUint32(t[12:], uint32(bb))
		le.PutUint64(t[16:], uint64(c))
		le.PutUint32(t[24:], uint32(int32(r.IntN(2000)-1000)))
		le.PutUint32(t[28:], math.Float32bits(float32(r.NormFloat64()*10)))
		le.PutUint64(t[32:], math.Float64bits(r.NormFloat64()*100))
	}
	return b
}

type fragRow struct {
	pane   int64
	k0, k1 uint64
	row    []int64
}

// fragRowsEqual is x == y, row for row: what require.Equal checks, without
// its reflection (a fifth of TestDirectTablesMatchProbedTables' time), which
// is left to print the difference where there is one.
func fragRowsEqual(x, y []fragRow) bool {
	return slices.EqualFunc(x, y, func(a, b fragRow) bool {
		return a.pane == b.pane && a.k0 == b.k0 && a.k1 == b.k1 && slices.Equal(a.row, b.row)
	})
}

// fragRows lists a task result's fragments as rows, in a canonical order.
func fragRows(r *window.TaskResult) []fragRow {
	var rows []fragRow
	for _, f := range r.Frags {
		for _, s := range f.State.Touched {
			k0, k1 := f.State.Key(s)
			rows = append(rows, fragRow{f.Pane, k0, k1, slices.Clone(f.State.Row(s))})
		}
	}
	slices.SortFunc(rows, func(x, y fragRow) int {
		switch {
		case x.pane != y.pane:
			return int(x.pane - y.pane)
		case x.k0 != y.k0:
			if x.k0 < y.k0 {
				return -1
			}
			return 1
		case x.k1 < y.k1:
			return -1
		case x.k1 > y.k1:
			return 1
		}
		return 0
	})
	return rows
}

// TestDirectTablesMatchProbedTables: the aggregate kernel's direct tables
// (integer keys of few values, slots computed from the keys) give the same
// fragments, bit for bit, as its probed tables, and the windows assembled
// from them are the same, over keys that stay in a range, drift (widening
// the mapping, fragments of an older mapping made probed tables), go
// negative or spread too far for a direct table; for GROUP BY int32
// columns, an int64 column and an expression, sliding and tumbling.
func TestDirectTablesMatchProbedTables(t *testing.T) {
	sc := directSchema(t)
	ab, abc := []query.Expr{query.C("a"), query.C("b")}, []query.Expr{query.C("b"), query.C("c"), query.C("a")}
	divB := []query.Expr{query.Div(query.C("a"), query.Int(3)), query.C("b")}
	cPlus := []query.Expr{query.C("c"), query.Add(query.C("b"), query.Int(1))}
	// int32 columns, the last perhaps divided (slotCols: lrb1's shape).
	baDiv := []query.Expr{query.C("b"), query.C("a"), query.Div(query.C("b"), query.Int(7))}
	aDiv := []query.Expr{query.C("a"), query.Div(query.C("b"), query.Int(-5))}
	ba := []query.Expr{query.C("b"), query.C("a")}
	one := func(e query.Expr) []query.Expr { return []query.Expr{e} }
	// Aggregates of the fused passes (one argument: an int32, int64,
	// float32 or float64 column read in place, an expression's register;
	// COUNT alone) and of the count and fold passes (several, MAX).
	several := []query.Aggregate{{Func: query.Count}, {Func: query.Sum, Arg: query.C("v")}, {Func: query.Avg, Arg: query.C("x")}}
	sumV := []query.Aggregate{{Func: query.Count}, {Func: query.Sum, Arg: query.C("v")}}
	sumC := []query.Aggregate{{Func: query.Sum, Arg: query.C("c")}}
	avgX := []query.Aggregate{{Func: query.Avg, Arg: query.C("x")}}
	avgY := []query.Aggregate{{Func: query.Avg, Arg: query.C("y")}}
	sumReg := []query.Aggregate{{Func: query.Sum, Arg: query.Mul(query.C("v"), query.C("b"))}}
	sumFReg := []query.Aggregate{{Func: query.Sum, Arg: query.Mul(query.C("x"), query.Float(0.5))}}
	count := []query.Aggregate{{Func: query.Count}}
	maxV := []query.Aggregate{{Func: query.Max, Arg: query.C("v")}}
	cases := []struct {
		gb   []query.Expr
		aggs []query.Aggregate
	}{
		{ab, several}, {abc, several}, {divB, several}, {cPlus, several},
		{ab, sumV}, {abc, avgY}, {divB, sumReg}, {cPlus, sumFReg}, {ab, count}, {abc, maxV},
		{baDiv, avgY}, {aDiv, sumV}, {ba, avgX}, {baDiv, several}, {aDiv, avgY}, {baDiv, count},
		// One key: the direct tables ahead of the cache of slots; a column
		// key's slot read in the fused loop itself.
		{one(query.C("a")), sumV}, {one(query.C("a")), avgX}, {one(query.C("a")), avgY}, {one(query.C("a")), count},
		{one(query.C("a")), sumFReg}, {one(query.C("a")), several},
		{one(query.C("c")), sumC}, {one(query.C("c")), avgY}, {one(query.C("c")), count},
		{one(query.Div(query.C("a"), query.Int(3))), sumV}, {one(query.Div(query.C("a"), query.Int(3))), avgX},
	}
	for gi, c := range cases {
		gb := c.gb
		// Panes of a few tuples and of a few chunks (the fused loops over
		// whole chunks, late tuples among them).
		wins := []query.Window{query.Sliding(60, 20), query.Tumbling(50), query.Sliding(6000, 2000)}
		if len(gb) > 1 || !testenv.Full() {
			// One window of the three per case, in turn (one key: all
			// three in the long run).
			wins = wins[gi%3:][:1]
		}
		for _, win := range wins {
			q := &query.Query{Name: "direct", Schema: sc, Window: win, GroupBy: gb, Aggregates: c.aggs}
			if gi%3 == 1 { // a selection: the fused loops over it
				q.Where = query.Cmp(query.C("v"), query.Gt, query.Int(-500))
			}
			p, err := Compile(q)
			require.NoError(t, err)
			kd, ok := p.NewKernel().(*aggregateKernel)
			require.True(t, ok)
			require.NotEqual(t, groupBytes, kd.mode, "integer keys")
			kh := p.NewKernel().(*aggregateKernel)
			kh.dm.off = true // the oracle: probed tables only
			ad, ah := window.NewAssembler(p.Spec, p.Layout), window.NewAssembler(p.Spec, p.Layout)
			var outD, outH []fragRow
			collect := func(dst *[]fragRow) func(*window.Result) error {
				return func(o *window.Result) error {
					for _, g := range o.Rows {
						k0, k1 := o.State.Key(g)
						*dst = append(*dst, fragRow{o.Start, k0, k1, slices.Clone(o.State.Row(g))})
					}
					return nil
				}
			}
			r := rand.New(rand.NewPCG(uint64(gi), 9))
			now := int64(0)
			var rd, rh window.TaskResult
			first := uint64(0)
			mappings := map[uint32]bool{}
			// 60 tasks of up to 3000 tuples in the long run: every phase
			// of directTuples twice; 30 of up to 1500 by default: once.
			for task := range testenv.Scale(30, 60) {
				n := 1 + r.IntN(testenv.Scale(1500, 3000))
				if task%6 == 0 {
					n = 2 // a narrow first mapping, which the next tuples overstep by one
				}
				data := directTuples(r, n, &now, task/6)
				rd.Reset(p.Layout)
				rh.Reset(p.Layout)
				kd.Process(data, first, &rd)
				kh.Process(data, first, &rh)
				first += uint64(n)
				require.Equal(t, rh.Tuples, rd.Tuples)
				require.Equal(t, rh.Late, rd.Late)
				require.Equal(t, rh.MaxTS, rd.MaxTS, "the watermark after the task")
				if fh, fd := fragRows(&rh), fragRows(&rd); !fragRowsEqual(fh, fd) {
					require.Equal(t, fh, fd, "group by %d, %v, task %d", gi, win, task)
				}
				for _, f := range rd.Frags {
					if m := f.State.Direct(); m != 0 {
						mappings[m] = true
					}
				}
				require.NoError(t, ad.Merge(&rd, collect(&outD)))
				require.NoError(t, ah.Merge(&rh, collect(&outH)))
			}
			require.NoError(t, ad.Flush(collect(&outD)))
			require.NoError(t, ah.Flush(collect(&outH)))
			if !fragRowsEqual(outH, outD) {
				require.Equal(t, outH, outD, "group by %d, %v: windows", gi, win)
			}
			assert.Equal(t, ah.Counters, ad.Counters)
			assert.Greater(t, len(mappings), 1, "group by %d: the mapping widened", gi)
			assert.True(t, kd.dm.off, "group by %d: spread keys end the direct tables", gi)
		}
	}
}

// TestNoDirectTablesWithoutAnAssembler: fragments that no Assembler merges
// (by key) keep the probed tables' placement, which the GPU emulator's
// tests compare slot for slot with the CPU's.
func TestNoDirectTablesWithoutAnAssembler(t *testing.T) {
	q := &query.Query{Name: "direct", Schema: directSchema(t), Window: query.Sliding(60, 20),
		GroupBy: []query.Expr{query.C("a"), query.C("b")}, Aggregates: []query.Aggregate{{Func: query.Count}}}
	p, err := Compile(q)
	require.NoError(t, err)
	k := p.NewKernel()
	r := rand.New(rand.NewPCG(1, 1))
	now := int64(0)
	var res window.TaskResult
	for range 5 {
		res.Reset(p.Layout)
		k.Process(directTuples(r, 2000, &now, 0), 0, &res)
		require.NotEmpty(t, res.Frags)
		for _, f := range res.Frags {
			require.Zero(t, f.State.Direct())
		}
	}
	window.NewAssembler(p.Spec, p.Layout)
	res.Reset(p.Layout)
	k.Process(directTuples(r, 2000, &now, 0), 0, &res)
	assert.NotZero(t, res.Frags[len(res.Frags)-1].State.Direct(), "merged by an Assembler: direct tables")
}

// TestDirectSlotsAreABijection: under one mapping, a slot stands for one
// key and a key for one slot, every slot below the mapping's size, over
// chunks whose values stay inside the ranges, overstep them by one, grow
// and shrink; the mapping widens where a chunk oversteps it.
func TestDirectSlotsAreABijection(t *testing.T) {
	sc := directSchema(t)
	q := &query.Query{Name: "direct", Schema: sc, Window: query.Sliding(60, 20),
		GroupBy:    []query.Expr{query.C("a"), query.C("c"), query.C("b")},
		Aggregates: []query.Aggregate{{Func: query.Count}}}
	p, err := Compile(q)
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(5, 8))
	for range 30 {
		k := p.NewKernel().(*aggregateKernel)
		type key [3]int64
		slotKey := map[int32]key{}
		keySlot := map[key]int32{}
		mapping := uint32(0)
		lo := [3]int64{int64(r.IntN(20)) - 10, int64(r.IntN(20)) - 10, int64(r.IntN(20)) - 10}
		span := [3]int64{1, 1, 1}
		for range 40 {
			// Values from lo up to lo+span, sometimes one past it.
			n := 1 + r.IntN(60)
			sel := make([]int32, n)
			for i := range n {
				sel[i] = int32(i)
				for j, kp := range k.keys {
					kp.expr.ints[i] = lo[j] + r.Int64N(span[j]+int64(r.IntN(2)))
				}
			}
			if r.IntN(3) == 0 {
				span[r.IntN(3)]++
			}
			if !k.directSlots(sel) {
				require.True(t, k.dm.off)
				break
			}
			if k.dm.mapping != mapping {
				mapping = k.dm.mapping
				clear(slotKey)
				clear(keySlot)
			}
			for _, i := range sel {
				kk := key{k.keys[0].expr.ints[i], k.keys[1].expr.ints[i], k.keys[2].expr.ints[i]}
				s := k.dix[i]
				require.True(t, s >= 0 && int(s) < k.dm.slots, "slot %d of %d", s, k.dm.slots)
				if old, ok := slotKey[s]; ok {
					require.Equal(t, old, kk, "slot %d holds one key", s)
				}
				if old, ok := keySlot[kk]; ok {
					require.Equal(t, old, s, "key %v has one slot", kk)
				}
				slotKey[s], keySlot[kk] = kk, s
			}
		}
	}
}

// TestKernelsShareTheirMapping: the kernels of one query (one per worker)
// come to one direct mapping although each saw other keys: a kernel that
// widens takes in the ranges the others learnt, and one whose mapping the
// shared one covers adopts it at its next task; its fragments stay those
// of the probed tables.
func TestKernelsShareTheirMapping(t *testing.T) {
	sc := directSchema(t)
	q := &query.Query{Name: "shared", Schema: sc, Window: query.Sliding(60, 20),
		GroupBy: []query.Expr{query.C("a"), query.C("b")}, Aggregates: []query.Aggregate{{Func: query.Count}, {Func: query.Sum, Arg: query.C("v")}}}
	p, err := Compile(q)
	require.NoError(t, err)
	k1, k2, oracle := p.NewKernel().(*aggregateKernel), p.NewKernel().(*aggregateKernel), p.NewKernel().(*aggregateKernel)
	oracle.dm.off = true
	window.NewAssembler(p.Spec, p.Layout) // the fragments are merged by key: direct tables
	r := rand.New(rand.NewPCG(5, 6))
	now := int64(0)
	shift := func(data []byte, by int32) []byte { // the a keys moved up by by
		for o := 0; o < len(data); o += 40 {
			a := int32(binary.LittleEndian.Uint32(data[o+8:]))
			binary.LittleEndian.PutUint32(data[o+8:], uint32(a+by))
		}
		return data
	}
	var res, want window.TaskResult
	first := uint64(0)
	run := func(k *aggregateKernel, data []byte) {
		res.Reset(p.Layout)
		k.Process(data, first, &res)
		want.Reset(p.Layout)
		oracle.Process(data, first, &want)
		first += uint64(len(data) / 40)
		require.Equal(t, fragRows(&want), fragRows(&res))
	}
	run(k1, directTuples(r, 500, &now, 0)) // a in [0, 10)
	run(k2, shift(directTuples(r, 500, &now, 0), 40))
	require.NotZero(t, k1.dm.mapping)
	require.NotZero(t, k2.dm.mapping)
	assert.NotEqual(t, k1.dm.mapping, k2.dm.mapping, "k2 widened past k1's keys")
	assert.LessOrEqual(t, k2.dm.lo[0], int64(0), "k2's mapping takes in k1's keys")
	run(k1, directTuples(r, 500, &now, 0)) // within k1's own mapping: it adopts the shared one
	assert.Equal(t, k2.dm.mapping, k1.dm.mapping)
	assert.Equal(t, k2.dm.lo, k1.dm.lo)
	assert.Equal(t, k2.dm.n, k1.dm.n)
	for _, f := range res.Frags {
		assert.Equal(t, k2.dm.mapping, f.State.Direct(), "pane %d: a table of the shared mapping", f.Pane)
	}
}
