package sql

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNexmarkQ12Lowering: q12's view adds PROCTIME() AS p_time to bid:
// the source lays out a slot for it after the generator's tuple, and the
// window over p_time reads a part that makes it the tuples' time.
func TestNexmarkQ12Lowering(t *testing.T) {
	text, err := os.ReadFile("../examples/nexmark/q12.sql")
	require.NoError(t, err)
	p := mustCompile(t, string(text))
	var bid *Source
	for _, s := range p.Sources {
		if s.Name == "bid" {
			bid = s
		}
	}
	require.NotNil(t, bid)
	assert.Equal(t, "p_time", bid.ProcTime)
	slot, err := bid.Schema.Lookup("p_time")
	require.NoError(t, err)
	assert.Equal(t, 80, slot.Offset, "after the generator's 80-byte tuple")
	assert.Equal(t, 88, bid.Schema.TupleSize)
	ex := p.Explain()
	assert.Contains(t, ex, "  udf: time := p_time, then the input tuple\n")
	assert.Contains(t, ex, "tumbling range 10000")
}

// TestProcTimeViewErrors: the views that add PROCTIME() refused, at the
// construct.
func TestProcTimeViewErrors(t *testing.T) {
	const src = "CREATE SOURCE s (ts BIGINT, k INT) WITH (connector = 'go', format = 'csv');\n"
	const bin = "CREATE SOURCE b (ts BIGINT, k INT) WITH (connector = 'go', format = 'binary');\n"
	for _, tc := range []struct {
		text string
		col  int
		msg  string
	}{
		{src + "CREATE VIEW v AS SELECT *, PROCTIME() FROM s;", 28, "PROCTIME() needs a name in a view: PROCTIME() AS p"},
		{src + "CREATE VIEW v AS SELECT *, PROCTIME() AS p, PROCTIME() AS q FROM s;", 45, "a second PROCTIME() column: view v has p"},
		{src + "CREATE VIEW v AS SELECT *, PROCTIME() AS p FROM s WHERE k > 1;", 59, "a view that adds PROCTIME() AS p is a plain projection of a source (CREATE VIEW v AS SELECT *, PROCTIME() AS p FROM source): no WHERE"},
		{src + "CREATE VIEW v AS SELECT k + 1 AS j, PROCTIME() AS p FROM s;", 25, "its select list names the source's columns as they are"},
		{src + "CREATE VIEW w AS SELECT k FROM s;\nCREATE VIEW v AS SELECT *, PROCTIME() AS p FROM w;", 49, "PROCTIME() AS p: w is a view"},
		{bin + "CREATE VIEW v AS SELECT *, PROCTIME() AS p FROM b;", 28, "source b's records are its tuples (format 'binary'), with no room for a processing time"},
		{src + "SELECT PROCTIME() FROM s;", 8, "PROCTIME is not supported"},
	} {
		t.Run(tc.msg, func(t *testing.T) {
			e := compileErr(t, tc.text)
			assert.Contains(t, e.Msg, tc.msg)
			if tc.col > 0 {
				assert.Equal(t, tc.col, e.Column, e.Caret(tc.text))
			}
			checkErrorPosition(t, tc.text, e)
		})
	}
}
