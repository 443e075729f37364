package sql

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestExplain(t *testing.T) {
	p, _ := compileFile(t, "ysb.sql")
	assert.Equal(t, `source events (line 3): file events.bin, format binary, 128-byte tuples, event time event_time (ms)
  event_time       BIGINT       at 0
  user_id          UUID         at 8
  page_id          UUID         at 24
  ad_id            UUID         at 40
  ad_type          INT          at 56
  event_type       INT          at 60
  ip               INT          at 64
table campaigns (line 8): file campaigns.csv, format csv, 0 rows loaded
  ad_id            UUID
  campaign_id      UUID
query select1 (line 11)
  from source events
  window: tumbling range 10000 (event-time units)
  where: event_type = 0
  join: ad_id with a table's 16-byte keys, value as campaign_id
  group by: campaign_id
  aggregate count: COUNT(*)
  aggregate max_event_time: MAX(event_time)
  columns: window_start, campaign_id, count, max_event_time
  sink: stdout, format csv
`, p.Explain())
	p, _ = compileFile(t, "sg3.sql")
	out := p.Explain()
	assert.Contains(t, out, "view local_avg (line 9)\n  from source measurements\n  window: sliding range 3600000, slide 1000 (event-time units)\n")
	assert.Contains(t, out, "query select1 (line 18)\n  window join of view local_avg and view global_avg\n  window: tumbling range 1000 (event-time units)\n  on: l.avg_value > r.avg_value\n")
	p, _ = compileFile(t, "proj.sql")
	assert.Contains(t, p.Explain(), "  project p1: ((a1 * 3) + 2)\n")
}

// TestExplainParts: the parts a query is lowered into, lookup joins,
// FILTER, sink tables.
func TestExplainParts(t *testing.T) {
	p := mustCompile(t, valuesBase+`CREATE TABLE o (k VARCHAR, r DOUBLE) WITH ('connector' = 'blackhole');
		INSERT INTO o SELECT k, SUM(n) * 1.0 / COUNT(*) FILTER (WHERE b) FROM TUMBLE(e, ts, INTERVAL '1' SECOND) GROUP BY k;
		SELECT e.k, u.country FROM e JOIN users AS u ON e.k = u.name`)
	out := p.Explain()
	for _, want := range []string{
		"source e (line 1): stdin, format json, 128-byte tuples, event time ts (TIMESTAMP, ms)\n",
		"  k                VARCHAR      at 8, NULL bit ",
		"part of o: o$1 (line 6)\n  from source e\n  window: tumbling range 1000 (event-time units)\n  group by: k\n  aggregate $agg1: SUM(n)\n  aggregate $agg2: COUNT(*) FILTER (WHERE b)\n",
		"query o (line 6)\n  from view o$1\n  project k: k\n  project r: (($agg1 * 1) / $agg2)\n  columns: k, r\n  sink: blackhole (rows counted, not written)\n",
		"  where: k IS NOT NULL\n  lookup join: k with a table's string keys, values u.country\n",
	} {
		assert.Contains(t, out, want)
	}
}
