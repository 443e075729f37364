package sql

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

// MIN and MAX of a float skip NaN (NaN only over NaNs alone) wherever the
// NaN is, the engine's partial rows merged in any grouping; -0 is below
// +0. The reference agrees (its rule is written on its own).
func TestMinMaxFloatNaN(t *testing.T) {
	nan, nz := math.NaN(), math.Copysign(0, -1)
	groups := []struct {
		k      int
		xs     []any
		mn, mx string
	}{
		{1, []any{nan, 1.0, -2.0}, "-2", "1"},
		{2, []any{1.0, nan, 2.0, -5.0}, "-5", "2"},
		{3, []any{3.0, 1.0, nan}, "1", "3"},
		{4, []any{nan, nan}, "NaN", "NaN"},
		{5, []any{0.0, nz}, "-0", "0"},
		{6, []any{nz, 0.0}, "-0", "0"},
		{7, []any{nan, nil, 7.0, nan}, "7", "7"},
		{8, []any{nil}, "NULL", "NULL"},
		{9, []any{math.Inf(1), nan}, "+Inf", "+Inf"},
		{10, []any{nan, math.Inf(-1)}, "-Inf", "-Inf"},
	}
	// the groups' values interleaved, in order within each group
	var rows [][]any
	for i := 0; ; i++ {
		added := false
		for _, g := range groups {
			if i < len(g.xs) {
				rows = append(rows, []any{g.k, g.xs[i]})
				added = true
			}
		}
		if !added {
			break
		}
	}
	const src = `CREATE SOURCE e (ts TIMESTAMP(3) NOT NULL, k INT NOT NULL, x DOUBLE) WITH (connector = 'stdin', format = 'json');
`
	for _, tc := range []struct{ name, from, where string }{
		{"tumble", "TUMBLE(e, ts, INTERVAL '1' MINUTE)", "TRUE"},
		{"hop", "HOP(e, ts, INTERVAL '100' MILLISECOND, INTERVAL '1' MINUTE)", "window_start = TIMESTAMP '1970-01-01 00:00:00'"},
		{"session", "SESSION(e PARTITION BY k, ts, INTERVAL '1' MINUTE)", "TRUE"},
	} {
		for _, task := range []int{1, 3, 64} {
			t.Run(fmt.Sprint(tc.name, task), func(t *testing.T) {
				_, out := semRunTasks(t, src+`CREATE VIEW w AS SELECT window_start, k, MIN(x) AS mn, MAX(x) AS mx,
  MIN(x) FILTER (WHERE k <> 1) AS fmn, MAX(x) FILTER (WHERE ts > TIMESTAMP '1970-01-01 00:00:00.900') AS fmx FROM `+tc.from+` GROUP BY k;
SELECT k, mn, mx, fmn FROM w WHERE `+tc.where, task, rows...)
				got := map[string][]string{}
				for _, r := range out[1] {
					got[r[0]] = r[1:3]
				}
				for _, g := range groups {
					assert.Equal(t, []string{g.mn, g.mx}, got[fmt.Sprint(g.k)], "group %d: %v", g.k, g.xs)
				}
			})
		}
	}
}
