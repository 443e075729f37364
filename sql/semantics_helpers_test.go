package sql

import (
	"encoding/binary"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
	"github.com/saber-hx/saber-hx/strview"
)

// semTuples lays out rows of source src: row i's event time is
// 1000+100*i ms, then its values for the columns after the event time in
// their declared order (as putValues takes them).
func semTuples(t *testing.T, src *Source, a *strview.Arena, rows ...[]any) []byte {
	t.Helper()
	s := src.Schema
	data := make([]byte, len(rows)*s.TupleSize)
	for i, row := range rows {
		tup := data[i*s.TupleSize : (i+1)*s.TupleSize]
		binary.LittleEndian.PutUint64(tup, uint64(1000+100*i))
		require.Len(t, row, len(src.Columns)-1, "row %d", i)
		putValues(t, src, a, tup, 1, row)
	}
	return data
}

// putValues writes row's values into tuple tup of source src, value k
// into column first+k: int64 or int for integers and times, float64 for
// floats, bool, string (an ENUM's by its label), nil for NULL.
func putValues(t *testing.T, src *Source, a *strview.Arena, tup []byte, first int, row []any) {
	t.Helper()
	le := binary.LittleEndian
	for k, v := range row {
		col := src.Columns[first+k]
		at := col.Attr
		b := tup[at.Offset : at.Offset+at.Size]
		switch v := v.(type) {
		case nil:
			require.True(t, at.Nullable, at.Name)
			at.SetNull(tup, true)
		case int:
			putInt(b, at, int64(v))
		case int64:
			putInt(b, at, v)
		case float64:
			if at.Type == query.Float32 {
				le.PutUint32(b, math.Float32bits(float32(v)))
			} else {
				le.PutUint64(b, math.Float64bits(v))
			}
		case bool:
			if v {
				le.PutUint32(b, 1)
			}
		case string:
			if col.Labels != nil {
				code := slices.Index(col.Labels, v)
				require.GreaterOrEqual(t, code, 0, "%s is no label of %s", v, at.Name)
				putInt(b, at, int64(code))
				continue
			}
			strview.Put(b, []byte(v), a)
		default:
			t.Fatalf("value %v of %T", v, v)
		}
	}
}

func putInt(b []byte, at query.Attribute, v int64) {
	if at.Type == query.Int32 {
		binary.LittleEndian.PutUint32(b, uint32(v))
		return
	}
	binary.LittleEndian.PutUint64(b, uint64(v))
}

// semRun compiles text, runs it over the rows of its source e through
// the engine, checks every query against the reference, and returns the
// program and the outputs of the stateless queries as text (a value per
// column, as reference.Value prints it, "NULL" for NULL).
func semRun(t *testing.T, text string, rows ...[]any) (*Program, [][][]string) {
	t.Helper()
	return semRunTasks(t, text, 64, rows...)
}

// semRunTasks is semRun with tasks of taskTuples tuples.
func semRunTasks(t *testing.T, text string, taskTuples int, rows ...[]any) (*Program, [][][]string) {
	t.Helper()
	a := strview.NewArena(1 << 16)
	t.Cleanup(a.Free)
	p := mustCompile(t, text)
	data := map[string][]byte{"e": semTuples(t, p.Source("e"), a, rows...)}
	outs := checkProgram(t, p, data, a, taskTuples)
	texts := make([][][]string, len(outs))
	for i, o := range outs {
		if mq := p.Queries[i].Spec.Query; mq == nil || !mq.Stateless() {
			continue
		}
		vs, err := reference.DecodeTuples(p.Queries[i].Output, o.tuples)
		require.NoError(t, err)
		for _, row := range vs {
			var r []string
			for _, v := range row[1:] {
				r = append(r, v.Text())
			}
			texts[i] = append(texts[i], r)
		}
	}
	return p, texts
}
