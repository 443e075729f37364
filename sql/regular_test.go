package sql

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
)

// TestRegularJoinErrors: the shapes of a regular join (a join of two
// streams without a window) that do not run are refused at the term that
// makes them so, saying what runs.
func TestRegularJoinErrors(t *testing.T) {
	for _, tc := range []struct {
		text      string
		line, col int
		msg       string
	}{
		{"SELECT * FROM e AS a JOIN e AS b ON a.n > 0", 5, 34,
			"a join of two streams without a window is a regular join, which needs an equality of a column of each side in ON: none found"},
		{"SELECT * FROM e AS a JOIN e AS b ON a.n = b.n AND a.m = b.m", 5, 55,
			"a second equality of the two sides of a regular join: not supported"},
		{"SELECT * FROM e AS a JOIN e AS b ON a.n = b.n WHERE a.x < b.x", 5, 57,
			"this term compares the two sides of a regular join otherwise than as one column of each being equal"},
		{"SELECT * FROM e AS a JOIN e AS b ON a.n + 1 = b.n", 5, 45,
			"this term compares the two sides of a regular join otherwise than as one column of each being equal"},
		{"SELECT * FROM e AS a JOIN e AS b ON a.u = b.u", 5, 41,
			"a.u is UUID: a regular join's key is an integer (INT or BIGINT) or string (VARCHAR) column of each side"},
		{"SELECT * FROM e AS a JOIN e AS b ON a.k = b.n", 5, 41,
			"a.k is VARCHAR and b.n BIGINT: a regular join's keys are of one type (CAST one)"},
		{"SELECT * FROM e AS a JOIN e AS b ON a.n = b.m", 5, 41,
			"a.n is BIGINT and b.m INT: a regular join's keys are of one type (CAST one)"},
		{"SELECT a.n, COUNT(*) FROM e AS a JOIN e AS b ON a.n = b.n GROUP BY a.n", 5, 1,
			"an aggregation over a regular join of two streams is not supported"},
		{"SELECT * FROM e JOIN e ON e.n = e.n", 5, 22, "both sides of the join are called e: give them aliases"},
		{"SELECT * FROM e AS a JOIN e [RANGE INTERVAL '1' SECOND] AS b ON a.n = b.n", 5, 15,
			"e has none (a regular join is of two streams neither windowed nor views of windows"},
		{"CREATE VIEW j AS SELECT a.n, b.ts FROM e AS a JOIN e AS b ON a.n = b.n;\nSELECT COUNT(*) FROM TUMBLE(j, ts, INTERVAL '1' SECOND)", 6, 0, "view j has no visible event-time column"},
	} {
		text := valuesBase + tc.text
		t.Run(tc.msg, func(t *testing.T) {
			e := compileErr(t, text)
			assert.Equal(t, tc.line, e.Line, e.Caret(text))
			if tc.col > 0 {
				assert.Equal(t, tc.col, e.Column, e.Caret(text))
			}
			assert.Contains(t, e.Msg, tc.msg)
			checkErrorPosition(t, text, e)
		})
	}
}

// TestRegularJoinPlan: a regular join's sides are filtered by their own
// terms of ON and WHERE and narrowed to the columns the select list reads
// before the join keeps them; the same column of both sides is named as
// Calcite names it (n, n0).
func TestRegularJoinPlan(t *testing.T) {
	prog, err := Compile(valuesBase + "SELECT a.n, b.n, b.s FROM e AS a JOIN e AS b ON a.m = b.m AND a.x > 1 WHERE b.k = 'z';")
	require.NoError(t, err)
	join := regularJoinOf(t, prog)
	j := join.Spec.Join
	require.True(t, j.Regular)
	assert.Equal(t, "m", j.Left.Attrs[j.LeftKey].Name)
	assert.Equal(t, "m", j.Right.Attrs[j.RightKey].Name)
	var names []string
	for _, c := range join.Columns {
		names = append(names, c.Name)
	}
	assert.ElementsMatch(t, []string{"a.ts", "a.n", "a.m", "b.ts", "b.n", "b.m", "s"}, names, "the sides keep the time, the key and what the select list reads")
	last := prog.Queries[len(prog.Queries)-1]
	var out []string
	for _, c := range last.Columns {
		out = append(out, c.Name)
	}
	assert.Equal(t, []string{"n", "n0", "s"}, out)
	text := prog.Explain()
	assert.Contains(t, text, "where: x > 1")
	assert.Contains(t, text, "where: k = 'z'")
	assert.Contains(t, text, "regular join of view")
}

// TestRegularJoinOnStrings: a regular join's key may be a VARCHAR column
// of each side: the join's keys are their attributes, String.
func TestRegularJoinOnStrings(t *testing.T) {
	prog, err := Compile(valuesBase + "SELECT a.n, b.m FROM e AS a JOIN e AS b ON a.k = b.k WHERE a.x > 1;")
	require.NoError(t, err)
	join := regularJoinOf(t, prog)
	j := join.Spec.Join
	require.True(t, j.Regular)
	assert.Equal(t, "k", j.Left.Attrs[j.LeftKey].Name)
	assert.Equal(t, "k", j.Right.Attrs[j.RightKey].Name)
	assert.Equal(t, query.String, j.Left.Attrs[j.LeftKey].Type)
}

// regularJoinOf is prog's (last) join query.
func regularJoinOf(t *testing.T, prog *Program) *Query {
	t.Helper()
	var join *Query
	for _, q := range prog.Queries {
		if q.Spec.Join != nil {
			join = q
		}
	}
	require.NotNil(t, join)
	return join
}
