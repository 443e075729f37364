package sql

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/testenv"
	"github.com/saber-hx/saber-hx/strview"
)

// TestIdenticalSubqueriesShareAPart: a statement whose subqueries compute
// the same aggregation (Nexmark q5's AuctionBids and CountBids) runs it
// once, read by both; subqueries that differ, or the same one in two
// statements, run apart. Each query's output is checked against the
// reference over its input.
func TestIdenticalSubqueriesShareAPart(t *testing.T) {
	const counts = `SELECT k, COUNT(*) AS num, window_start AS st, window_end AS en
		FROM TABLE(HOP(TABLE e, DESCRIPTOR(ts), INTERVAL '1' SECOND, INTERVAL '3' SECOND)) GROUP BY k, window_start, window_end`
	join := func(left, right string) string {
		return `SELECT a.k, a.num FROM (` + left + `) AS a JOIN (SELECT MAX(num) AS top, st, en FROM (` + right + `) AS c GROUP BY st, en) AS m
			ON a.st = m.st AND a.en = m.en AND a.num >= m.top`
	}
	aggregations := func(p *Program) (n int, readers map[string]int) {
		readers = map[string]int{}
		for _, q := range p.Queries {
			if q.Spec.Query != nil && !q.Spec.Query.Stateless() && q.Input == "e" {
				n++
			}
			for _, from := range []string{q.From, q.FromRight} {
				if from != "" {
					readers[from]++
				}
			}
		}
		return n, readers
	}
	for _, tc := range []struct {
		name, sql string
		want      int // aggregations of e
	}{
		{"the same subquery twice", join(counts, counts), 1},
		{"another aggregate", join(counts, `SELECT k, COUNT(n) AS num, window_start AS st, window_end AS en
			FROM TABLE(HOP(TABLE e, DESCRIPTOR(ts), INTERVAL '1' SECOND, INTERVAL '3' SECOND)) GROUP BY k, window_start, window_end`), 2},
		{"the same aggregation, another projection", join(`SELECT k, COUNT(*) AS num, window_start AS st, window_end AS en, window_end - window_start AS len
			FROM TABLE(HOP(TABLE e, DESCRIPTOR(ts), INTERVAL '1' SECOND, INTERVAL '3' SECOND)) GROUP BY k, window_start, window_end`, counts), 1},
		{"another WHERE", join(counts, `SELECT k, COUNT(*) AS num, window_start AS st, window_end AS en
			FROM TABLE(HOP(TABLE e, DESCRIPTOR(ts), INTERVAL '1' SECOND, INTERVAL '3' SECOND)) WHERE n > 0 GROUP BY k, window_start, window_end`), 2},
		{"two statements", "CREATE VIEW v1 AS " + counts + ";\nCREATE VIEW v2 AS " + counts + ";\nSELECT k, num FROM v1 WHERE num > 1;\nSELECT k, num FROM v2 WHERE num > 2", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a strview.Arena
			// 1,500 tuples, 45 s: dozens of the 3 s hops, enough to
			// check the shared part's output; CI's 3,000 twice as many.
			p, data := compileValuesN(t, tc.sql, 11, 9, testenv.Scale(1500, 3000), &a)
			n, readers := aggregations(p)
			assert.Equal(t, tc.want, n, p.Explain())
			shared := 0
			for _, r := range readers {
				shared = max(shared, r)
			}
			if tc.want == 1 {
				assert.Equal(t, 2, shared, "a part feeds both subqueries: %v", readers)
			} else {
				assert.Equal(t, 1, shared, "each part feeds one query: %v", readers)
			}
			outs := checkProgram(t, p, data, &a, 64)
			require.NotEmpty(t, outs[len(outs)-1].tuples)
			a.Free()
		})
	}
}
