package engine

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/gpu"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
)

// TestGPUWindowJoin: a window join in gpu and hybrid modes on the emulator
// gives the reference evaluator's pairs and counters; with a predicate the
// GPU runs, the GPU join program computes the windows' pairs (range and
// row windows); with one it cannot run (deeper than the device's
// evaluation stack), the CPU joins every window.
func TestGPUWindowJoin(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	s := randSchema(t)
	r := rand.New(rand.NewPCG(41, 42))
	deep := query.Expr(query.C("l.c"))
	for range 20 {
		deep = query.Sub(query.C("r.a"), deep)
	}
	cases := []struct {
		name   string
		window query.Window
		where  query.Expr
		gpu    bool
	}{
		{"eq", query.Sliding(30, 10), query.Cmp(query.C("l.b"), query.Eq, query.C("r.b")), true},
		{"arith", query.Tumbling(20), query.Or(query.And(query.Cmp(query.C("l.a"), query.Lt, query.C("r.a")),
			query.Cmp(query.Add(query.C("l.c"), query.C("r.b")), query.Ge, query.Mul(query.C("r.c"), query.Int(2)))),
			query.Cmp(query.C("l.y"), query.Gt, query.C("r.x"))), true},
		{"none", query.Sliding(20, 5), nil, true},
		{"rows", query.Window{Type: query.Rows, Size: 40, Slide: 20}, query.Cmp(query.C("l.a"), query.Ne, query.C("r.b")), true},
		{"deep", query.Sliding(30, 10), query.Cmp(deep, query.Gt, query.Int(0)), false},
	}
	// Each case's inputs and the reference's pairs, the same for both
	// modes: the reference was a third of the test's time.
	type input struct {
		left, right []byte
		want        *reference.Result
	}
	inputs := make([]input, len(cases))
	for i, tc := range cases {
		j := &query.WindowJoin{Name: "j", Left: s, Right: s, Window: tc.window, Where: tc.where}
		// The right side's event times are the left's: windows with
		// tuples on both sides. 300 tuples a side: eq's inputs all have one
		// event time (one window of every tuple, 37000 pairs).
		left, right := randData(r, 300), randData(r, 300)
		for o := 0; o < len(left); o += randTuple {
			copy(right[o:o+8], left[o:o+8])
		}
		want, err := reference.EvaluateJoin(j, left, right)
		require.NoError(t, err)
		inputs[i] = input{left, right, want}
	}
	for _, mode := range []string{"gpu", "hybrid"} {
		for i, tc := range cases {
			t.Run(mode+"/"+tc.name, func(t *testing.T) {
				j := &query.WindowJoin{Name: "j", Left: s, Right: s, Window: tc.window, Where: tc.where}
				left, right, want := inputs[i].left, inputs[i].right, inputs[i].want
				dev := gpu.NewEmulator()
				defer dev.Close()
				e, js, pairs := startGPUJoin(t, dev, mode, j)
				errs := make(chan error, 2)
				go func() { errs <- e.Stream(0).Write(left) }()
				go func() { errs <- e.Stream(0).Right().Write(right) }()
				for range 2 {
					require.NoError(t, <-errs)
				}
				stats, err := e.CloseAll()
				require.NoError(t, err)

				assert.NotEmpty(t, want.Tuples)
				assert.True(t, string(want.Tuples) == string(*pairs), "join pairs differ: %d bytes, want %d", len(*pairs), len(want.Tuples))
				assert.Equal(t, want.Counts, reference.Counts{Tuples: stats[0].Tuples, Late: stats[0].Late, Counted: stats[0].Counted})
				windows, fallbacks := js.gpuJoined()
				assert.Zero(t, fallbacks)
				if tc.gpu {
					assert.NoError(t, js.gpuErr)
					assert.Positive(t, windows, "windows joined on the GPU")
				} else {
					assert.True(t, errors.Is(js.gpuErr, gpu.ErrNoKernel), "%v", js.gpuErr)
					assert.Zero(t, windows)
				}
				assert.Nil(t, js.gpu, "the join program is closed")
			})
		}
	}
	assertNoLeak(t, base)
}

// refusingJoinGPU is the emulator with a join program that refuses its
// first window, as a device refuses one whose pairs do not fit it: the
// engine joins that window on the CPU.
type refusingJoinGPU struct{ gpu.Device }

func (d refusingJoinGPU) CompileJoin(j *query.WindowJoin) (GPUJoinProgram, error) {
	p, err := d.Device.CompileJoin(j)
	if err != nil {
		return nil, err
	}
	return &refuseFirstJoin{JoinProgram: p}, nil
}

type refuseFirstJoin struct {
	gpu.JoinProgram
	refused bool
}

func (p *refuseFirstJoin) Join(left, right [][]byte, out []byte) ([]byte, bool, error) {
	if !p.refused {
		p.refused = true
		return out, false, nil
	}
	return p.JoinProgram.Join(left, right, out)
}

// TestGPUJoinRefusedOldestWindow: a window the device refuses waits for a
// worker to join it while the device joins every window after it, more
// than the bound of windows in flight (maxTaken): the oldest is still
// taken (it is what the others wait for), and the run ends with the
// reference's pairs.
func TestGPUJoinRefusedOldestWindow(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	s := randSchema(t)
	r := rand.New(rand.NewPCG(43, 44))
	j := &query.WindowJoin{Name: "j", Left: s, Right: s, Window: query.Tumbling(10)}
	// The left side first, a tuple a millisecond; then the right side in
	// one task of 16 tuples across the same second: its merge closes
	// every window at once, 16 of them with pairs.
	left, right := randData(r, 1000), randData(r, 16)
	for i := range 1000 {
		binary.LittleEndian.PutUint64(left[i*randTuple:], uint64(i))
	}
	for i := range 16 {
		binary.LittleEndian.PutUint64(right[i*randTuple:], uint64(i*64))
	}
	for _, mode := range []string{"gpu", "hybrid"} {
		t.Run(mode, func(t *testing.T) {
			dev := refusingJoinGPU{gpu.NewEmulator()}
			defer dev.Close()
			e, js, pairs := startGPUJoin(t, dev, mode, j)
			require.NoError(t, e.Stream(0).Write(left))
			require.NoError(t, e.Stream(0).Right().Write(right))
			require.NoError(t, closeAllWithin(t, e, 20*time.Second), "the refused window joined")
			want, err := reference.EvaluateJoin(j, left, right)
			require.NoError(t, err)
			assert.True(t, string(want.Tuples) == string(*pairs), "join pairs differ: %d bytes, want %d", len(*pairs), len(want.Tuples))
			windows, fallbacks := js.gpuJoined()
			assert.Equal(t, uint64(1), fallbacks, "the refused window")
			assert.Positive(t, windows)
		})
	}
	assertNoLeak(t, base)
}

// startGPUJoin starts window join j alone on one worker and dev, in mode
// gpu or hybrid; the join's output gathers in *pairs.
func startGPUJoin(t *testing.T, dev GPU, mode string, j *query.WindowJoin) (e *Engine, js *joinStage, pairs *[]byte) {
	t.Helper()
	pairs = new([]byte)
	cfg := Config{Workers: 1, TaskSize: randTuple * 16, BufferSize: 4096, GPU: dev, GPUOnly: mode == "gpu", GPUDepth: 2}
	e, err := Start(cfg, []Spec{{Join: j, Tuples: func(b []byte) error { *pairs = append(*pairs, b...); return nil }}})
	require.NoError(t, err)
	js = e.entries[0].join
	require.NotNil(t, js)
	return e, js, pairs
}
