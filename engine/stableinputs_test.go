package engine

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/strview"
)

// TestStableInputsKeepTheirStrings: a query over an aggregation's rows
// (GROUP BY a string, long ones among them) reads its strings from the
// aggregation's dictionary without copies of its own (stableInputs), over
// many tasks at 1 and 2 workers, with the source's strings overwritten
// once written: every string it reads is the one the aggregation emitted.
// A query over a stateless query's output, whose strings live in memory
// that its tasks free, still copies them.
func TestStableInputsKeepTheirStrings(t *testing.T) {
	parallel(t)
	s, err := query.NewSchema(32,
		query.Attribute{Name: "ts", Type: query.Int64, Offset: 0},
		query.Attribute{Name: "n", Type: query.Int64, Offset: 8},
		query.Attribute{Name: "k", Type: query.String, Offset: 16})
	require.NoError(t, err)
	keys := []string{"a", "paris", "très long nom de ville", strings.Repeat("0123456789abcdef", 20), "tokyo-shinjuku-ward"}
	r := rand.New(rand.NewPCG(26, 30))
	for _, workers := range []int{1, 2} {
		t.Run(fmt.Sprintf("workers%d", workers), func(t *testing.T) {
			up := &query.Query{Name: "up", Schema: s, Window: query.Tumbling(10), GroupBy: []query.Expr{query.C("k")},
				Aggregates: []query.Aggregate{{Func: query.Count, As: "cnt"}}}
			out, err := up.OutputSchema()
			require.NoError(t, err)
			down := &query.Query{Name: "down", Schema: out, Project: []query.Projection{{Expr: query.C("k"), As: "k"}, {Expr: query.C("cnt"), As: "cnt"}}}
			view := &query.Query{Name: "view", Schema: s, Project: []query.Projection{{Expr: query.C("k"), As: "k"}}}
			viewOut, err := view.OutputSchema()
			require.NoError(t, err)
			after := &query.Query{Name: "after", Schema: viewOut, Project: []query.Projection{{Expr: query.C("k"), As: "k"}}}
			// Each output's rows read at once: (key, count) as strings.
			read := func(dst *[]string, sch *query.Schema) func([]byte) error {
				return func(b []byte) error {
					for o := 0; o+sch.TupleSize <= len(b); o += sch.TupleSize {
						tu := b[o : o+sch.TupleSize]
						a := sch.Attrs[1]
						row := string(strview.Bytes(tu[a.Offset : a.Offset+strview.Size]))
						if len(sch.Attrs) > 2 {
							row += fmt.Sprint("/", binary.LittleEndian.Uint64(tu[sch.Attrs[2].Offset:]))
						}
						*dst = append(*dst, row)
					}
					return nil
				}
			}
			var ups, downs, views, afters []string
			downOut, err := down.OutputSchema()
			require.NoError(t, err)
			afterOut, err := after.OutputSchema()
			require.NoError(t, err)
			e, err := Start(Config{Workers: workers, TaskSize: 32 * 64, BufferSize: 1 << 14}, []Spec{
				{Query: up, Tuples: read(&ups, out)},
				{Query: down, Upstream: Output(0), Tuples: read(&downs, downOut)},
				{Query: view, Tuples: read(&views, viewOut)},
				{Query: after, Upstream: Output(2), Tuples: read(&afters, afterOut)},
			})
			require.NoError(t, err)
			assert.True(t, e.streams[1].inputStable, "over an aggregation")
			assert.False(t, e.streams[3].inputStable, "over a stateless query")
			var a strview.Arena
			defer a.Free()
			for i := range 200 {
				b := make([]byte, 64*32)
				for j := range 64 {
					tu := b[j*32:]
					binary.LittleEndian.PutUint64(tu, uint64(i*64+j))
					strview.Put(tu[16:32], []byte(keys[r.IntN(len(keys))]), &a)
				}
				require.NoError(t, e.Stream(0).Write(b))
				require.NoError(t, e.Stream(2).Write(b))
				a.Reset() // the source's strings, overwritten by the next batch's
			}
			_, err = e.CloseAll()
			require.NoError(t, err)
			require.NotEmpty(t, ups)
			require.NotEmpty(t, views)
			assert.Equal(t, ups, downs)
			assert.Equal(t, views, afters)
		})
	}
}
