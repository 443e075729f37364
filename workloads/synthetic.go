package workloads

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/saber-hx/saber-hx/query"
)

// SyntheticTupleSize is the size of a synthetic tuple.
const SyntheticTupleSize = 32

// syntheticSchema: timestamp int64, a1..a6 int32, 32 bytes.
var syntheticSchema = mustSchema(SyntheticTupleSize,
	query.Attribute{Name: "timestamp", Type: query.Int64, Offset: 0},
	query.Attribute{Name: "a1", Type: query.Int32, Offset: 8},
	query.Attribute{Name: "a2", Type: query.Int32, Offset: 12},
	query.Attribute{Name: "a3", Type: query.Int32, Offset: 16},
	query.Attribute{Name: "a4", Type: query.Int32, Offset: 20},
	query.Attribute{Name: "a5", Type: query.Int32, Offset: 24},
	query.Attribute{Name: "a6", Type: query.Int32, Offset: 28},
)

const syntheticRange = 1000 // a1..a6 are in [0, 1000)

var projWorkload = &Workload{
	Name:               "proj",
	Description:        "PROJ_m: stateless projection of m arithmetic expressions of depth d over 32-byte synthetic tuples",
	Schema:             syntheticSchema,
	Options:            []string{"attributes", "expr-depth"},
	DefaultTuplesPerMs: 1000,
	ValidateTuples:     1000000,
}

var selectWorkload = &Workload{
	Name:               "select",
	Description:        "SELECT_n: stateless AND of n predicates passing a fraction s of 32-byte synthetic tuples",
	Schema:             syntheticSchema,
	Options:            []string{"predicates", "selectivity"},
	DefaultTuplesPerMs: 1000,
	ValidateTuples:     1000000,
}

var aggWorkload = &Workload{
	Name:               "agg",
	Description:        "AGG_f: f(a2) over a sliding 1000 ms window, slide 100 ms, no GROUP BY (synthetic)",
	Schema:             syntheticSchema,
	Options:            []string{"agg"},
	Windowed:           true,
	DefaultWindow:      query.Sliding(1000, 100),
	DefaultTuplesPerMs: 1000,
	ValidateTuples:     1000000,
}

var groupbyWorkload = &Workload{
	Name:               "groupby",
	Description:        "GROUP-BY_o: COUNT and SUM(a2) GROUP BY a1 (o distinct keys) over a tumbling 1000 ms window (synthetic)",
	Schema:             syntheticSchema,
	Options:            []string{"groups"},
	Windowed:           true,
	DefaultWindow:      query.Tumbling(1000),
	DefaultTuplesPerMs: 1000,
	ValidateTuples:     1000000,
}

// The functions are set in init: they refer to the workload variables.
func init() {
	projWorkload.Build = buildProj
	projWorkload.NewGenerator = func(p Params) (Generator, error) { return newSynthGen(projWorkload, p, syntheticRange) }
	selectWorkload.Build = buildSelect
	selectWorkload.NewGenerator = func(p Params) (Generator, error) { return newSynthGen(selectWorkload, p, syntheticRange) }
	aggWorkload.Build = buildAgg
	aggWorkload.NewGenerator = func(p Params) (Generator, error) { return newSynthGen(aggWorkload, p, syntheticRange) }
	groupbyWorkload.Build = buildGroupBy
	groupbyWorkload.NewGenerator = newGroupByGen
}

// newGroupByGen: a1 is stratified in [0, Groups) (newSynthGen validates
// Groups through Build before using g).
func newGroupByGen(p Params) (Generator, error) {
	return newSynthGen(groupbyWorkload, p, uint64(p.Groups))
}

func attr(i int) string { return fmt.Sprintf("a%d", i%6+1) }

// ProjExpr is projection i (0-based) of depth d: level 1 is a_i * 3 + 2,
// level l is (level(l-1) - a_j) * 3 + 2 with j cycling through a1..a6.
func projExpr(i, d int) query.Expr {
	e := query.Add(query.Mul(query.C(attr(i)), query.Int(3)), query.Int(2))
	for l := 1; l < d; l++ {
		e = query.Add(query.Mul(query.Sub(e, query.C(attr(i+l))), query.Int(3)), query.Int(2))
	}
	return e
}

func buildProj(p Params) (*query.Query, error) {
	w := projWorkload
	if err := checkRange("attributes", p.Attributes, 1, MaxAttributes); err != nil {
		return nil, fmt.Errorf("proj: %w", err)
	}
	if err := checkRange("expr depth", p.ExprDepth, 1, MaxExprDepth); err != nil {
		return nil, fmt.Errorf("proj: %w", err)
	}
	if _, err := w.rate(p); err != nil {
		return nil, err
	}
	if _, err := w.window(p); err != nil {
		return nil, err
	}
	q := &query.Query{Name: fmt.Sprintf("PROJ_%d", p.Attributes), Schema: w.Schema}
	if p.ExprDepth > 1 {
		q.Name += fmt.Sprintf("_d%d", p.ExprDepth)
	}
	for i := 0; i < p.Attributes; i++ {
		q.Project = append(q.Project, query.Projection{Expr: projExpr(i, p.ExprDepth), As: fmt.Sprintf("p%d", i+1)})
	}
	return finish(w, q)
}

// selectThreshold is T such that a1 < T passes exactly T/1000 of each block.
func selectThreshold(s float64) int64 { return int64(math.Round(s * syntheticRange)) }

// selectPredicates returns the n predicates of SELECT_n: a1 < T first, then
// n-1 predicates that always hold on the generated data (a2..a6 are in
// [0, 1000)), cycling through operators and attributes; t = i/30 makes
// repeated (operator, attribute) pairs differ in their constants.
func selectPredicates(n int, s float64) []query.Expr {
	preds := []query.Expr{query.ColLt("a1", selectThreshold(s))}
	for i := 0; i < n-1; i++ {
		a := query.C(fmt.Sprintf("a%d", i%5+2))
		t := int64(i / 30)
		var e query.Expr
		switch i % 6 {
		case 0:
			e = query.Cmp(a, query.Ge, query.Int(-t))
		case 1:
			e = query.Cmp(a, query.Lt, query.Int(syntheticRange+t))
		case 2:
			e = query.Cmp(a, query.Ne, query.Int(-1-t))
		case 3:
			e = query.Cmp(a, query.Le, query.Int(syntheticRange-1+t))
		case 4:
			e = query.Cmp(a, query.Gt, query.Int(-1-t))
		case 5:
			e = query.Cmp(query.Div(a, query.Int(syntheticRange+t)), query.Eq, query.Int(0))
		}
		preds = append(preds, e)
	}
	return preds
}

func buildSelect(p Params) (*query.Query, error) {
	w := selectWorkload
	if err := checkRange("predicates", p.Predicates, 1, MaxPredicates); err != nil {
		return nil, fmt.Errorf("select: %w", err)
	}
	if !(p.Selectivity >= 0 && p.Selectivity <= 1) {
		return nil, fmt.Errorf("select: selectivity %v: must be in [0, 1]", p.Selectivity)
	}
	if _, err := w.rate(p); err != nil {
		return nil, err
	}
	if _, err := w.window(p); err != nil {
		return nil, err
	}
	preds := selectPredicates(p.Predicates, p.Selectivity)
	q := &query.Query{Name: fmt.Sprintf("SELECT_%d", p.Predicates), Schema: w.Schema, Where: preds[0]}
	if len(preds) > 1 {
		q.Where = query.And(preds...)
	}
	return finish(w, q)
}

func aggNames() string {
	return "count, sum, avg, min, max"
}

func buildAgg(p Params) (*query.Query, error) {
	w := aggWorkload
	if p.Agg < query.Count || p.Agg > query.Max {
		return nil, fmt.Errorf("agg: agg %d: must be one of %s", uint8(p.Agg), aggNames())
	}
	if _, err := w.rate(p); err != nil {
		return nil, err
	}
	win, err := w.window(p)
	if err != nil {
		return nil, err
	}
	name := strings.ToLower(p.Agg.String())
	ag := query.Aggregate{Func: p.Agg, Arg: query.C("a2"), As: name + "_a2"}
	if p.Agg == query.Count {
		ag = query.Aggregate{Func: query.Count, As: "cnt"}
	}
	q := &query.Query{Name: "AGG_" + name, Schema: w.Schema, Window: win, Aggregates: []query.Aggregate{ag}}
	return finish(w, q)
}

func buildGroupBy(p Params) (*query.Query, error) {
	w := groupbyWorkload
	if err := checkRange("groups", p.Groups, 1, MaxGroups); err != nil {
		return nil, fmt.Errorf("groupby: %w", err)
	}
	if _, err := w.rate(p); err != nil {
		return nil, err
	}
	win, err := w.window(p)
	if err != nil {
		return nil, err
	}
	q := &query.Query{
		Name:    fmt.Sprintf("GROUP-BY_%d", p.Groups),
		Schema:  w.Schema,
		Window:  win,
		GroupBy: []query.Expr{query.C("a1")},
		Aggregates: []query.Aggregate{
			{Func: query.Count, As: "cnt"},
			{Func: query.Sum, Arg: query.C("a2"), As: "sum_a2"},
		},
	}
	return finish(w, q)
}

// synthGen generates synthetic tuples: a1 stratified in [0, g), a2..a6
// uniform in [0, 1000) (from two hashes per tuple: a2, a3, a4 are successive
// base-1000 digits of the first, a5, a6 of the second).
type synthGen struct {
	name         string
	rate, period uint64
	key, pkey    uint64
	g            uint64
}

func newSynthGen(w *Workload, p Params, g uint64) (Generator, error) {
	if err := w.check(p); err != nil {
		return nil, err
	}
	rate, err := w.rate(p)
	if err != nil {
		return nil, err
	}
	// The key depends on the seed only, so proj, select and agg generate
	// the same stream for the same seed and rate.
	return &synthGen{
		name:   w.Name,
		rate:   rate,
		period: periodFor(rate, g),
		key:    seedKey(p.Seed, "synthetic"),
		pkey:   seedKey(p.Seed, "synthetic/a1"),
		g:      g,
	}, nil
}

func (g *synthGen) Period() uint64 { return g.period }

func (g *synthGen) Fill(dst []byte, k0 uint64) {
	checkLen(g.name, dst, SyntheticTupleSize)
	c := newCursor(k0, g.rate, g.period, g.key, 2)
	a1 := newStrat(g.g, g.pkey)
	a1.seek(c.j)
	le := binary.LittleEndian
	for off := 0; off+SyntheticTupleSize <= len(dst); off += SyntheticTupleSize {
		t := dst[off : off+SyntheticTupleSize : off+SyntheticTupleSize]
		h1 := mix(c.s + gamma)
		h2 := mix(c.s + gamma2)
		a2, r := digit(h1, syntheticRange)
		a3, r := digit(r, syntheticRange)
		a4, _ := digit(r, syntheticRange)
		a5, r := digit(h2, syntheticRange)
		a6, _ := digit(r, syntheticRange)
		le.PutUint64(t[0:], c.ms)
		le.PutUint32(t[8:], uint32(a1.value))
		le.PutUint32(t[12:], uint32(a2))
		le.PutUint32(t[16:], uint32(a3))
		le.PutUint32(t[20:], uint32(a4))
		le.PutUint32(t[24:], uint32(a5))
		le.PutUint32(t[28:], uint32(a6))
		if c.next() {
			a1.seek(0)
		} else {
			a1.next()
		}
	}
}
