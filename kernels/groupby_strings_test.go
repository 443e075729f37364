package kernels_test

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/strview"
)

// BenchmarkGroupByKey: COUNT and SUM per group in a tumbling window, one
// worker's kernel alone on a 256 KiB task, grouped by an INT key and by a
// VARCHAR key of the same 1,000 distinct values, long (out of line: name)
// and short (inline: short): what a string key costs the kernels (#25: at
// least 0.8x). The encoded variants read the strings' numbers that a
// source's decoders write beside them (kernels.DictColumns) rather than the
// views.
func BenchmarkGroupByKey(b *testing.B) {
	const ts = 56 // the numbers of name and short at 48 and 52
	s, err := query.NewSchema(ts,
		query.Attribute{Name: "ts", Type: query.Int64, Offset: 0},
		query.Attribute{Name: "k", Type: query.Int64, Offset: 8},
		query.Attribute{Name: "name", Type: query.String, Offset: 16},
		query.Attribute{Name: "short", Type: query.String, Offset: 32})
	require.NoError(b, err)
	// As a source's decoders encode them: each distinct string once in
	// the dictionary, every view of it pointing there.
	dict := strview.NewDict()
	enc := &kernels.DictColumns{Dict: dict, Numbers: map[string]int{"name": 48, "short": 52}}
	dc := strview.NewDictCache(dict)
	const n = 256 << 10 / ts
	task := make([]byte, n*ts)
	for i := range n {
		t := task[i*ts:]
		k := (i * 7919) % 1000
		binary.LittleEndian.PutUint64(t, uint64(i/8))
		binary.LittleEndian.PutUint64(t[8:], uint64(k))
		binary.LittleEndian.PutUint32(t[48:], uint32(dc.Put(t[16:32], fmt.Appendf(nil, "customer-%04d-of-the-shop", k))))
		binary.LittleEndian.PutUint32(t[52:], uint32(dc.Put(t[32:48], fmt.Appendf(nil, "cust-%04d", k))))
	}
	for _, key := range []string{"k", "name", "short", "name/encoded", "short/encoded"} {
		b.Run(key, func(b *testing.B) {
			col, encoded := strings.CutSuffix(key, "/encoded")
			q := &query.Query{Name: "g", Schema: s, Window: query.Tumbling(1000), GroupBy: []query.Expr{query.C(col)},
				Aggregates: []query.Aggregate{{Func: query.Count, As: "n"}, {Func: query.Sum, Arg: query.C("ts"), As: "s"}}}
			var o kernels.Options
			if encoded {
				o.DictColumns = enc
			}
			benchKernelWith(b, q, task, o)
		})
	}
}
