package sql

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/internal/testenv"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
)

// baseTuples generates n tuples of base's source s: event times mostly
// increasing (some out of order, some late), a in [0, 10), b, f and d
// small, u one of 8 ids (the first 6 are in table t), k a label code.
func baseTuples(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([]byte, 52*n)
	le := binary.LittleEndian
	ts := int64(1000)
	for i := range n {
		t := out[52*i : 52*i+52]
		ts += int64(r.IntN(20))
		et := ts
		if r.IntN(50) == 0 {
			et -= int64(r.IntN(3000)) // out of order, sometimes late
		}
		le.PutUint64(t[0:], uint64(et))
		le.PutUint32(t[8:], uint32(r.IntN(10)))
		le.PutUint64(t[12:], uint64(r.IntN(1000)-500))
		le.PutUint32(t[20:], math.Float32bits(float32(r.IntN(100))/4))
		le.PutUint64(t[24:], math.Float64bits(float64(r.IntN(1000))/8-10))
		t[32] = byte(r.IntN(8))
		le.PutUint32(t[48:], uint32(r.IntN(3)))
	}
	return out
}

// TestProgramMatchesReference runs a program of every kind of query
// (chained views, HAVING, static joins, semi-joins with a table, a window
// join, a sink) through
// the engine and checks each query's output against the reference
// evaluator over that query's own input.
func TestProgramMatchesReference(t *testing.T) {
	p := mustCompile(t, base+`
		CREATE VIEW hot AS SELECT a * 2 AS a2, k, d FROM s WHERE k = 'click' OR NOT a <= 5;
		CREATE VIEW per_k AS
			SELECT window_start AS ws, k, SUM(a2) AS total, AVG(d) AS mean
			FROM TUMBLE(hot, ts, INTERVAL '1' SECOND)
			GROUP BY k HAVING COUNT(*) > 1;
		CREATE SINK big AS SELECT ws, total, mean / 2 AS half FROM per_k WHERE total > 10
			WITH (connector = 'stdout', format = 'json');
		SELECT v, COUNT(*) AS n, MAX(b) AS top, MIN(f)
			FROM HOP(s, ts, INTERVAL '500' MILLISECONDS, INTERVAL '1' SECOND) JOIN t ON s.u = t.u
			WHERE NOT (k = 'view') GROUP BY v;
		SELECT * FROM s [ROWS 16 SLIDE 8] AS x JOIN s [ROWS 16 SLIDE 8] AS y ON x.a < y.a AND x.k = y.k;
		SELECT a, b - 1 AS b1, COUNT(*) AS n FROM s [RANGE INTERVAL '2' SECOND SLIDE INTERVAL '1' SECOND]
			GROUP BY a, b - 1 HAVING n >= 2 AND a <> 3;
		SELECT COUNT(*) AS n FROM s [ROWS 64] JOIN t ON s.u = t.u;
		SELECT a, SUM(b) AS total FROM s [RANGE INTERVAL '1' SECOND] AS e JOIN t ON e.u = t.u GROUP BY a;`)
	require.Len(t, p.Queries, 8)
	tab := p.Table("t")
	var rows [][]byte
	for i := range 6 {
		row := make([]byte, 32)
		row[0], row[16] = byte(i), byte(100+i%3)
		rows = append(rows, row)
	}
	require.NoError(t, tab.SetRows(rows))

	// 10,000 tuples are 95 s of event time: 95 of the 1 s windows,
	// hundreds of out-of-order tuples, late ones and unmatched ones (the
	// asserts below); CI runs 20,000. The reference's window join and the
	// engine's [RANGE 2 s SLIDE 1 s] grouping cost in proportion.
	data := baseTuples(testenv.Scale(10_000, 20_000), 7)
	feeds := make([]feed, len(p.Queries))
	for i, q := range p.Queries {
		if q.Input == "s" {
			feeds[i].left = data
		}
		if q.InputRight == "s" {
			feeds[i].right = data
		}
	}
	outs := runEngineTasks(t, p.Specs(), feeds, 52*256)
	inputOf := func(from string) []byte {
		if from == "" {
			return data
		}
		for i, q := range p.Queries {
			if q.Name == from {
				return outs[i].Tuples
			}
		}
		t.Fatalf("no query %s", from)
		return nil
	}
	for i, q := range p.Queries {
		got := outs[i]
		c := got.Counts
		counts := reference.Counts{Tuples: c[0], Filtered: c[1], Unmatched: c[2], Late: c[3], Counted: c[4]}
		if j := q.Spec.Join; j != nil {
			want, err := reference.EvaluateJoin(j, inputOf(q.From), inputOf(q.FromRight))
			require.NoError(t, err)
			require.NotEmpty(t, want.Tuples, q.Name)
			assert.Equal(t, want.Tuples, got.Tuples, q.Name)
			assert.Equal(t, want.Counts.Tuples, counts.Tuples, q.Name)
			assert.Equal(t, want.Counts.Late, counts.Late, q.Name)
			continue
		}
		mq := q.Spec.Query
		want, err := reference.Evaluate(mq, inputOf(q.From))
		require.NoError(t, err)
		require.False(t, len(want.Rows) == 0 && len(want.Tuples) == 0, "%s has no output", q.Name)
		res := &reference.Result{Rows: got.Rows, Counts: counts}
		if mq.Stateless() {
			res.Tuples = got.Tuples
		}
		assert.Empty(t, reference.Diff(mq, want, res, 1e-9), q.Name)
	}
	assert.Positive(t, outs[3].Counts[2], "the static join's unmatched tuples")
	assert.Positive(t, outs[3].Counts[3], "late tuples")
}

// TestMixedWithGoQuery: a Go-built query reads a SQL view (Program.Output and the
// view's Output schema), in one engine with the SQL program.
func TestMixedWithGoQuery(t *testing.T) {
	p := mustCompile(t, base+"CREATE VIEW hot AS SELECT a * 2 AS a2, d FROM s WHERE k = 'click'")
	hot := p.Query("hot")
	goQ := &query.Query{Name: "go_sum", Schema: hot.Output, Window: query.Tumbling(1000),
		Aggregates: []query.Aggregate{{Func: query.Sum, Arg: query.C("a2"), As: "total"}}}
	require.NoError(t, goQ.Validate())
	hotOut, err := p.Output("hot")
	require.NoError(t, err)
	specs := append(p.Specs(), engine.Spec{Query: goQ, Upstream: hotOut})
	_, err = p.Output("nope")
	assert.ErrorContains(t, err, `no query or view "nope"`)
	data := baseTuples(5000, 3)
	outs := runEngineTasks(t, specs, []feed{{left: data}, {}}, 52*256)
	want, err := reference.Evaluate(goQ, outs[0].Tuples)
	require.NoError(t, err)
	require.NotEmpty(t, want.Rows)
	assert.Empty(t, reference.Diff(goQ, want, &reference.Result{Rows: outs[1].Rows, Counts: want.Counts}, 0))
}
