package sql

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chainSrc is a table and four streams for joins of three and more: tb
// has k, name and u, x has k and v, y has k, w and v, z has k and u, t
// has k (the streams a time ts too).
const chainSrc = `CREATE TABLE tb (k BIGINT, name VARCHAR, u BIGINT) WITH (connector = 'file', path = 'tb.csv', format = 'csv');
CREATE SOURCE x (ts TIMESTAMP(3), k BIGINT, v BIGINT, WATERMARK FOR ts AS ts) WITH (connector = 'stdin', format = 'csv');
CREATE SOURCE y (ts TIMESTAMP(3), k BIGINT, w BIGINT, v BIGINT, WATERMARK FOR ts AS ts) WITH (connector = 'stdin', format = 'csv');
CREATE SOURCE z (ts TIMESTAMP(3), k BIGINT, u BIGINT, WATERMARK FOR ts AS ts) WITH (connector = 'stdin', format = 'csv');
CREATE SOURCE t (ts TIMESTAMP(3), k BIGINT, WATERMARK FOR ts AS ts) WITH (connector = 'stdin', format = 'csv');
`

// TestChainJoinNames: a join of three is the join of the first two,
// selecting the columns read after it (named as a view of a join names
// them: B.v where two inputs have a v), joined with the third; the
// outer query's output columns keep Flink's names: a column's own, qual.*
// and * expanded (qual.name where two inputs have the name).
func TestChainJoinNames(t *testing.T) {
	for _, tc := range []struct {
		sel   string
		inner []string // the chain's select list
		out   []string
	}{
		{"SELECT a.v, b.v AS bv, w, u FROM x AS a JOIN y AS b ON a.k = b.k JOIN z AS c ON c.k = a.k",
			[]string{"a.k", "a.v", "w", "b.v"}, []string{"v", "bv", "w", "u"}},
		{"SELECT b.*, c.u FROM x AS a JOIN y AS b ON a.k = b.k JOIN z AS c ON c.k = b.w",
			[]string{"b.ts", "b.k", "w", "b.v"}, []string{"ts", "k", "w", "v", "u"}},
		{"SELECT * FROM x AS a JOIN y AS b ON a.k = b.k JOIN z AS c ON c.k = a.v",
			[]string{"a.ts", "a.k", "a.v", "b.ts", "b.k", "w", "b.v"},
			[]string{"a.ts", "a.k", "a.v", "b.ts", "b.k", "w", "b.v", "c.ts", "c.k", "u"}},
		// The same column of two inputs, unaliased: v, then v0, as in a
		// join of two (Calcite's names).
		{"SELECT a.v, b.v FROM x AS a JOIN y AS b ON a.k = b.k JOIN z AS c ON c.k = a.k",
			[]string{"a.k", "a.v", "b.v"}, []string{"v", "v0"}},
		{"SELECT a.v, c.v FROM x AS a JOIN z AS b ON a.k = b.k JOIN y AS c ON c.k = a.k",
			[]string{"a.k", "v"}, []string{"v", "v0"}},
		// A table joined last: its columns count in the names of *.
		{"SELECT * FROM x AS a JOIN z AS b ON a.k = b.k JOIN tb ON tb.k = a.v",
			[]string{"a.ts", "a.k", "v", "b.ts", "b.k", "u"},
			[]string{"a.ts", "a.k", "v", "b.ts", "b.k", "b.u", "tb.k", "name", "tb.u"}},
	} {
		p := mustCompile(t, chainSrc+tc.sel)
		require.GreaterOrEqual(t, len(p.Queries), 2, tc.sel)
		// The chain's subquery reads the first join's pairs.
		var first, inner *Query
		for _, q := range p.Queries {
			switch {
			case first == nil && q.Spec.Join != nil:
				first = q
			case first != nil && inner == nil && q.From == first.Name:
				inner = q
			}
		}
		require.NotNil(t, inner, "the chain's subquery: %s", tc.sel)
		assert.Equal(t, tc.inner, columnNamesOf(inner), tc.sel)
		assert.Equal(t, tc.out, columnNamesOf(p.Queries[len(p.Queries)-1]), tc.sel)
	}
}

// TestChainJoinOfMore: FROM a JOIN b JOIN c JOIN d (and e) compiles, each
// ON seeing the inputs joined so far: a column of the first input that a
// later ON reads is carried up to it, and an unqualified name that only
// one input seen so far has is that input's, though a later one has it
// too.
func TestChainJoinOfMore(t *testing.T) {
	for _, tc := range []struct {
		sel   string
		out   []string
		joins int
	}{
		{"SELECT d.ts, u, w FROM x AS a JOIN y AS b ON a.k = b.k JOIN z AS c ON c.k = b.w JOIN t AS d ON d.k = a.v", []string{"ts", "u", "w"}, 3},
		{"SELECT e.k FROM x AS a JOIN z AS b ON a.k = b.k JOIN t AS c ON c.k = v JOIN y AS d ON d.k = b.k JOIN t AS e ON e.k = d.w", []string{"k"}, 4},
	} {
		p := mustCompile(t, chainSrc+tc.sel)
		assert.Equal(t, tc.out, columnNamesOf(p.Queries[len(p.Queries)-1]), tc.sel)
		joins := 0
		for _, q := range p.Queries {
			if q.Spec.Join != nil {
				joins++
				assert.True(t, q.Spec.Join.Regular, q.Name)
			}
		}
		assert.Equal(t, tc.joins, joins, tc.sel)
	}
}

// TestChainJoinErrors: what a join of more inputs refuses, at the place.
func TestChainJoinErrors(t *testing.T) {
	for _, tc := range []struct {
		sel string
		col int
		msg string
	}{
		{"SELECT v FROM x AS a JOIN y AS b ON a.k = b.k JOIN z AS c ON c.k = a.k", 8, "column v is ambiguous: it is in a and b (qualify it)"},
		{"SELECT w FROM x AS a JOIN y AS b ON a.k = b.k JOIN y AS c ON c.k = a.k", 8, "column w is ambiguous: it is in b and c (qualify it)"},
		{"SELECT d.k FROM x AS a JOIN y AS b ON a.k = b.k JOIN z AS c ON k = a.k JOIN t AS d ON d.k = a.k", 64, "column k is ambiguous: it is in a and b and c (qualify it)"},
		{"SELECT nope FROM x AS a JOIN y AS b ON a.k = b.k JOIN z AS c ON c.k = a.k", 8, "unknown column nope (valid: a.ts, a.k, a.v, b.ts, b.k, b.w, b.v, c.ts, c.k, c.u)"},
		{"SELECT a.nope FROM x AS a JOIN y AS b ON a.k = b.k JOIN z AS c ON c.k = a.k", 8, "unknown column a.nope (valid: ts, k, v)"},
		{"SELECT u FROM x AS a JOIN y AS b ON a.k = b.k JOIN z AS a ON a.k = b.k", 52, "a is joined twice: give the inputs of the join aliases"},
		{"SELECT u FROM x AS a JOIN x AS b ON a.k = b.k JOIN x AS b ON a.k = b.k", 52, "b is joined twice"},
		{"SELECT u FROM (SELECT k FROM x) AS a JOIN y AS b ON a.k = b.k JOIN z AS c ON c.k = b.k", 15, "a subquery in a join of more than two inputs: make it a view"},
		{"SELECT u FROM x AS a JOIN y AS b ON a.k = b.k LEFT JOIN z AS c ON c.k = b.k", 47, "LEFT JOIN is not supported: only inner joins"},
		{"SELECT u FROM x AS a JOIN y AS b ON a.k = b.k JOIN z AS c ON c.k = a.w", 68, "unknown column a.w (valid: ts, k, v)"},
		{"SELECT u FROM x [ROWS 2] AS a JOIN y [ROWS 2] AS b ON a.k = b.k JOIN z [ROWS 2] AS c ON b.k = c.k", 15, "a JOIN b has none"},
	} {
		e := compileErr(t, chainSrc+tc.sel)
		assert.Equal(t, 6, e.Line, tc.sel)
		assert.Equal(t, tc.col, e.Column, e.Caret(chainSrc+tc.sel))
		assert.Contains(t, e.Msg, tc.msg, tc.sel)
	}
}
