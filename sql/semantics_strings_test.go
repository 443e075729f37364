package sql

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stringsSrc is a source of a string, an integer and a float.
const stringsSrc = `CREATE SOURCE e (ts TIMESTAMP(3) NOT NULL, s VARCHAR, i BIGINT, d DOUBLE) WITH (connector = 'stdin', format = 'json');
`

// TestEnumLabelsThroughConcatAndCase: an ENUM is its label in || as in
// CONCAT, and a CASE or IF whose branches are one ENUM is that ENUM (its
// labels printed); among strings, its label.
func TestEnumLabelsThroughConcatAndCase(t *testing.T) {
	const src = `CREATE SOURCE e (ts TIMESTAMP(3) NOT NULL, i BIGINT, k ENUM('view','click')) WITH (connector = 'stdin', format = 'json');
SELECT CONCAT(k, '!') AS f, k || '!' AS op, COALESCE(k, k) AS c, CASE WHEN i > 0 THEN k ELSE k END AS cs, IF(i > 0, k, k) AS iff,
  CASE WHEN i > 0 THEN k ELSE 'none' END AS mixed, IF(i > 0, 'yes', k) AS mixed2, CASE WHEN i > 0 THEN k END = 'click' AS isclick,
  CASE WHEN i > 0 THEN k ELSE 5 END AS code FROM e;`
	p, out := semRun(t, src, []any{int64(1), 1}, []any{int64(-1), 0})
	assert.Equal(t, [][]string{{"click!", "click!"}, {"view!", "view!"}},
		[][]string{{out[0][0][0], out[0][0][1]}, {out[0][1][0], out[0][1][1]}}, "CONCAT(k, '!') and k || '!'")
	assert.Equal(t, [][]string{{"click", "yes", "1"}, {"none", "view", "NULL"}},
		[][]string{{out[0][0][5], out[0][0][6], out[0][0][7]}, {out[0][1][5], out[0][1][6], out[0][1][7]}}, "an ENUM among strings is its label")
	assert.Equal(t, []string{"1", "5"}, []string{out[0][0][8], out[0][1][8]}, "among numbers, its code")
	cols := p.Queries[0].Columns
	require.Len(t, cols, 9)
	assert.Equal(t, []string{"view", "click"}, cols[2].Labels, "COALESCE(k, k) is the ENUM")
	assert.Equal(t, []string{"view", "click"}, cols[3].Labels, "CASE ... THEN k ELSE k END is the ENUM")
	assert.Equal(t, []string{"view", "click"}, cols[4].Labels, "IF(c, k, k) is the ENUM")
	assert.Nil(t, cols[5].Labels)
}

// TestStringFunctionsAsFlink: SUBSTRING's start 0 and negative starts and
// lengths, CAST of a decimal string to an integer, SPLIT_INDEX of an empty
// string and the infinities' text, each as Flink gives them.
func TestStringFunctionsAsFlink(t *testing.T) {
	_, out := semRun(t, stringsSrc+`SELECT SUBSTRING(s, 0, 2) AS a, SUBSTRING(s, -3) AS b, SUBSTR(s, -3, 2) AS c, SUBSTRING(s, 2, -1) AS d,
  SUBSTRING(s, -9223372036854775807, 9223372036854775807) AS e FROM e;
SELECT CAST(s AS BIGINT) AS b, CAST(s AS INT) AS n FROM e;
SELECT SPLIT_INDEX(s, ',', 0) AS p, SPLIT_INDEX(s, ',', 1) AS q FROM e;
SELECT CAST(d AS VARCHAR) AS v, 'x' || d AS c FROM e;`,
		[]any{"hello", 0, math.Inf(1)}, []any{"-7.9", 0, math.Inf(-1)}, []any{"", 0, 1.5}, []any{"12.", 0, math.NaN()})
	assert.Equal(t, []string{"he", "llo", "ll", "NULL", ""}, out[0][0], "SUBSTRING")
	assert.Equal(t, [][]string{{"NULL", "NULL"}, {"-7", "-7"}, {"NULL", "NULL"}, {"12", "12"}}, out[1], "CAST to integers")
	assert.Equal(t, [][]string{{"hello", "NULL"}, {"-7.9", "NULL"}, {"NULL", "NULL"}, {"12.", "NULL"}}, out[2], "SPLIT_INDEX")
	assert.Equal(t, [][]string{{"Infinity", "xInfinity"}, {"-Infinity", "x-Infinity"}, {"1.5", "x1.5"}, {"NaN", "xNaN"}}, out[3], "floats' text")
}
