package sql

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLoadJSON: a format = 'json' table loads from JSON lines, the columns
// by name, through package source's decoder, and Load picks the format.
func TestLoadJSON(t *testing.T) {
	p := mustCompile(t, `CREATE TABLE x (id UUID, raw BYTES(2)) WITH (connector = 'file', path = 'x.json', format = 'json');
		CREATE SOURCE q (ts BIGINT, u UUID) WITH (connector = 'stdin');
		SELECT raw, COUNT(*) AS n FROM q [ROWS 2] JOIN x ON q.u = x.id GROUP BY raw`)
	tab := p.Table("x")
	require.NoError(t, tab.Load(stringsReader(`{"raw": "h", "id": "00000000-0000-0000-0000-0000000000FF", "other": [1]}`+"\n\n"+
		`{"id": "00000000-0000-0000-0000-000000000001", "raw": "hi"}`)))
	assert.Equal(t, 2, tab.Rows())
	st := p.Queries[0].Spec.Query.Join.Table
	assert.Equal(t, [][]byte{append(make([]byte, 15), 0xff), append(make([]byte, 15), 1)}, st.Keys)
	assert.Equal(t, [][]byte{{'h', 0}, {'h', 'i'}}, st.Values)
	assert.ErrorContains(t, tab.Load(stringsReader(`{"id": "x", "raw": "h"}`+"\n")), `table x: line 1`)
	// a row without its key (NULL) matches nothing; the value a query
	// groups by cannot be NULL
	require.NoError(t, tab.Load(stringsReader(`{"raw": "h"}`+"\n"+`{"id": "00000000-0000-0000-0000-000000000002", "raw": "x"}`+"\n")))
	assert.Equal(t, 2, tab.Rows())
	assert.Len(t, st.Keys, 1)
	assert.ErrorContains(t, tab.Load(stringsReader(`{"id": "00000000-0000-0000-0000-000000000002"}`+"\n")), "table x: row 0: raw is NULL, and a query groups by it")
	p = mustCompile(t, `CREATE TABLE x (id UUID NOT NULL, raw BYTES(2)) WITH (connector = 'file', path = 'x.json', format = 'json');
		CREATE SOURCE q (ts BIGINT, u UUID) WITH (connector = 'stdin');
		SELECT raw, COUNT(*) AS n FROM q [ROWS 2] JOIN x ON q.u = x.id GROUP BY raw`)
	assert.ErrorContains(t, p.Table("x").Load(stringsReader(`{"raw": "h"}`+"\n")), `"id"`)
}
