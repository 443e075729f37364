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

// TestStatelessCopiesWhatPasses: a SELECT * keeps, in order, exactly the
// tuples its WHERE holds for, whether it has none (the task copied whole),
// one that holds for every tuple of a chunk (the chunk copied whole), or
// one that holds for some; its counts and MaxTS are the task's.
func TestStatelessCopiesWhatPasses(t *testing.T) {
	s, err := query.NewSchema(24, query.Attribute{Name: "timestamp", Type: query.Int64},
		query.Attribute{Name: "a", Type: query.Int64, Offset: 8}, query.Attribute{Name: "b", Type: query.Int32, Offset: 16})
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(1, 2))
	const n = 3000 // several chunks and a partial one
	data := make([]byte, n*s.TupleSize)
	for i := range n {
		o := i * s.TupleSize
		binary.LittleEndian.PutUint64(data[o:], uint64(i/7))
		a := r.Int64N(100)
		if i >= 1024 && i < 2048 {
			a = 50 + r.Int64N(50) // a chunk where `a >= 50` holds for all
		}
		binary.LittleEndian.PutUint64(data[o+8:], uint64(a))
		binary.LittleEndian.PutUint32(data[o+16:], uint32(r.Int32()))
	}
	for _, c := range []struct {
		name  string
		where query.Expr
		keep  func(a int64) bool
	}{
		{"none", nil, func(int64) bool { return true }},
		{"all of a chunk", query.Cmp(query.C("a"), query.Ge, query.Int(50)), func(a int64) bool { return a >= 50 }},
		{"always", query.Cmp(query.C("a"), query.Ge, query.Int(0)), func(int64) bool { return true }},
		{"never", query.Cmp(query.C("a"), query.Lt, query.Int(0)), func(int64) bool { return false }},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := kernels.Compile(&query.Query{Name: "sel", Schema: s, Where: c.where})
			require.NoError(t, err)
			var want []byte
			for o := 0; o < len(data); o += s.TupleSize {
				if c.keep(int64(binary.LittleEndian.Uint64(data[o+8:]))) {
					want = append(want, data[o:o+s.TupleSize]...)
				}
			}
			k := p.NewKernel()
			var res window.TaskResult
			res.Reset(p.Layout)
			k.Process(data, 0, &res)
			assert.Equal(t, want, res.Out)
			assert.Equal(t, uint64(n), res.Tuples)
			assert.Equal(t, uint64(n-len(want)/s.TupleSize), res.Filtered)
			assert.Equal(t, int64((n-1)/7), res.MaxTS)
			allocs := testing.AllocsPerRun(20, func() {
				res.Reset(p.Layout)
				k.Process(data, 0, &res)
			})
			assert.Zero(t, allocs)
		})
	}
}
