package sql

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/nexmark"
	"github.com/saber-hx/saber-hx/query"
)

// TestNexmarkConnector: a nexmark source reads the generator's tuples
// where the generator writes them (the declared columns, in any order and
// spelling of case, a subset allowed), with its options in Source.Nexmark
// and the watermark's delay.
func TestNexmarkConnector(t *testing.T) {
	p := mustCompile(t, `
CREATE SOURCE b (price BIGINT, URL VARCHAR, `+"`dateTime`"+` TIMESTAMP(3),
  WATERMARK FOR `+"`dateTime`"+` AS `+"`dateTime`"+` - INTERVAL '4' SECOND)
  WITH ('connector' = 'nexmark', 'nexmark.table.type' = 'Bid', 'events.num' = '1000', 'first-event.rate' = '500', 'seed' = '9');
SELECT price, URL FROM b WHERE price > 10;`)
	src := p.Source("b")
	require.NotNil(t, src)
	cfg := nexmark.DefaultConfig()
	cfg.Events, cfg.EventRate, cfg.Seed = 1000, 500, 9
	assert.Equal(t, cfg, src.Nexmark)
	assert.Equal(t, nexmark.BidTable, src.NexmarkTable)
	assert.Equal(t, int64(4000), src.WatermarkDelay)
	assert.Equal(t, "dateTime", src.EventTime)
	full := nexmark.BidSchema()
	assert.Equal(t, full.TupleSize, src.Schema.TupleSize)
	for _, c := range []struct{ declared, generated string }{{"price", "price"}, {"URL", "url"}, {"dateTime", "dateTime"}} {
		got, err := src.Schema.Lookup(c.declared)
		require.NoError(t, err)
		want, err := full.Lookup(c.generated)
		require.NoError(t, err)
		assert.Equal(t, want.Offset, got.Offset, c.declared)
		assert.Equal(t, want.Type, got.Type, c.declared)
	}
	assert.Equal(t, query.Time, src.Schema.Attrs[0].Logical, "the event time is attribute 0")
}

// TestNexmarkExamplesCompile: every examples/nexmark query compiles with
// the prelude, as the project writes it (q13's side input under
// ${FLINK_HOME}, q10's output under ${NEXMARK_DIR} and ${SUBMIT_TIME},
// as the project's runner gives them).
func TestNexmarkExamplesCompile(t *testing.T) {
	files, err := filepath.Glob("../examples/nexmark/q*.sql")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 12)
	env := func(k string) (string, bool) {
		v, ok := map[string]string{"FLINK_HOME": "/flink", "NEXMARK_DIR": "/nexmark", "SUBMIT_TIME": "1"}[k]
		return v, ok
	}
	for _, f := range files {
		q := strings.TrimSuffix(filepath.Base(f), ".sql")
		text, err := os.ReadFile(f)
		require.NoError(t, err)
		p, err := CompileEnv(string(text), env)
		require.NoError(t, err, q)
		assert.Len(t, p.Sources, 3, q)
		assert.Equal(t, "nexmark_"+q, p.Queries[len(p.Queries)-1].Name, q)
	}
}

func TestNexmarkConnectorErrors(t *testing.T) {
	const bid = "CREATE SOURCE b (`dateTime` TIMESTAMP(3), price BIGINT) WITH ('connector' = 'nexmark', "
	for _, c := range []struct{ text, msg string }{
		{bid + "'events.num' = '5')", "a nexmark source: a nexmark source names its table: 'nexmark.table.type' = 'person', 'auction' or 'bid'"},
		{bid + "'table' = 'bids')", `no table "bids" (person, auction or bid)`},
		{bid + "'table' = 'bid', 'rate' = '5')", "unknown option rate for a nexmark source"},
		{bid + "'table' = 'bid', 'events.num' = 'x')", "option 'events.num' = 'x': want an integer"},
		{"CREATE SOURCE b (`dateTime` TIMESTAMP(3), cost BIGINT) WITH ('connector' = 'nexmark', 'table' = 'bid')",
			"the nexmark table bid has no column cost (it has dateTime TIMESTAMP(3), auction BIGINT"},
		{"CREATE SOURCE b (`dateTime` TIMESTAMP(3), price INT) WITH ('connector' = 'nexmark', 'table' = 'bid')",
			"column price of the nexmark table bid is BIGINT, not INT"},
		{"CREATE SOURCE b (price BIGINT) WITH ('connector' = 'nexmark', 'table' = 'bid')", "declare the nexmark table's event time, dateTime TIMESTAMP(3)"},
		{"CREATE SOURCE b (`dateTime` TIMESTAMP(3), p AS PROCTIME()) WITH ('connector' = 'nexmark', 'table' = 'bid')",
			"declare the processing time in a view"},
	} {
		e := compileErr(t, c.text)
		assert.Contains(t, e.Error(), c.msg, c.text)
	}
}
