package engine

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/doubling"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
)

// The schema of random queries: every attribute type.
const randTuple = 48

func randSchema(t testing.TB) *query.Schema {
	s, err := query.NewSchema(randTuple,
		query.Attribute{Name: "ts", Type: query.Int64, Offset: 0},
		query.Attribute{Name: "a", Type: query.Int32, Offset: 8},
		query.Attribute{Name: "b", Type: query.Int32, Offset: 12},
		query.Attribute{Name: "c", Type: query.Int64, Offset: 16},
		query.Attribute{Name: "x", Type: query.Float32, Offset: 24},
		query.Attribute{Name: "y", Type: query.Float64, Offset: 32},
		query.Attribute{Name: "k", Type: query.Bytes, Offset: 40, Size: 8},
	)
	require.NoError(t, err)
	return s
}

func randData(r *rand.Rand, n int) []byte {
	b := make([]byte, n*randTuple)
	ts := r.Int64N(100) - 50
	step, jitter := r.Int64N(5), r.Int64N(30)
	for i := range n {
		t := b[i*randTuple : (i+1)*randTuple]
		ts += r.Int64N(step + 1)
		et := ts - r.Int64N(jitter+1)
		if r.IntN(60) == 0 {
			et -= r.Int64N(500)
		}
		binary.LittleEndian.PutUint64(t[0:], uint64(et))
		binary.LittleEndian.PutUint32(t[8:], uint32(r.Int32N(20)-5))
		binary.LittleEndian.PutUint32(t[12:], uint32(r.Int32N(7)))
		binary.LittleEndian.PutUint64(t[16:], uint64(r.Int64N(1000)-300))
		binary.LittleEndian.PutUint32(t[24:], math.Float32bits(float32(r.IntN(64))/4))
		binary.LittleEndian.PutUint64(t[32:], math.Float64bits(r.Float64()*100-20))
		binary.LittleEndian.PutUint64(t[40:], uint64(r.IntN(5))*0x0101010101)
	}
	return b
}

var intCols, floatCols = []string{"a", "b", "c"}, []string{"x", "y"}

func randNum(r *rand.Rand, depth int) query.Expr {
	switch n := r.IntN(10); {
	case depth > 0 && n < 3:
		ops := []func(l, r query.Expr) query.Expr{query.Add, query.Sub, query.Mul, query.Div}
		return ops[r.IntN(4)](randNum(r, depth-1), randNum(r, depth-1))
	case n < 6:
		return query.C(intCols[r.IntN(len(intCols))])
	case n < 8:
		return query.C(floatCols[r.IntN(len(floatCols))])
	case n < 9:
		return query.Int(r.Int64N(20) - 5)
	default:
		return query.Float(float64(r.IntN(40)) / 4)
	}
}

func randPred(r *rand.Rand, depth int) query.Expr {
	if depth > 0 && r.IntN(3) == 0 {
		terms := []query.Expr{randPred(r, depth-1), randPred(r, depth-1)}
		if r.IntN(3) == 0 {
			terms = append(terms, randPred(r, depth-1))
		}
		if r.IntN(2) == 0 {
			return query.And(terms...)
		}
		return query.Or(terms...)
	}
	return query.Cmp(randNum(r, 1), query.CmpOp(1+r.IntN(6)), randNum(r, 1))
}

// randWindow returns a random window of 1 to maxSize: tumbling or sliding
// (each half the time), a row window one time in four.
func randWindow(r *rand.Rand, maxSize int64) query.Window {
	size := 1 + r.Int64N(maxSize)
	slide := size
	if r.IntN(2) == 0 {
		slide = 1 + r.Int64N(size)
	}
	w := query.Sliding(size, slide)
	if r.IntN(4) == 0 {
		w.Type = query.Rows
	}
	return w
}

func randQuery(r *rand.Rand, s *query.Schema) *query.Query {
	q := &query.Query{Name: "rand", Schema: s}
	if r.IntN(4) > 0 {
		q.Where = randPred(r, 2)
	}
	if r.IntN(4) == 0 {
		for range 1 + r.IntN(3) {
			q.Project = append(q.Project, query.Projection{Expr: randNum(r, 2)})
		}
		if r.IntN(3) == 0 {
			q.Project = nil // SELECT *
		}
		return q
	}
	q.Window = randWindow(r, 200)
	keys := [][]query.Expr{nil, {query.C("a")}, {query.C("a"), query.C("b")}, {query.Div(query.C("c"), query.Int(7))},
		{query.C("k")}, {query.C("b"), query.C("k")}, {query.Add(query.C("a"), query.C("b")), query.C("a")}}
	q.GroupBy = keys[r.IntN(len(keys))]
	funcs := []query.AggFunc{query.Count, query.Sum, query.Avg, query.Min, query.Max}
	for i := range 1 + r.IntN(4) {
		f := funcs[r.IntN(len(funcs))]
		ag := query.Aggregate{Func: f, As: fmt.Sprintf("g%d", i)}
		if f != query.Count {
			// Float sums are compared with a tolerance; keep their
			// arguments small so that the tolerance stays meaningful.
			ag.Arg = randNum(r, 1)
		}
		q.Aggregates = append(q.Aggregates, ag)
	}
	if r.IntN(3) == 0 {
		q.Having = query.Cmp(query.C(q.Aggregates[0].As), query.CmpOp(1+r.IntN(6)), query.Int(r.Int64N(6)))
	}
	return q
}

// collect runs q on the engine and returns its output in the reference's
// form.
func collect(t testing.TB, cfg Config, q *query.Query, data []byte, r *rand.Rand) (*reference.Result, error) {
	res := &reference.Result{}
	e, err := Start(cfg, []Spec{specInto(q, res)})
	if err != nil {
		return nil, err
	}
	for len(data) > 0 {
		n := min(len(data), 1+r.IntN(2*cfg.TaskSize))
		if err := e.Write(data[:n]); err != nil {
			return nil, err
		}
		data = data[n:]
	}
	st, err := e.Close()
	res.Counts = reference.Counts{Tuples: st.Tuples, Filtered: st.Filtered, Unmatched: st.Unmatched, Late: st.Late, Counted: st.Counted}
	return res, err
}

// TestRandomQueriesMatchReference: random queries of every operator, window
// shapes, task sizes and worker counts against the naive reference
// evaluator.
func TestRandomQueriesMatchReference(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	s := randSchema(t)
	n := seeds(30, 30, 150)
	for seed := range n {
		r := rand.New(rand.NewPCG(uint64(seed), 99))
		q := randQuery(r, s)
		require.NoError(t, q.Validate(), "%+v", q)
		data := randData(r, 100+r.IntN(3000))
		cfg := Config{Workers: 1 + r.IntN(3), TaskSize: randTuple * (1 + r.IntN(200)), BufferSize: 1 << 14}
		for cfg.BufferSize < 2*cfg.TaskSize {
			cfg.BufferSize *= 2
		}
		want, err := reference.Evaluate(q, data)
		require.NoError(t, err)
		// Both kernels: the fused one where the query has its shape, and
		// the vectorised one always.
		for _, vec := range []bool{false, true} {
			cfg.Vectorised = vec
			got, err := collect(t, cfg, q, data, r)
			require.NoError(t, err)
			if d := reference.Diff(q, want, got, 1e-9); d != "" {
				t.Errorf("seed %d, vectorised %v, workers %d, task %d, query where=%v window=%+v group=%v aggs=%v having=%v project=%v:\n%s",
					seed, vec, cfg.Workers, cfg.TaskSize, q.Where, q.Window, q.GroupBy, q.Aggregates, q.Having, q.Project, d)
			}
		}
	}
	assertNoLeak(t, base)
}

// TestSeveralQueriesShareWorkers: queries of different shapes run at once on
// one set of workers, each fed by its own producer goroutine, with results
// equal to running each alone.
func TestSeveralQueriesShareWorkers(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	s := randSchema(t)
	r := rand.New(rand.NewPCG(5, 5))
	var qs []*query.Query
	var datas [][]byte
	for len(qs) < 4 {
		q := randQuery(r, s)
		if len(qs) == 0 {
			q.Aggregates, q.GroupBy, q.Having = nil, nil, nil // one stateless query at least
		}
		if q.Validate() != nil {
			continue
		}
		qs = append(qs, q)
		datas = append(datas, randData(r, 2000+r.IntN(2000)))
	}
	results := make([]*reference.Result, len(qs))
	var specs []Spec
	for i, q := range qs {
		results[i] = &reference.Result{}
		specs = append(specs, specInto(q, results[i]))
	}
	e, err := Start(Config{Workers: 3, TaskSize: randTuple * 37, BufferSize: 1 << 13}, specs)
	require.NoError(t, err)
	errs := make(chan error, len(qs))
	for i := range qs {
		go func() { errs <- e.Stream(i).Write(datas[i]) }()
	}
	for range qs {
		require.NoError(t, <-errs)
	}
	stats, err := e.CloseAll()
	require.NoError(t, err)
	for i, q := range qs {
		want, err := reference.Evaluate(q, datas[i])
		require.NoError(t, err)
		st := stats[i]
		results[i].Counts = reference.Counts{Tuples: st.Tuples, Filtered: st.Filtered, Unmatched: st.Unmatched, Late: st.Late, Counted: st.Counted}
		assert.Empty(t, reference.Diff(q, want, results[i], 1e-9), "query %d", i)
	}
	assertNoLeak(t, base)
}

// specInto is the spec of q whose output goes into res, in the reference's
// form: tuples for a stateless query, rows for an aggregation.
func specInto(q *query.Query, res *reference.Result) Spec {
	if q.Stateless() {
		return Spec{Query: q, Tuples: func(b []byte) error { res.Tuples = doubling.Append(res.Tuples, b...); return nil }}
	}
	return Spec{Query: q, Windows: rowsInto(q, res)}
}

// rowsInto is a Sink appending every row to res in the reference's form.
func rowsInto(q *query.Query, res *reference.Result) Sink {
	return func(w *Window) error {
		for i := range w.Rows() {
			row := reference.Row{Start: w.Start, End: w.End, Key: string(w.Key(i))}
			for a := range q.Aggregates {
				if w.AggIsFloat(a) {
					row.Values = append(row.Values, reference.Float(w.AggFloat(i, a)))
				} else {
					row.Values = append(row.Values, reference.Int(w.Agg(i, a)))
				}
			}
			res.Rows = append(res.Rows, row)
		}
		return nil
	}
}
