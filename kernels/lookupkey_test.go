package kernels_test

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/window"
)

// TestLookupJoinComputedKey: a lookup join whose key the kernel computes
// (query.StaticJoin.Key: in place as an affine column, by the row
// evaluator as MOD, of a nullable column) outputs, in order, each tuple
// whose key is in the table with the table's value, counts the others
// unmatched, and allocates nothing per task.
func TestLookupJoinComputedKey(t *testing.T) {
	s, err := query.NewSchema(24, query.Attribute{Name: "ts", Type: query.Int64, Logical: query.Time},
		query.Attribute{Name: "n", Type: query.Int64, Offset: 8, Nullable: true, NullBit: 16 * 8})
	require.NoError(t, err)
	vs, err := query.NewRowSchema(8, query.Attribute{Name: "v", Type: query.Int64})
	require.NoError(t, err)
	table := &query.StaticTable{KeyWidth: 8, ValueWidth: 8}
	for k := int64(-30); k < 60; k += 3 {
		table.Keys = append(table.Keys, binary.LittleEndian.AppendUint64(nil, uint64(k)))
		table.Values = append(table.Values, binary.LittleEndian.AppendUint64(nil, uint64(1000+k)))
	}
	r := rand.New(rand.NewPCG(3, 4))
	const n = 2500 // two whole chunks and a partial one
	data := make([]byte, n*s.TupleSize)
	for i := range n {
		o := i * s.TupleSize
		binary.LittleEndian.PutUint64(data[o:], uint64(i))
		binary.LittleEndian.PutUint64(data[o+8:], uint64(r.Int64N(200)-100))
		if r.IntN(10) == 0 {
			data[o+16] = 1
		}
	}
	for _, c := range []struct {
		name string
		key  query.Expr
		eval func(n int64) int64
	}{
		{"affine", query.Arith{Op: query.OpAdd, L: query.C("n"), R: query.Int(7)}, func(n int64) int64 { return n + 7 }},
		{"mod", query.Call{Fn: "mod", Args: []query.Expr{query.C("n"), query.Int(40)}}, func(n int64) int64 { return n % 40 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := &query.Query{Name: "lookup", Schema: s, Join: &query.StaticJoin{Key: c.key, Table: table, Values: vs},
				Project: []query.Projection{{Expr: query.C("n"), As: "n"}, {Expr: query.C("v"), As: "v"}}}
			p, err := kernels.Compile(q)
			require.NoError(t, err)
			var want []byte
			unmatched := uint64(0)
			for i := range n {
				o := i * s.TupleSize
				x := int64(binary.LittleEndian.Uint64(data[o+8:]))
				key := c.eval(x)
				if data[o+16] != 0 || key < -30 || key >= 60 || (key+30)%3 != 0 {
					unmatched++
					continue
				}
				want = binary.LittleEndian.AppendUint64(want, uint64(i))
				want = binary.LittleEndian.AppendUint64(want, uint64(x))
				want = binary.LittleEndian.AppendUint64(want, uint64(1000+key))
				want = append(want, 0) // n's NULL bit, clear: a NULL key matches nothing
			}
			require.Equal(t, 25, p.OutTupleSize)
			k := p.NewKernel()
			var res window.TaskResult
			res.Reset(p.Layout)
			k.Process(data, 0, &res)
			assert.Equal(t, want, res.Out)
			assert.Equal(t, uint64(n), res.Tuples)
			assert.Equal(t, unmatched, res.Unmatched)
			assert.Zero(t, testing.AllocsPerRun(20, func() {
				res.Reset(p.Layout)
				k.Process(data, 0, &res)
			}))
		})
	}
}

// TestComputedKeyRefusals: a computed key is a lookup join's, of a type
// the table's keys can match, and not beside a key column.
func TestComputedKeyRefusals(t *testing.T) {
	s, err := query.NewSchema(24, query.Attribute{Name: "ts", Type: query.Int64, Logical: query.Time},
		query.Attribute{Name: "n", Type: query.Int64, Offset: 8}, query.Attribute{Name: "f", Type: query.Float64, Offset: 16})
	require.NoError(t, err)
	vs, err := query.NewRowSchema(8, query.Attribute{Name: "v", Type: query.Int64})
	require.NoError(t, err)
	key := query.Arith{Op: query.OpAdd, L: query.C("n"), R: query.Int(1)}
	for _, c := range []struct {
		name string
		join query.StaticJoin
		err  string
	}{
		{"beside a column", query.StaticJoin{Column: "n", Key: key, Values: vs}, `a key column "n" and a key expression`},
		{"aggregation join", query.StaticJoin{Key: key, As: "v"}, "a computed key is for a lookup join"},
		{"float", query.StaticJoin{Key: query.C("f"), Values: vs}, "key f is float"},
		{"string keys", query.StaticJoin{Key: key, Values: vs, Table: &query.StaticTable{ValueWidth: 8}}, "the table has string keys"},
	} {
		j := c.join
		if j.Table == nil {
			j.Table = &query.StaticTable{KeyWidth: 8, ValueWidth: 8}
		}
		q := &query.Query{Name: "lookup", Schema: s, Join: &j}
		assert.ErrorContains(t, q.Validate(), c.err, c.name)
	}
}
