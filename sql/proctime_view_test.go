package sql

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
	"github.com/saber-hx/saber-hx/strview"
)

// TestNexmarkQ12Lowering: q12's view adds PROCTIME() AS p_time to bid:
// the source lays out a slot for it after the generator's tuple, and the
// window over p_time reads a part that makes it the tuples' time, followed
// by the one column the query reads.
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
	assert.Contains(t, ex, "  udf: time := p_time, then bidder\n", "the part outputs what the query reads")
	assert.Contains(t, ex, "  columns: p_time, bidder\n")
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
		{src + "SELECT k FROM (SELECT *, PROCTIME() AS p FROM s WHERE k > 1) AS x;", 57, "a subquery that adds PROCTIME() AS p is a plain projection of a source ((SELECT *, PROCTIME() AS p FROM source) AS s): no WHERE"},
		{src + "SELECT k FROM (SELECT *, PROCTIME() FROM s) AS x;", 26, "PROCTIME() needs a name in a subquery"},
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

// TestProcTimePartOutputsColumnsRead: the part before a window over a
// view's PROCTIME() outputs the processing time, then the columns the
// query reads (strings and NULLs included), each equal to the input's; a
// query that names a column the view does not have gets the input tuple
// whole, and the error lists every column.
func TestProcTimePartOutputsColumnsRead(t *testing.T) {
	const view = "CREATE VIEW pv AS SELECT *, PROCTIME() AS pt FROM e;\n"
	for _, tc := range []struct {
		name, sql string
		cols      []string // the part's columns after pt
	}{
		{"group by a string, aggregates, FILTER", `SELECT window_start, k, COUNT(*) AS cnt, SUM(n) AS sn, COUNT(s) AS cs,
			COUNT(*) FILTER (WHERE b) AS cb FROM TUMBLE(pv, pt, INTERVAL '1' HOUR) GROUP BY k`, []string{"k", "n", "b", "s"}},
		{"WHERE, HAVING, an alias named as a column", `SELECT window_end, m AS x, COUNT(*) AS cnt, COUNT(u) AS cu FROM TUMBLE(pv, pt, INTERVAL '1' HOUR)
			WHERE pv.c = 'red' OR s IS NULL GROUP BY m HAVING MIN(x) > 0`, []string{"m", "x", "s", "c", "u"}},
		{"the time alone", `SELECT window_start, COUNT(*) AS cnt FROM TUMBLE(pv, pt, INTERVAL '1' HOUR) GROUP BY window_start`, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a strview.Arena
			p, data := compileValues(t, view+tc.sql, 7, 5, &a)
			part := udfQuery(p)
			require.NotNil(t, part, p.Explain())
			out := part.Spec.Query.UDF.Output
			names := []string{}
			for _, at := range out.Attrs[1:] {
				names = append(names, at.Name)
			}
			assert.Equal(t, tc.cols, names)
			in := p.Source("e").Schema
			tuples := data["e"]
			got := part.Spec.Query.UDF.Fn(tuples, in.TupleSize, nil)
			require.Len(t, got, len(tuples)/in.TupleSize*out.TupleSize)
			iv, err := reference.DecodeTuples(in, tuples)
			require.NoError(t, err)
			ov, err := reference.DecodeTuples(out, got)
			require.NoError(t, err)
			pt := slices.IndexFunc(in.Attrs, func(at query.Attribute) bool { return at.Name == "pt" })
			require.GreaterOrEqual(t, pt, 0)
			nulls := 0
			for i := range ov {
				assert.Equal(t, iv[i][pt], ov[i][0], "tuple %d: the time", i)
				for j, at := range out.Attrs[1:] {
					k := slices.IndexFunc(in.Attrs, func(x query.Attribute) bool { return x.Name == at.Name })
					require.GreaterOrEqual(t, k, 0, at.Name)
					assert.Equal(t, iv[i][k], ov[i][j+1], "tuple %d, column %s", i, at.Name)
					if iv[i][k].Null {
						nulls++
					}
				}
			}
			if len(tc.cols) > 0 {
				assert.Positive(t, nulls, "the data has NULLs in the columns read")
			}
			checkProgram(t, p, data, &a, 97)
		})
	}
	e := compileErr(t, valuesBase+view+"SELECT window_start, COUNT(*) AS cnt, SUM(nn) AS s FROM TUMBLE(pv, pt, INTERVAL '1' HOUR) GROUP BY window_start")
	assert.Contains(t, e.Msg, "unknown column nn")
	assert.Contains(t, e.Msg, "pv.s, pv.c, pv.u", "every column of the view is listed")
}

// udfQuery is p's last query that runs a UDF (a part that times its
// input's tuples), nil where none does.
func udfQuery(p *Program) *Query {
	var found *Query
	for _, q := range p.Queries {
		if q.Spec.Query != nil && q.Spec.Query.UDF != nil {
			found = q
		}
	}
	return found
}

// TestColumnCopyPut: a part's copy of the columns read (columnCopy.put,
// a copy per run of adjacent columns) writes each column where the output
// schema has it, and the time first, against a column by column copy,
// over random layouts.
func TestColumnCopyPut(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 25))
	sizes := []int{1, 2, 4, 8, 8, 16, 24, 3}
	for round := range 200 {
		var from, to []query.Attribute
		in, out := 0, 8
		for i := range 1 + r.IntN(6) {
			n := sizes[r.IntN(len(sizes))]
			in += r.IntN(2) * 8 // now and then a gap: runs end there
			name := fmt.Sprint("c", i)
			from = append(from, query.Attribute{Name: name, Type: query.Bytes, Offset: in, Size: n})
			to = append(to, query.Attribute{Name: name, Type: query.Bytes, Offset: out, Size: n})
			in, out = in+n, out+n
		}
		schema, err := query.NewSchema(out, append([]query.Attribute{{Name: "t", Type: query.Int64, Offset: 0}}, to...)...)
		require.NoError(t, err, "round %d", round)
		cc := newColumnCopy(from, schema)
		tuple := make([]byte, in)
		for i := range tuple {
			tuple[i] = byte(r.Uint32())
		}
		at := r.Uint64()
		got := make([]byte, out)
		cc.put(got, at, tuple)
		want := binary.LittleEndian.AppendUint64(nil, at)
		for i, a := range from {
			want = append(want, tuple[a.Offset:a.Offset+a.Size]...)
			require.Equal(t, len(want), to[i].Offset+to[i].Size)
		}
		assert.Equal(t, want, got, "round %d: %v", round, from)
	}
}
