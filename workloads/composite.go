package workloads

import (
	"fmt"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/query"
)

// Part is one operator of a composite workload, which runs several queries
// (the engine's specs, in order): a query or a window join, fed by the
// workload's generated stream (Input; for a join, InputRight feeds its right
// side from a second generator of the same schema with another seed), or by
// earlier parts (Upstream, UpstreamRight: engine.Output(i) is the workload's
// part i; whoever starts the parts after other specs offsets the index).
type Part struct {
	Query                   *query.Query
	Join                    *query.WindowJoin
	Input, InputRight       bool
	Upstream, UpstreamRight engine.Ref
}

// MaxJoinPredicates bounds Params.JoinPredicates.
const MaxJoinPredicates = 64

// JOIN_r: a window theta-join of two synthetic streams with r predicates,
// each comparing a left attribute with a right one. The first, l.a1 < r.a1,
// keeps about half the pairs (a1 is stratified in [0, 1000) on both
// sides); the others alternate l.a_i >= 0 - r.a_i style comparisons that
// always hold on the generated data, so that r sets the work per pair, not
// the output size. Default window: tumbling rows of 128 tuples (each window
// joins 128 x 128 pairs).
var joinWorkload = &Workload{
	Name:               "join",
	Description:        "JOIN_r: window theta-join of two synthetic streams with r predicates (--join-predicates), tumbling row windows of 128 tuples",
	Schema:             syntheticSchema,
	Options:            []string{"join-predicates"},
	Windowed:           true,
	DefaultWindow:      query.Window{Type: query.Rows, Size: 128, Slide: 128},
	DefaultTuplesPerMs: 1000,
	ValidateTuples:     100000,
}

// sg3: smart grid, the plugs whose average load over the last hour is above
// the global average: sg2 (per plug) and sg1 (global) as chained queries,
// joined per window on the local average exceeding the global one.
var sg3Workload = &Workload{
	Name:               "sg3",
	Description:        "smart grid: sg2's per-plug averages joined with sg1's global average where local > global (chained queries + window join)",
	Schema:             smartGridSchema,
	Windowed:           true,
	DefaultWindow:      query.Sliding(3600_000, 1000),
	DefaultTuplesPerMs: 8,
	ValidateTuples:     1000,
}

func init() {
	joinWorkload.NewGenerator = func(p Params) (Generator, error) { return newSynthGen(joinWorkload, p, syntheticRange) }
	joinWorkload.Build = compositeOnly(joinWorkload)
	joinWorkload.Parts = buildJoinParts
	sg3Workload.NewGenerator = func(p Params) (Generator, error) { return newSmartGridGen(sg3Workload, p) }
	sg3Workload.Build = compositeOnly(sg3Workload)
	sg3Workload.Parts = buildSG3Parts
	all = append(all, joinWorkload, sg3Workload)
}

func compositeOnly(w *Workload) func(Params) (*query.Query, error) {
	return func(Params) (*query.Query, error) {
		return nil, fmt.Errorf("%s runs several operators: use Parts", w.Name)
	}
}

func buildJoinParts(p Params) ([]Part, error) {
	w := joinWorkload
	if _, err := w.rate(p); err != nil {
		return nil, err
	}
	if err := checkRange("join predicates", p.JoinPredicates, 1, MaxJoinPredicates); err != nil {
		return nil, fmt.Errorf("%s: %w", w.Name, err)
	}
	win, err := w.window(p)
	if err != nil {
		return nil, err
	}
	terms := []query.Expr{query.Cmp(query.C("l.a1"), query.Lt, query.C("r.a1"))}
	ops := []query.CmpOp{query.Ge, query.Gt}
	for i := 1; i < p.JoinPredicates; i++ {
		// a_i in [0, 1000) on both sides: l.a_i - r.a_i > -1000 always.
		a := attr(1 + i%5)
		terms = append(terms, query.Cmp(query.Sub(query.C("l."+a), query.C("r."+a)), ops[i%2], query.Int(-1000)))
	}
	where := terms[0]
	if len(terms) > 1 {
		where = query.And(terms...)
	}
	j := &query.WindowJoin{Name: "join", Left: syntheticSchema, Right: syntheticSchema, Window: win, Where: where}
	if err := j.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", w.Name, err)
	}
	return []Part{{Join: j, Input: true, InputRight: true}}, nil
}

func buildSG3Parts(p Params) ([]Part, error) {
	w := sg3Workload
	win, err := w.window(p)
	if err != nil {
		return nil, err
	}
	q1, err := buildApp(w, p, &query.Query{Name: "sg1",
		Aggregates: []query.Aggregate{{Func: query.Avg, Arg: query.C("value"), As: "avg_value"}}})
	if err != nil {
		return nil, err
	}
	q2, err := buildApp(w, p, &query.Query{Name: "sg2",
		GroupBy:    []query.Expr{query.C("plug"), query.C("household"), query.C("house")},
		Aggregates: []query.Aggregate{{Func: query.Avg, Arg: query.C("value"), As: "avg_value"}}})
	if err != nil {
		return nil, err
	}
	local, err := q2.OutputSchema()
	if err != nil {
		return nil, err
	}
	global, err := q1.OutputSchema()
	if err != nil {
		return nil, err
	}
	// The aggregations output one row per group per window, stamped with
	// the window's start: a tumbling join window of one slide pairs the
	// rows of the same window.
	j := &query.WindowJoin{Name: "sg3", Left: local, Right: global, Window: query.Tumbling(win.Slide),
		Where: query.Cmp(query.C("l.avg_value"), query.Gt, query.C("r.avg_value"))}
	if err := j.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", w.Name, err)
	}
	return []Part{
		{Query: q2, Input: true},
		{Query: q1, Input: true},
		{Join: j, Upstream: engine.Output(0), UpstreamRight: engine.Output(1)}, // sg2, sg1
	}, nil
}

// check refuses the parameters that Build (or Parts) refuses.
func (w *Workload) check(p Params) error {
	if w.Parts != nil {
		_, err := w.Parts(p)
		return err
	}
	_, err := w.Build(p)
	return err
}
