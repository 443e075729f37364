package sql

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestIntervalJoinInTimeUnit: Nexmark q7's shape, an interval join of a
// stream with a view of its TUMBLE windows, over a BIGINT event time in
// milliseconds and in seconds: the INTERVALs of its bounds are in the
// time's unit, as the windows' sizes are.
func TestIntervalJoinInTimeUnit(t *testing.T) {
	for unit, w := range map[string]int64{"ms": 10000, "s": 10} {
		p, err := Compile(`CREATE SOURCE e (ts BIGINT, auction BIGINT, price BIGINT) WITH (connector = 'stdin', format = 'csv', time_unit = '` + unit + `');
CREATE VIEW mx AS SELECT TUMBLE_END(ts, INTERVAL '10' SECOND) AS we, MAX(price) AS maxprice FROM e GROUP BY TUMBLE(ts, INTERVAL '10' SECOND);
SELECT B.auction, B.price FROM e B JOIN mx ON B.price = mx.maxprice WHERE B.ts BETWEEN mx.we - INTERVAL '10' SECOND AND mx.we;`)
		require.NoError(t, err, unit)
		var where string
		for _, q := range p.Queries {
			if j := q.Spec.Join; j != nil {
				assert.Equal(t, w, j.Window.Size, unit)
				where = fmt.Sprint(j.Where)
			}
		}
		assert.Contains(t, where, fmt.Sprintf("l.ts >= (r.we - %d)", w), "%s: the bound's interval in the time's unit", unit)
	}
}
