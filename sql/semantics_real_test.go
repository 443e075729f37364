package sql

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
)

// A REAL (FLOAT) value is a float32's: where an expression passes it on
// as it is (a column, MIN or MAX of one, CAST AS REAL, a REAL sink
// column) the output attribute says so (Logical Real: the sinks print it
// as the float32 it is, 0.1, as Flink does, not its float64 digits
// 0.10000000149011612), and its text (CAST AS VARCHAR, ||) is the
// float32's.

const realSource = `CREATE SOURCE e (ts TIMESTAMP(3) NOT NULL, f REAL, d DOUBLE, s VARCHAR) WITH (connector = 'stdin', format = 'json');
`

var realRows = [][]any{
	{0.1, 0.1, "0.1"},
	{nil, 1.0 / 3, " 2.5 "},
	{-1.5e-7, 1e300, "x"},
	{3.4e38, nil, nil},
}

// realAttrs lists which of q's output attributes (after the event time)
// are REAL.
func realAttrs(q *Query) []bool {
	var r []bool
	for _, a := range q.Output.Attrs[1:] {
		r = append(r, a.IsReal())
	}
	return r
}

func TestRealProjection(t *testing.T) {
	p, out := semRun(t, realSource+`SELECT f, CAST(d AS REAL) AS c, CAST(f AS VARCHAR) AS fs, f || '' AS fc, CONCAT('x', f, d) AS fx,
  CAST(CAST(d AS REAL) AS VARCHAR) AS cs, d AS dd, CAST(f AS DOUBLE) AS fd, CAST(CAST(f AS DOUBLE) AS VARCHAR) AS fds, CAST(s AS REAL) AS sr FROM e`, realRows...)
	q := p.Queries[0]
	assert.Equal(t, []bool{true, true, false, false, false, false, false, false, false, true}, realAttrs(q))
	assert.Equal(t, query.Real, q.Output.Attrs[1].Logical)
	want := [][]string{
		{"0.10000000149011612", "0.10000000149011612", "0.1", "0.1", "x0.10.1", "0.1", "0.1", "0.10000000149011612", "0.10000000149011612", "0.10000000149011612"},
		{"NULL", "0.3333333432674408", "NULL", "NULL", "NULL", "0.33333334", "0.3333333333333333", "NULL", "NULL", "2.5"},
		{"-1.500000053056283e-07", "+Inf", "-1.5e-07", "-1.5e-07", "x-1.5e-071e+300", "Infinity", "1e+300", "-1.500000053056283e-07", "-1.500000053056283e-07", "NULL"},
		{"3.3999999521443642e+38", "NULL", "3.4e+38", "3.4e+38", "NULL", "NULL", "NULL", "3.3999999521443642e+38", "3.3999999521443642e+38", "NULL"},
	}
	assert.Equal(t, want, out[0])
	assert.Equal(t, "CAST(d AS REAL)", q.Spec.Query.Project[1].Expr.String())
	for i, c := range q.Columns {
		if realAttrs(q)[i] {
			assert.Equal(t, "REAL", c.Type, c.Name)
		}
	}
}

func TestRealAggregates(t *testing.T) {
	p, out := semRun(t, realSource+`CREATE VIEW w AS SELECT window_start, MAX(f) AS mf, MIN(f) AS nf, MAX(d) AS md, SUM(f) AS sf, AVG(f) AS af
  FROM TUMBLE(e, ts, INTERVAL '1' SECOND) GROUP BY window_start;
SELECT mf, CAST(mf AS VARCHAR) AS ms, nf || '' AS ns, md FROM w`, realRows...)
	agg, sel := p.Queries[0], p.Queries[1]
	assert.Equal(t, []bool{true, true, false, false, false}, realAttrs(agg))
	assert.Equal(t, []bool{true, false, false, false}, realAttrs(sel))
	assert.Equal(t, [][]string{{"3.3999999521443642e+38", "3.4e+38", "-1.5e-07", "1e+300"}}, out[1])
}

func TestRealSinkColumn(t *testing.T) {
	p, out := semRun(t, realSource+`CREATE TABLE o (a REAL, b DOUBLE, c REAL) WITH (connector = 'blackhole');
INSERT INTO o SELECT d, f, f AS g FROM e`, realRows...)
	q := p.Queries[len(p.Queries)-1]
	assert.Equal(t, []bool{true, false, true}, realAttrs(q))
	require.NotEmpty(t, out[len(out)-1])
	assert.Equal(t, []string{"0.10000000149011612", "0.10000000149011612", "0.10000000149011612"}, out[len(out)-1][0])
	assert.Equal(t, "0.3333333432674408", out[len(out)-1][1][0], "a DOUBLE into a REAL column is rounded")
}
