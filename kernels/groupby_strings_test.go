package kernels_test

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/strview"
)

// BenchmarkGroupByKey: COUNT and SUM per group in a tumbling window, one
// worker's kernel alone on a 256 KiB task, grouped by an INT key and by a
// VARCHAR key of the same 1,000 distinct values, long (out of line: name)
// and short (inline: short): what a string key costs the kernels (#25: at
// least 0.8x).
func BenchmarkGroupByKey(b *testing.B) {
	s, err := query.NewSchema(48,
		query.Attribute{Name: "ts", Type: query.Int64, Offset: 0},
		query.Attribute{Name: "k", Type: query.Int64, Offset: 8},
		query.Attribute{Name: "name", Type: query.String, Offset: 16},
		query.Attribute{Name: "short", Type: query.String, Offset: 32})
	require.NoError(b, err)
	a := strview.NewArena(0)
	defer a.Free()
	names := make([][]byte, 1000)
	for i := range names {
		names[i] = a.Copy(fmt.Appendf(nil, "customer-%04d-of-the-shop", i))
	}
	const n = 256 << 10 / 48
	task := make([]byte, n*48)
	for i := range n {
		t := task[i*48:]
		k := (i * 7919) % len(names)
		binary.LittleEndian.PutUint64(t, uint64(i/8))
		binary.LittleEndian.PutUint64(t[8:], uint64(k))
		strview.PutRef(t[16:32], names[k])
		strview.PutRef(t[32:48], fmt.Appendf(nil, "cust-%04d", k))
	}
	for _, key := range []string{"k", "name", "short"} {
		b.Run(key, func(b *testing.B) {
			q := &query.Query{Name: "g", Schema: s, Window: query.Tumbling(1000), GroupBy: []query.Expr{query.C(key)},
				Aggregates: []query.Aggregate{{Func: query.Count, As: "n"}, {Func: query.Sum, Arg: query.C("ts"), As: "s"}}}
			benchKernel(b, q, task)
		})
	}
}
