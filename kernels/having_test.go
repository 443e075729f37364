package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/window"
)

// TestHavingCompareMatchesInterpreted: HAVING aggregate op constant,
// compiled into one closure (havingCompare), decides every row as the
// interpreted tree of closures (compileRow) does, for each aggregate's
// kind of word (counts, integer and float sums, averages of both),
// integer and float constants, every operator, over random rows with
// zeros, negatives, NaNs and infinities. (Dropping the division by the
// count for an average of integers, or comparing an integer sum with a
// float constant as integers, fails it.)
func TestHavingCompareMatchesInterpreted(t *testing.T) {
	sc, err := query.NewSchema(32,
		query.Attribute{Name: "ts", Type: query.Int64, Offset: 0},
		query.Attribute{Name: "k", Type: query.Int32, Offset: 8},
		query.Attribute{Name: "i", Type: query.Int64, Offset: 16},
		query.Attribute{Name: "f", Type: query.Float32, Offset: 24},
	)
	require.NoError(t, err)
	aggs := []query.Aggregate{
		{Func: query.Count, As: "n"}, {Func: query.Sum, Arg: query.C("i"), As: "si"},
		{Func: query.Sum, Arg: query.C("f"), As: "sf"}, {Func: query.Avg, Arg: query.C("i"), As: "ai"},
		{Func: query.Avg, Arg: query.C("f"), As: "af"},
	}
	consts := []query.Expr{query.Int(0), query.Int(-3), query.Int(40), query.Float(40), query.Float(-0.5), query.Float(math.Inf(1))}
	ops := []query.CmpOp{query.Eq, query.Ne, query.Lt, query.Le, query.Gt, query.Ge}
	r := rand.New(rand.NewPCG(3, 4))
	floats := []float64{0, -1, 40, 39.5, math.NaN(), math.Inf(-1), math.Inf(1)}
	cases := 0
	for _, ag := range aggs {
		for _, c := range consts {
			for _, op := range ops {
				q := &query.Query{Name: "having", Schema: sc, Window: query.Tumbling(10),
					GroupBy: []query.Expr{query.C("k")}, Aggregates: aggs,
					Having: query.Cmp(query.C(ag.As), op, c)}
				p, err := Compile(q)
				require.NoError(t, err)
				fast := p.havingCompare(q.Having)
				require.NotNil(t, fast, "%s", q.Having)
				slow := p.compileRow(q.Having)
				st := window.NewGroupState(p.Layout)
				for g := range 200 {
					s := st.Lookup(uint64(g), 1)
					row := st.Row(s)
					row[0] = 1 + r.Int64N(5)
					for w := 1; w < len(row); w++ {
						if r.IntN(2) == 0 {
							row[w] = int64(math.Float64bits(floats[r.IntN(len(floats))] * float64(row[0])))
						} else {
							row[w] = r.Int64N(200) - 100
						}
					}
					assert.Equal(t, slow(st, s).i != 0, fast(st, s), "%s, row %v", q.Having, row)
					cases++
				}
			}
		}
	}
	assert.Equal(t, len(aggs)*len(consts)*len(ops)*200, cases)
}
