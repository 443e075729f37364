package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/strview"
)

// TestDirectColumnsMatchReference: columns passed through unchanged are
// copied as byte runs (merged where adjacent in both tuples), in any
// order, repeated, between computed columns, beside a NULL-able column
// (computed where the task has NULLs, copied where it has none), under a
// WHERE that keeps some tuples of a chunk; the rows are the reference
// evaluator's.
func TestDirectColumnsMatchReference(t *testing.T) {
	const ts = 56 // a int64 at 8, b float64 at 16, s string at 24, n int64 at 40, c int32 at 48, NULL bit at 52
	s, err := query.NewSchema(ts, query.Attribute{Name: "ts", Type: query.Int64},
		query.Attribute{Name: "a", Type: query.Int64, Offset: 8},
		query.Attribute{Name: "b", Type: query.Float64, Offset: 16},
		query.Attribute{Name: "s", Type: query.String, Offset: 24},
		query.Attribute{Name: "n", Type: query.Int64, Offset: 40, Nullable: true, NullBit: 52 * 8},
		query.Attribute{Name: "c", Type: query.Int32, Offset: 48})
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(9, 99))
	const n = 2500
	var arena strview.Arena
	defer arena.Free()
	data := make([]byte, n*ts)
	words := []string{"x", "a longer string than sixteen bytes", "", "Paris"}
	for i := range n {
		tu := data[i*ts : (i+1)*ts]
		binary.LittleEndian.PutUint64(tu, uint64(1000+i))
		binary.LittleEndian.PutUint64(tu[8:], uint64(r.Int64N(100)-50))
		binary.LittleEndian.PutUint64(tu[16:], math.Float64bits(r.Float64()*10))
		strview.Put(tu[24:40], []byte(words[r.IntN(len(words))]), &arena)
		if i < n/2 && r.IntN(4) == 0 { // tasks of the second half have none
			s.Attrs[4].SetNull(tu, true)
		} else {
			binary.LittleEndian.PutUint64(tu[40:], uint64(r.Int64N(9)))
		}
		binary.LittleEndian.PutUint32(tu[48:], uint32(int32(r.Int64N(1000)-500)))
	}
	a, b, str := query.C("a"), query.C("b"), query.C("s")
	projections := [][]query.Projection{
		{{Expr: a}, {Expr: b}, {Expr: str}, {Expr: query.Call{Fn: "upper", Args: []query.Expr{str}}, As: "u"}},
		{{Expr: str}, {Expr: a, As: "a2"}, {Expr: query.C("n")}, {Expr: a}, {Expr: query.C("c")}, {Expr: b}},
		{{Expr: query.Add(a, query.Int(1)), As: "a1"}, {Expr: b}, {Expr: query.C("n")}, {Expr: str, As: "s2"}},
	}
	for _, where := range []query.Expr{nil, query.Compare{Op: query.Gt, L: a, R: query.Int(0)}} {
		for _, proj := range projections {
			q := &query.Query{Name: "direct", Schema: s, Where: where, Project: proj}
			plan, err := Compile(q)
			require.NoError(t, err)
			kern := plan.NewKernel()
			sw, ok := kern.(*nullSwitch)
			require.True(t, ok, "kernels with and without NULLs, not %T", kern)
			for _, k := range []Kernel{sw.nulls, sw.none} {
				k, ok := k.(*statelessKernel)
				require.True(t, ok, "a stateless kernel, not %T", k)
				require.True(t, k.general, "strings in the output: appendGeneral writes it")
				assert.Contains(t, k.direct, true, "a column passed through")
			}
			want, got := statelessRows(t, plan, kern, data, 500)
			assert.Equal(t, want, got, "%v WHERE %v", proj, where)
		}
	}
}
