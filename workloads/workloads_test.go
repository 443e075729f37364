package workloads

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/internal/testenv"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
)

// --- expressions, evaluated by the reference evaluator ---------------------

// num is the value of the numeric expression e over tuple tup.
func num(e query.Expr, s *query.Schema, tup []byte) reference.Value {
	v, err := reference.EvalNum(e, s, tup)
	if err != nil {
		panic(err)
	}
	return v
}

// holds reports whether the predicate e holds on tuple tup.
func holds(e query.Expr, s *query.Schema, tup []byte) bool {
	ok, err := reference.EvalPred(e, s, tup)
	if err != nil {
		panic(err)
	}
	return ok
}

// column is the value of column name of tuple tup.
func column(s *query.Schema, tup []byte, name string) reference.Value {
	return num(query.C(name), s, tup)
}

// attrValue is the value of a (an integer or float32 column) in tup, as
// the reference evaluator reads it (asFloat(column(...))); false for other
// types.
func attrValue(a query.Attribute, tup []byte) (float64, bool) {
	switch a.Type {
	case query.Int32:
		return float64(int32(binary.LittleEndian.Uint32(tup[a.Offset:]))), true
	case query.Int64:
		return float64(int64(binary.LittleEndian.Uint64(tup[a.Offset:]))), true
	case query.Float32:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(tup[a.Offset:]))), true
	}
	return 0, false
}

// asFloat is v as a float64, converting an integer.
func asFloat(v reference.Value) float64 {
	if v.Float {
		return v.F
	}
	return float64(v.I)
}

// --- helpers ----------------------------------------------------------------

func generate(t testing.TB, w *Workload, p Params, k0 uint64, n int) ([]byte, Generator) {
	t.Helper()
	g, err := w.NewGenerator(p)
	require.NoError(t, err)
	buf := make([]byte, n*w.Schema.TupleSize)
	g.Fill(buf, k0)
	return buf, g
}

func rateOf(w *Workload, p Params) uint64 {
	if p.TuplesPerMs == 0 {
		return uint64(w.DefaultTuplesPerMs)
	}
	return uint64(p.TuplesPerMs)
}

func lookup(t *testing.T, name string) *Workload {
	w, err := Lookup(name)
	require.NoError(t, err)
	return w
}

// --- tests ------------------------------------------------------------------

func TestAllAndLookup(t *testing.T) {
	want := []string{"proj", "select", "agg", "groupby", "cm1", "cm2", "sg1", "sg2", "lrb1", "join", "sg3", "ysb"}
	assert.Equal(t, want, Names())
	for i, w := range All() {
		assert.Equal(t, want[i], w.Name)
		assert.NotEmpty(t, w.Description)
		assert.NotContains(t, w.Description, "\n")
		assert.NotNil(t, w.Schema)
		assert.Positive(t, w.DefaultTuplesPerMs)
		assert.Equal(t, w.Windowed, w.DefaultWindow != query.Window{}, w.Name)
		got, err := Lookup(strings.ToUpper(w.Name))
		require.NoError(t, err)
		assert.Same(t, w, got)
	}
	_, err := Lookup("nope")
	require.Error(t, err)
	for _, n := range want {
		assert.Contains(t, err.Error(), n)
	}
	// All returns a copy of the list.
	a := All()
	a[0] = nil
	assert.NotNil(t, All()[0])
}

func TestBuildDefaults(t *testing.T) {
	for _, w := range All() {
		if w.Parts != nil {
			continue // TestCompositeParts
		}
		t.Run(w.Name, func(t *testing.T) {
			q, err := w.Build(DefaultParams())
			require.NoError(t, err)
			require.NoError(t, q.Validate())
			assert.Same(t, w.Schema, q.Schema)
			assert.Equal(t, !w.Windowed, q.Stateless())
			if w.Windowed {
				assert.Equal(t, w.DefaultWindow, q.Window)
			}
			for _, a := range q.Aggregates {
				assert.NotEmpty(t, a.As, "aggregates are named")
			}
			_, err = w.NewGenerator(DefaultParams())
			require.NoError(t, err)
		})
	}
}

func TestQueries(t *testing.T) {
	p := DefaultParams()
	q, err := lookup(t, "proj").Build(p)
	require.NoError(t, err)
	require.Len(t, q.Project, 4)
	assert.Equal(t, "p1", q.Project[0].As)
	assert.Equal(t, "((a1 * 3) + 2)", q.Project[0].Expr.String())
	p.Attributes, p.ExprDepth = 10, 3
	q, err = lookup(t, "proj").Build(p)
	require.NoError(t, err)
	require.Len(t, q.Project, 10)
	assert.Equal(t, "p10", q.Project[9].As)
	for _, pr := range q.Project {
		assert.Equal(t, 3, strings.Count(pr.Expr.String(), "* 3"), pr.Expr.String())
	}

	q, err = lookup(t, "select").Build(DefaultParams())
	require.NoError(t, err)
	and, ok := q.Where.(query.AndExpr)
	require.True(t, ok)
	require.Len(t, and.Terms, 16)
	assert.Equal(t, "a1 < 500", and.Terms[0].String())
	ops := map[query.CmpOp]bool{}
	for _, x := range and.Terms {
		ops[x.(query.Compare).Op] = true
	}
	assert.Len(t, ops, 6, "all six comparison operators")
	p = DefaultParams()
	p.Predicates = 1
	q, err = lookup(t, "select").Build(p)
	require.NoError(t, err)
	assert.Equal(t, "a1 < 500", q.Where.String())

	for name, f := range query.AggFuncs {
		p := DefaultParams()
		p.Agg = f
		q, err := lookup(t, "agg").Build(p)
		require.NoError(t, err, name)
		require.Len(t, q.Aggregates, 1)
		assert.Equal(t, f, q.Aggregates[0].Func)
		assert.Equal(t, "AGG_"+name, q.Name)
	}

	q, err = lookup(t, "lrb1").Build(DefaultParams())
	require.NoError(t, err)
	assert.Equal(t, "avg_speed < 40", q.Having.String())
	assert.Len(t, q.GroupBy, 3)
	assert.Equal(t, query.Sliding(300000, 1000), q.Window)

	q, err = lookup(t, "cm2").Build(DefaultParams())
	require.NoError(t, err)
	assert.Equal(t, "eventType = 1", q.Where.String())
	assert.Equal(t, query.Sliding(60000, 1000), q.Window)
	q, err = lookup(t, "sg2").Build(DefaultParams())
	require.NoError(t, err)
	assert.Len(t, q.GroupBy, 3)
	assert.Equal(t, query.Sliding(3600000, 1000), q.Window)
}

func TestParamErrors(t *testing.T) {
	cases := []struct {
		workload string
		edit     func(*Params)
		want     []string
	}{
		{"select", func(p *Params) { p.Selectivity = 1.5 }, []string{"selectivity 1.5", "[0, 1]"}},
		{"select", func(p *Params) { p.Selectivity = -0.1 }, []string{"selectivity -0.1", "[0, 1]"}},
		{"select", func(p *Params) { p.Selectivity = math.NaN() }, []string{"selectivity NaN"}},
		{"select", func(p *Params) { p.Predicates = 0 }, []string{"predicates 0", "[1, 256]"}},
		{"select", func(p *Params) { p.Predicates = 257 }, []string{"predicates 257"}},
		{"proj", func(p *Params) { p.Attributes = 0 }, []string{"attributes 0", "[1, 64]"}},
		{"proj", func(p *Params) { p.ExprDepth = 0 }, []string{"expr depth 0", "[1, 16]"}},
		{"groupby", func(p *Params) { p.Groups = 0 }, []string{"groups 0", "[1, 16777216]"}},
		{"groupby", func(p *Params) { p.Groups = MaxGroups + 1 }, []string{"groups 16777217"}},
		{"agg", func(p *Params) { p.Agg = 0 }, []string{"agg 0", "count, sum, avg, min, max"}},
		{"agg", func(p *Params) { p.Window = query.Sliding(10, 20) }, []string{"slide 20 larger than size 10"}},
		{"cm1", func(p *Params) { p.TuplesPerMs = -1 }, []string{"tuples per ms -1"}},
		{"proj", func(p *Params) { p.Window = query.Tumbling(10) }, []string{"stateless", "no window"}},
	}
	for _, c := range cases {
		p := DefaultParams()
		c.edit(&p)
		w := lookup(t, c.workload)
		_, err := w.Build(p)
		require.Error(t, err, c.want[0])
		_, gerr := w.NewGenerator(p)
		require.Error(t, gerr, c.want[0])
		for _, s := range c.want {
			assert.Contains(t, err.Error(), s)
			assert.Contains(t, gerr.Error(), s)
		}
		assert.True(t, strings.HasPrefix(err.Error(), c.workload+": "), err.Error())
	}
	// Parameters a workload does not use are ignored.
	p := DefaultParams()
	p.Selectivity, p.Groups, p.Attributes = 7, 0, 0
	_, err := lookup(t, "cm1").Build(p)
	require.NoError(t, err)
}

func TestWindowOverride(t *testing.T) {
	for _, w := range All() {
		if !w.Windowed || w.Parts != nil {
			continue
		}
		p := DefaultParams()
		p.Window = query.Window{Type: query.Rows, Size: 5000, Slide: 250}
		q, err := w.Build(p)
		require.NoError(t, err, w.Name)
		assert.Equal(t, p.Window, q.Window)
		p.Window = query.Tumbling(777)
		q, err = w.Build(p)
		require.NoError(t, err, w.Name)
		assert.Equal(t, p.Window, q.Window)
	}
}

// variants are the parameter sets each generator is tested with.
func variants(w *Workload) []Params {
	d := DefaultParams()
	a := DefaultParams()
	a.TuplesPerMs, a.Seed = 7, 3
	b := DefaultParams()
	b.TuplesPerMs, b.Seed = 1, 99
	vs := []Params{d, a, b}
	if w.Name == "groupby" {
		for _, g := range []int{1, 3, 1000, 77777, MaxGroups} {
			p := DefaultParams()
			p.Groups = g
			vs = append(vs, p)
		}
	}
	return vs
}

func TestGenerators(t *testing.T) {
	for _, w := range All() {
		for vi, p := range variants(w) {
			t.Run(fmt.Sprintf("%s/%d", w.Name, vi), func(t *testing.T) {
				g, err := w.NewGenerator(p)
				require.NoError(t, err)
				rate := rateOf(w, p)
				size := w.Schema.TupleSize
				period := g.Period()
				if period > 0 {
					assert.Zero(t, period%rate, "period %d is a multiple of the rate %d", period, rate)
				}
				starts := []uint64{0, 12345, 1<<40 + 3}
				if period > 100 {
					starts = append(starts, period-100, 5*period-1)
				}
				const n = 3000
				for _, k0 := range starts {
					whole := make([]byte, n*size)
					g.Fill(whole, k0)

					// Deterministic, also from a fresh generator.
					again, _ := generate(t, w, p, k0, n)
					require.Equal(t, whole, again, "k0 %d", k0)

					// A range equals the concatenation of its parts.
					var parts []byte
					for i, cut := 0, []int{0, 1, 2, 17, 500, 501, 1999, n}; i+1 < len(cut); i++ {
						part := make([]byte, (cut[i+1]-cut[i])*size)
						g.Fill(part, k0+uint64(cut[i]))
						parts = append(parts, part...)
					}
					require.Equal(t, whole, parts, "k0 %d", k0)

					// Event times are k / rate and never decrease. (testify
					// only where a tuple is wrong: its calls, a stack walk
					// each, were most of the test's time.)
					prev := int64(math.MinInt64)
					for i := 0; i < n; i++ {
						ts := int64(binary.LittleEndian.Uint64(whole[i*size:]))
						if want := int64((k0 + uint64(i)) / rate); ts != want || ts < prev {
							require.Equal(t, want, ts, "tuple %d", k0+uint64(i))
							require.GreaterOrEqual(t, ts, prev)
						}
						prev = ts
					}

					// The attributes repeat every period.
					if period > 0 {
						shifted := make([]byte, n*size)
						g.Fill(shifted, k0+period)
						for i := 0; i < n; i++ {
							a, b := whole[i*size:(i+1)*size], shifted[i*size:(i+1)*size]
							ta, tb := binary.LittleEndian.Uint64(a), binary.LittleEndian.Uint64(b)
							if !bytes.Equal(a[8:], b[8:]) || tb-ta != period/rate {
								require.Equal(t, a[8:], b[8:], "tuple %d and %d", k0+uint64(i), k0+uint64(i)+period)
								require.Equal(t, period/rate, tb-ta)
							}
						}
					}
				}
				// Different seeds give different streams.
				q := p
				q.Seed++
				other, _ := generate(t, w, q, 0, n)
				mine, _ := generate(t, w, p, 0, n)
				assert.False(t, bytes.Equal(other, mine))
			})
		}
	}
}

func TestFillPanicsOnPartialTuple(t *testing.T) {
	for _, w := range All() {
		g, err := w.NewGenerator(DefaultParams())
		require.NoError(t, err)
		assert.Panics(t, func() { g.Fill(make([]byte, w.Schema.TupleSize+1), 0) }, w.Name)
		assert.NotPanics(t, func() { g.Fill(nil, 0) }, w.Name)
	}
}

func TestPeriods(t *testing.T) {
	g, err := lookup(t, "select").NewGenerator(DefaultParams())
	require.NoError(t, err)
	assert.Equal(t, uint64(66000), g.Period())
	p := DefaultParams()
	p.Groups = MaxGroups
	g, err = lookup(t, "groupby").NewGenerator(p)
	require.NoError(t, err)
	assert.Zero(t, g.Period(), "lcm(1000, 2^24) is above the largest period")
	g, err = lookup(t, "sg1").NewGenerator(DefaultParams())
	require.NoError(t, err)
	assert.Equal(t, uint64(72000), g.Period())
	assert.Equal(t, uint64(1<<16), periodFor(1<<16))
	assert.Equal(t, uint64(65537), periodFor(65537))
}

func TestSelectivity(t *testing.T) {
	w := lookup(t, "select")
	// 100 blocks of 1000 tuples in the long run, 20 by default.
	n := testenv.Scale(20000, 100000)
	for _, s := range []float64{0, 0.1, 0.5, 1, 0.123} {
		for _, preds := range []int{1, 16, 61} {
			for _, k0 := range []uint64{0, 777} {
				if k0 != 0 && preds != 16 {
					continue
				}
				p := DefaultParams()
				p.Selectivity, p.Predicates = s, preds
				q, err := w.Build(p)
				require.NoError(t, err)
				n := n
				if k0 == 0 && !testenv.Full() {
					n = 5000 // whole blocks: exact with few of them
				}
				buf, _ := generate(t, w, p, k0, n)
				pass := 0
				for i := 0; i < n; i++ {
					tup := buf[i*SyntheticTupleSize : (i+1)*SyntheticTupleSize]
					if holds(q.Where, w.Schema, tup) {
						pass++
					}
				}
				got := float64(pass) / float64(n)
				assert.InDelta(t, s, got, 0.01, "s %v, %d predicates, k0 %d", s, preds, k0)
				if k0 == 0 {
					// Whole blocks of 1000: exact.
					assert.Equal(t, int(math.Round(s*1000))*(n/1000), pass)
				}
				if s == 1 {
					assert.Equal(t, n, pass, "the other predicates always hold")
				}
			}
		}
	}
}

func TestGroupByGroups(t *testing.T) {
	w := lookup(t, "groupby")
	for _, groups := range []int{1, 2, 64, 1000, 4096, 77777} {
		p := DefaultParams()
		p.Groups = groups
		n := max(100000, 2*groups)
		buf, _ := generate(t, w, p, 5, n)
		seen := map[int32]bool{}
		for i := 0; i < n; i++ {
			a1 := int32(binary.LittleEndian.Uint32(buf[i*SyntheticTupleSize+8:]))
			require.True(t, a1 >= 0 && int(a1) < groups, "a1 %d", a1)
			seen[a1] = true
		}
		assert.Len(t, seen, groups)
		// Exactly once per aligned block.
		buf, _ = generate(t, w, p, uint64(groups)*3, groups)
		clear(seen)
		for i := 0; i < groups; i++ {
			seen[int32(binary.LittleEndian.Uint32(buf[i*SyntheticTupleSize+8:]))] = true
		}
		assert.Len(t, seen, groups)
	}
}

// TestRanges checks every generated attribute against its documented range.
func TestRanges(t *testing.T) {
	type rng struct{ lo, hi float64 } // [lo, hi)
	in := func(lo, hi float64) rng { return rng{lo, hi} }
	synth := map[string]rng{"a1": in(0, 1000), "a2": in(0, 1000), "a3": in(0, 1000), "a4": in(0, 1000), "a5": in(0, 1000), "a6": in(0, 1000)}
	sg := map[string]rng{"value": in(0.75, 300), "property": in(1, 2), "plug": in(0, 10), "household": in(0, 20), "house": in(0, 40)}
	ranges := map[string]map[string]rng{
		"proj": synth, "select": synth, "agg": synth, "groupby": {"a1": in(0, 64), "a2": in(0, 1000)},
		"cm1": {
			"jobId": in(6e9, 6e9+1000), "taskId": in(0, 1000), "machineId": in(0, 12500), "userId": in(0, 100),
			"eventType": in(0, 9), "category": in(0, 4), "priority": in(0, 12), "cpu": in(0, 1), "ram": in(0, 1),
			"disk": in(0, 1), "constraints": in(0, 2),
		},
		"sg1": sg, "sg2": sg, "sg3": sg,
		"lrb1": {
			"vehicle": in(0, 100000), "speed": in(0, 100), "highway": in(0, 10), "lane": in(0, 5),
			"direction": in(0, 2), "position": in(0, 528000),
		},
	}
	ranges["cm2"] = ranges["cm1"]
	ranges["join"] = ranges["proj"]
	ranges["ysb"] = map[string]rng{"event_type": in(0, 3), "ad_type": in(0, 5)}
	for _, w := range All() {
		want := ranges[w.Name]
		require.NotNil(t, want, w.Name)
		const n = 50000
		buf, _ := generate(t, w, DefaultParams(), 0, n)
		size := w.Schema.TupleSize
		for name, r := range want {
			a, err := w.Schema.Lookup(name)
			require.NoError(t, err)
			lo, hi := math.Inf(1), math.Inf(-1)
			distinct := map[float64]bool{}
			for i := 0; i < n; i++ {
				// Read in place (the reference evaluator, per tuple and
				// column, was most of the test's time); every 64th tuple,
				// and a type attrValue does not read, by the reference.
				tup := buf[i*size : (i+1)*size]
				v, ok := attrValue(a, tup)
				if !ok || i%64 == 0 {
					rv := asFloat(column(w.Schema, tup, name))
					if ok && rv != v {
						require.Failf(t, "read in place", "%s.%s of tuple %d: %v, the reference reads %v", w.Name, name, i, v, rv)
					}
					v = rv
				}
				lo, hi = min(lo, v), max(hi, v)
				if len(distinct) < 2 {
					distinct[v] = true
				}
			}
			assert.GreaterOrEqual(t, lo, r.lo, "%s.%s", w.Name, name)
			assert.Less(t, hi, r.hi, "%s.%s", w.Name, name)
			if r.hi-r.lo > 1 {
				assert.Len(t, distinct, 2, "%s.%s varies", w.Name, name)
			}
		}
	}
}

func TestClusterDistribution(t *testing.T) {
	w := lookup(t, "cm2")
	q, err := w.Build(DefaultParams())
	require.NoError(t, err)
	const n = 180000
	buf, _ := generate(t, w, DefaultParams(), 0, n)
	pass := 0
	jobs := map[int64]int{}
	users := map[int64]int64{}
	for i := 0; i < n; i++ {
		tup := buf[i*ClusterTupleSize : (i+1)*ClusterTupleSize]
		if holds(q.Where, w.Schema, tup) {
			pass++
		}
		j := column(w.Schema, tup, "jobId").I
		jobs[j]++
		u := column(w.Schema, tup, "userId").I
		if prev, ok := users[j]; ok {
			require.Equal(t, prev, u, "a job belongs to one user")
		}
		users[j] = u
	}
	assert.InDelta(t, 1.0/9, float64(pass)/n, 0.005, "eventType = 1 passes 1/9")
	assert.Len(t, jobs, cmJobs)
	top := 0
	for _, c := range jobs {
		top = max(top, c)
	}
	// Zipf s=1 over 1000: the top job has 1/H(1000) ~ 13.4%.
	assert.InDelta(t, 0.134, float64(top)/n, 0.01)
}

func TestSmartGridPlugs(t *testing.T) {
	w := lookup(t, "sg2")
	buf, _ := generate(t, w, DefaultParams(), 8000*5, 8000)
	seen := map[[3]int64]bool{}
	for i := 0; i < 8000; i++ {
		tup := buf[i*SmartGridTupleSize : (i+1)*SmartGridTupleSize]
		k := [3]int64{column(w.Schema, tup, "plug").I, column(w.Schema, tup, "household").I, column(w.Schema, tup, "house").I}
		seen[k] = true
		assert.Zero(t, binary.LittleEndian.Uint32(tup[28:]), "padding")
	}
	assert.Len(t, seen, sgPlugs, "every plug reports once per block of 8000")
}

func TestLinearRoadHaving(t *testing.T) {
	w := lookup(t, "lrb1")
	p := DefaultParams()
	q, err := w.Build(p)
	require.NoError(t, err)
	type key struct{ hw, dir, seg int64 }
	type acc struct {
		sum float64
		n   int
	}
	groups := map[key]*acc{}
	// The window [600 s, 900 s): 300 s of tuples, generated in chunks.
	rate := rateOf(w, p)
	k0, k1 := 600000*rate, 900000*rate
	const chunk = 1 << 16
	g, err := w.NewGenerator(p)
	require.NoError(t, err)
	// The columns read in place: the reference evaluator, per tuple, was
	// nine tenths of the test's time. Every 64th tuple's key and speed are
	// checked against the query's GROUP BY and the reference's reading.
	attr := func(name string) query.Attribute {
		a, err := w.Schema.Lookup(name)
		require.NoError(t, err)
		return a
	}
	hw, dir, pos, speed := attr("highway"), attr("direction"), attr("position"), attr("speed")
	require.Equal(t, query.Float32, speed.Type)
	for _, a := range []query.Attribute{hw, dir, pos} {
		require.Equal(t, query.Int32, a.Type, a.Name)
	}
	i32 := func(tup []byte, a query.Attribute) int64 {
		return int64(int32(binary.LittleEndian.Uint32(tup[a.Offset:])))
	}
	buf := make([]byte, chunk*LinearRoadTupleSize)
	for k := k0; k < k1; k += chunk {
		m := min(uint64(chunk), k1-k)
		b := buf[:m*LinearRoadTupleSize]
		g.Fill(b, k)
		for i := 0; i < int(m); i++ {
			tup := b[i*LinearRoadTupleSize : (i+1)*LinearRoadTupleSize]
			kk := key{i32(tup, hw), i32(tup, dir), i32(tup, pos) / lrSegmentFeet}
			v := float64(math.Float32frombits(binary.LittleEndian.Uint32(tup[speed.Offset:])))
			if i%64 == 0 {
				ref := key{num(q.GroupBy[0], w.Schema, tup).I, num(q.GroupBy[1], w.Schema, tup).I, num(q.GroupBy[2], w.Schema, tup).I}
				if rv := column(w.Schema, tup, "speed").F; ref != kk || rv != v {
					require.Equal(t, [2]any{ref, rv}, [2]any{kk, v}, "tuple %d: the query's GROUP BY and the speed", k+uint64(i))
				}
			}
			a := groups[kk]
			if a == nil {
				a = &acc{}
				groups[kk] = a
			}
			a.sum += v
			a.n++
		}
	}
	assert.Len(t, groups, lrSegmentGroups)
	kept, dropped := 0, 0
	lg := g.(*linearRoadGen)
	for k, a := range groups {
		avg := a.sum / float64(a.n)
		if avg < lrHavingSpeed {
			kept++
			assert.True(t, lg.isCongested(int(k.hw), int(k.dir), int(k.seg)))
		} else {
			dropped++
		}
	}
	t.Logf("HAVING avg_speed < 40 keeps %d groups and drops %d", kept, dropped)
	assert.Positive(t, kept)
	assert.Positive(t, dropped)
}

func BenchmarkFill(b *testing.B) {
	for _, w := range All() {
		b.Run(w.Name, func(b *testing.B) {
			g, err := w.NewGenerator(DefaultParams())
			require.NoError(b, err)
			buf := make([]byte, 4096*w.Schema.TupleSize)
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			k := uint64(0)
			for b.Loop() {
				g.Fill(buf, k)
				k += 4096
			}
			b.ReportMetric(float64(k)/b.Elapsed().Seconds()/1e6, "Mtuples/s")
		})
	}
}

func TestCompositeParts(t *testing.T) {
	parts, err := lookup(t, "join").Parts(DefaultParams())
	require.NoError(t, err)
	require.Len(t, parts, 1)
	j := parts[0].Join
	require.NotNil(t, j)
	assert.True(t, parts[0].Input && parts[0].InputRight)
	assert.Equal(t, query.Window{Type: query.Rows, Size: 128, Slide: 128}, j.Window)
	p := DefaultParams()
	p.JoinPredicates = 5
	parts, err = lookup(t, "join").Parts(p)
	require.NoError(t, err)
	assert.Len(t, parts[0].Join.Where.(query.AndExpr).Terms, 5)
	p.JoinPredicates = 0
	_, err = lookup(t, "join").Parts(p)
	assert.ErrorContains(t, err, "join predicates 0")
	_, err = lookup(t, "join").Build(DefaultParams())
	assert.ErrorContains(t, err, "use Parts")

	parts, err = lookup(t, "sg3").Parts(DefaultParams())
	require.NoError(t, err)
	require.Len(t, parts, 3)
	assert.Equal(t, "sg2", parts[0].Query.Name)
	assert.Equal(t, "sg1", parts[1].Query.Name)
	assert.Equal(t, engine.Output(0), parts[2].Upstream)
	assert.Equal(t, engine.Output(1), parts[2].UpstreamRight)
	assert.Equal(t, query.Tumbling(1000), parts[2].Join.Window)
}
