package kernels

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
)

// TestFileRowsMatchesFileTuples: row windows' tuples filed pane by pane
// (fileRows) land as they do tuple by tuple (fileTuples), with watermarks
// set around the panes' Open, so that runs late whole are taken too: the
// same panes, runs, counters and watermark.
func TestFileRowsMatchesFileTuples(t *testing.T) {
	r := rand.New(rand.NewPCG(26, 20))
	s, err := query.NewSchema(16, query.Attribute{Name: "x", Type: query.Int64, Offset: 0})
	require.NoError(t, err)
	for c := range 200 {
		size := 1 + r.Int64N(40)
		w := query.Sliding(size, 1+r.Int64N(size))
		w.Type = query.Rows
		w.Delay = r.Int64N(3) * r.Int64N(10)
		j := &query.WindowJoin{Name: "j", Left: s, Right: s, Window: w}
		fast, err := NewWindowJoin(j)
		require.NoError(t, err)
		slow, err := NewWindowJoin(j)
		require.NoError(t, err)
		for range 20 {
			side := r.IntN(2)
			if r.IntN(4) == 0 { // a watermark ahead of the index
				wm := fast.sides[side].index + r.Int64N(3*size) - size
				fast.sides[side].wm, slow.sides[side].wm = wm, wm
			}
			in := make([]byte, 16*r.IntN(3*int(size)))
			for i := range in {
				in[i] = byte(r.Uint32())
			}
			for _, x := range []*WindowJoin{fast, slow} {
				x.adding = x.newInput()
				x.adding.tuples = append(x.adding.tuples, in...)
			}
			rf, okf := fast.fileRows(side)
			rs, oks := slow.fileTuples(side)
			require.Equal(t, oks, okf)
			require.Equal(t, rs, rf)
			fast.adding, slow.adding = nil, nil
			for k := range 2 {
				a, b := &fast.sides[k], &slow.sides[k]
				require.Equal(t, [4]int64{b.index, int64(b.tuples), int64(b.late), b.wm}, [4]int64{a.index, int64(a.tuples), int64(a.late), a.wm}, "case %d side %d", c, k)
				require.Equal(t, len(b.panes), len(a.panes))
				for i := range a.panes {
					assert.Equal(t, b.panes[i].pane, a.panes[i].pane)
					assert.Equal(t, b.panes[i].n, a.panes[i].n)
					assert.Equal(t, concat(b.panes[i].chunks), concat(a.panes[i].chunks), "case %d side %d pane %d", c, k, a.panes[i].pane)
				}
			}
		}
	}
}

func concat(chunks [][]byte) []byte {
	var b []byte
	for _, c := range chunks {
		b = append(b, c...)
	}
	return b
}
