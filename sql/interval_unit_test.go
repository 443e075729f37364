package sql

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
)

// TestIntervalUnitInString: RisingWave's tutorials write PostgreSQL's
// INTERVAL '10 MINUTES', the unit in the string, which was refused as a
// length that is not an integer; it is INTERVAL '10' MINUTE, in windows,
// watermarks and expressions alike.
func TestIntervalUnitInString(t *testing.T) {
	for text, want := range map[string]query.Window{
		"TUMBLE(s, ts, INTERVAL '10 SECONDS')":                               {Type: query.Range, Size: 10000, Slide: 10000},
		"HOP(s, ts, INTERVAL '1 second', INTERVAL ' 1  minute ')":            {Type: query.Range, Size: 60000, Slide: 1000},
		"TABLE(TUMBLE(TABLE s, DESCRIPTOR(ts), INTERVAL '2 Hours'))":         {Type: query.Range, Size: 7200000, Slide: 7200000},
		"s [RANGE INTERVAL '5 milliseconds' SLIDE INTERVAL '1' MILLISECOND]": {Type: query.Range, Size: 5, Slide: 1},
	} {
		p, err := Compile(base + "SELECT COUNT(*) AS n FROM " + text)
		require.NoError(t, err, text)
		assert.Equal(t, want, p.Queries[0].Spec.Query.Window, text)
	}
	p, err := Compile("CREATE SOURCE q (ts TIMESTAMP(3), a INT, WATERMARK FOR ts AS ts - INTERVAL '5 seconds') WITH (connector = 'stdin', format = 'csv');\n" +
		"SELECT ts + INTERVAL '1 day' AS t FROM q")
	require.NoError(t, err)
	assert.Equal(t, int64(5000), p.Source("q").WatermarkDelay)
	assert.Equal(t, "(ts + 86400000)", p.Queries[0].Spec.Query.Project[0].Expr.String())

	for _, tc := range []struct {
		text string
		col  int
		msg  string
	}{
		{"TUMBLE(s, ts, INTERVAL '1 week')", 50, "INTERVAL '1 week': the unit must be MILLISECOND, SECOND, MINUTE, HOUR or DAY"},
		{"TUMBLE(s, ts, INTERVAL '1 hour 30 minutes')", 50, "INTERVAL '1 hour 30 minutes': one length and one unit ('90 minutes', or INTERVAL '90' MINUTE)"},
		{"TUMBLE(s, ts, INTERVAL 'ten minutes')", 50, "INTERVAL 'ten minutes': the length must be a positive integer"},
	} {
		e := compileErr(t, base+"SELECT COUNT(*) AS n FROM "+tc.text)
		assert.Equal(t, 3, e.Line, tc.text)
		assert.Equal(t, tc.col, e.Column, tc.text)
		assert.Equal(t, tc.msg, e.Msg, tc.text)
	}
}
