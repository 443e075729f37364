//go:build cuda

package gpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
)

// TestCUDAJoinMatchesEmulator: the CUDA device's join program (its output
// buffers poisoned before every window) writes the emulator's pairs, which
// are the CPU's, on random windows and predicates, and on large windows
// of many blocks.
func TestCUDAJoinMatchesEmulator(t *testing.T) {
	d := openGPU(t)
	emu := NewEmulator()
	defer emu.Close()
	r := rand.New(rand.NewPCG(9, 99))
	run := func(j *query.WindowJoin, nl, nr int, msg string) {
		jp, err := d.CompileJoin(j)
		require.NoError(t, err, msg)
		defer func() { require.NoError(t, jp.Close()) }()
		jp.(*joinHost).be.(*cudaJoin).poison = true
		ep, err := emu.CompileJoin(j)
		require.NoError(t, err, msg)
		defer ep.Close()
		for w := range 3 {
			left := randSide(r, testSchema{s: j.Left, packed: j.Left.TupleSize == 57}, nl)
			right := randSide(r, testSchema{s: j.Right, packed: j.Right.TupleSize == 57}, nr)
			got, ok, err := jp.Join(left, right, []byte("p"))
			require.NoError(t, err, msg)
			require.True(t, ok, msg)
			want, ok, err := ep.Join(left, right, []byte("p"))
			require.NoError(t, err, msg)
			require.True(t, ok, msg)
			require.True(t, string(want) == string(got), "%s window %d (%dx%d): %d bytes, want %d", msg, w, nl, nr, len(got), len(want))
			if nl*nr <= 300*300 {
				require.True(t, string(want[1:]) == string(cpuJoin(t, j, left, right)), "%s: the emulator differs from the CPU", msg)
			}
		}
	}
	for c := range 80 {
		j := randJoin(r, t)
		sizes := []int{1, 2, 255, 256, 257, 1 + r.IntN(300), 1 + r.IntN(300)}
		run(j, sizes[r.IntN(len(sizes))], sizes[r.IntN(len(sizes))], fmt.Sprintf("case %d: WHERE %v", c, j.Where))
	}
	for _, packed := range []bool{false, true} {
		ts := newTestSchema(t, packed)
		for _, where := range []query.Expr{nil, query.Cmp(query.C("l.a"), query.Eq, query.C("r.b"))} {
			j := &query.WindowJoin{Name: "big", Left: ts.s, Right: ts.s, Window: query.Tumbling(10), Where: where}
			run(j, 700, 500, fmt.Sprintf("700x500 packed %v WHERE %v", packed, where))
		}
	}
}
