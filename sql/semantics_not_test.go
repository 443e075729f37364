package sql

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

// NOT of an ordering comparison of floats is not the opposite comparison:
// NOT (NaN < 1) is TRUE, NaN >= 1 FALSE. NOT, NOT BETWEEN and IS FALSE
// keep that in projections and in WHERE (the kernels' own push-down of
// NOT too); = and <> still flip, and integers still push down.
func TestNotFloatComparison(t *testing.T) {
	const src = `CREATE SOURCE e (ts TIMESTAMP(3) NOT NULL, x DOUBLE, f REAL, n BIGINT) WITH (connector = 'stdin', format = 'json');
`
	nan := math.NaN()
	rows := [][]any{{nan, nan, 0}, {0.5, 0.5, 1}, {2.0, 2.0, 2}, {nil, nil, nil}, {-1.0, nan, -1}}
	p, out := semRun(t, src+`SELECT NOT (x < 1) AS a, NOT (x BETWEEN 0 AND 1) AS b, x NOT BETWEEN 0 AND 1 AS c, (x < 1) IS FALSE AS d,
  NOT (x = 1) AS e1, NOT (f > n) AS g, NOT (n < 1) AS h, NOT (x < 1 OR x >= 1) AS i, (x <= 1) IS NOT TRUE AS j FROM e;
SELECT x FROM e WHERE NOT (x < 1);
SELECT x FROM e WHERE x NOT BETWEEN 0 AND 1;
SELECT x FROM e WHERE NOT (x >= 0 AND f <= 1) AND n IS NOT NULL;
SELECT x FROM e WHERE NOT (NOT (x < 1))`, rows...)
	assert.Equal(t, [][]string{
		{"1", "1", "1", "1", "1", "1", "0", "1", "1"},
		{"0", "0", "0", "0", "1", "1", "1", "0", "0"},
		{"1", "1", "1", "1", "1", "1", "1", "0", "1"},
		{"NULL", "NULL", "NULL", "0", "NULL", "NULL", "NULL", "NULL", "1"},
		{"0", "1", "1", "0", "1", "1", "0", "0", "0"},
	}, out[0])
	assert.Equal(t, [][]string{{"NaN"}, {"2"}}, out[1])
	assert.Equal(t, [][]string{{"NaN"}, {"2"}, {"-1"}}, out[2])
	assert.Equal(t, [][]string{{"NaN"}, {"2"}, {"-1"}}, out[3])
	assert.Equal(t, [][]string{{"0.5"}, {"-1"}}, out[4])
	// integers push down: the kernels compare, no NOT left
	assert.Equal(t, "n >= 1", p.Queries[0].Spec.Query.Project[6].Expr.String())
	assert.Equal(t, "NOT (x < 1)", p.Queries[0].Spec.Query.Project[0].Expr.String())
}
