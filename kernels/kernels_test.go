package kernels_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/window"
	"github.com/saber-hx/saber-hx/ysb"
)

func ysbKernel(t testing.TB, vectorised bool) (kernels.Kernel, *kernels.Plan, []byte) {
	gen, err := ysb.NewGenerator(ysb.DefaultGenConfig())
	require.NoError(t, err)
	p, err := kernels.CompileWith(ysb.Query(gen.Campaigns(), ysb.WindowMs), kernels.Options{Vectorised: vectorised})
	require.NoError(t, err)
	require.Equal(t, !vectorised, p.Fused, "YSB has the fused kernel's shape")
	k := p.NewKernel()
	task := make([]byte, 256<<10)
	gen.Fill(task, 0)
	return k, p, task
}

// TestProcessDoesNotAllocate: a task result reused across tasks allocates
// nothing in steady state, per tuple or per task.
func TestProcessDoesNotAllocate(t *testing.T) {
	for _, vec := range []bool{false, true} {
		k, p, task := ysbKernel(t, vec)
		var r window.TaskResult
		r.Reset(p.Layout)
		k.Process(task, 0, &r) // warm-up: the first fragment's state is allocated once
		allocs := testing.AllocsPerRun(100, func() {
			r.Reset(p.Layout)
			k.Process(task, 0, &r)
		})
		assert.Zero(t, allocs, "vectorised %v", vec)
		assert.Equal(t, uint64(len(task)/ysb.TupleSize), r.Tuples)
	}
}

func TestCompileRefusesWhatItCannotRun(t *testing.T) {
	gen, err := ysb.NewGenerator(ysb.DefaultGenConfig())
	require.NoError(t, err)
	q := ysb.Query(gen.Campaigns(), ysb.WindowMs)
	q.Window.Slide = 2 * q.Window.Size
	_, err = kernels.Compile(q)
	assert.ErrorContains(t, err, "slide")
}

func BenchmarkYSBKernel(b *testing.B) {
	for _, vec := range []bool{false, true} {
		b.Run(map[bool]string{false: "fused", true: "vectorised"}[vec], func(b *testing.B) {
			k, p, task := ysbKernel(b, vec)
			var r window.TaskResult
			b.SetBytes(int64(len(task)))
			b.ReportAllocs()
			for b.Loop() {
				r.Reset(p.Layout)
				k.Process(task, 0, &r)
			}
			b.ReportMetric(float64(b.N)*float64(len(task)/ysb.TupleSize)/b.Elapsed().Seconds()/1e6, "Mtuples/s")
		})
	}
}
