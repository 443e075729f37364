package sql

import (
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
)

// HAVING reads a name as the input's column first (a GROUP BY column), a
// select-list alias only where no column has the name: k is the group
// key k, not the SUM aliased k.
func TestHavingColumnBeforeAlias(t *testing.T) {
	const src = `CREATE SOURCE e (ts TIMESTAMP(3) NOT NULL, k BIGINT NOT NULL, v BIGINT NOT NULL) WITH (connector = 'stdin', format = 'json');
`
	var rows [][]any
	for k := 1; k <= 8; k++ {
		rows = append(rows, []any{k, 100 * (k % 3)})
	}
	for _, tc := range []struct {
		name, having string
		want         []string
	}{
		{"column", "k > 6", []string{"7", "8"}},                    // the GROUP BY column, not SUM(v) AS k
		{"alias", "total > 150", []string{"2", "5", "8"}},          // no column total: the alias
		{"ungrouped", "v > 6", []string{"7", "8"}},                 // v is not grouped: its alias, k
		{"both", "k > 3 AND total < 150", []string{"4", "6", "7"}}, // 100 * (k % 3) < 150
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, out := semRun(t, src+`CREATE VIEW w AS SELECT window_start, k AS v, SUM(v) AS k, SUM(v) AS total FROM TUMBLE(e, ts, INTERVAL '1' SECOND) GROUP BY k HAVING `+tc.having+`;
SELECT v FROM w`, rows...)
			var got []string
			for _, r := range out[1] {
				got = append(got, r[0])
			}
			sort.Strings(got)
			assert.Equal(t, tc.want, got)
		})
	}
}
