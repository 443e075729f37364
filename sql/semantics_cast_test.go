package sql

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// CAST(string AS BOOLEAN) reads Flink's words: t, true, y, yes, 1 as TRUE
// and f, false, n, no, 0 as FALSE, in any case, spaces around them
// ignored; anything else is NULL.
func TestCastStringToBoolean(t *testing.T) {
	const src = `CREATE SOURCE e (ts TIMESTAMP(3) NOT NULL, s VARCHAR) WITH (connector = 'stdin', format = 'json');
`
	words := map[string]string{
		"1": "1", "0": "0", "t": "1", "T": "1", "true": "1", " TRUE ": "1", "TrUe": "1", "y": "1", "Y": "1", "yes": "1", "YES": "1",
		"f": "0", "F": "0", "false": "0", "False": "0", "n": "0", "N": "0", "no": "0", "No": "0",
		"": "NULL", "2": "NULL", "01": "NULL", "tr": "NULL", "yes!": "NULL", "on": "NULL", "off": "NULL", "nope": "NULL", "ye": "NULL",
	}
	var rows [][]any
	var want [][]string
	for w, b := range words {
		rows = append(rows, []any{w})
		want = append(want, []string{w, b})
	}
	rows = append(rows, []any{nil})
	want = append(want, []string{"NULL", "NULL"})
	_, out := semRun(t, src+`SELECT s, CAST(s AS BOOLEAN) AS b FROM e`, rows...)
	assert.Equal(t, want, out[0])
}
