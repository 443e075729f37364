package kernels_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/window"
	"github.com/saber-hx/saber-hx/workloads"
)

// kernelWorkloads are the workloads whose query is one kernel's: the C
// yardstick's seven, and agg and proj.
var kernelWorkloads = []string{"cm1", "cm2", "sg1", "sg2", "lrb1", "groupby", "select", "agg", "proj"}

// workloadTask compiles workload name's default query and fills tasks
// consecutive tasks of 256 KiB of its stream.
func workloadTask(t testing.TB, name string, vectorised bool, tasks int) (*kernels.Plan, [][]byte) {
	w, err := workloads.Lookup(name)
	require.NoError(t, err)
	p := workloads.DefaultParams()
	q, err := w.Build(p)
	require.NoError(t, err)
	plan, err := kernels.CompileWith(q, kernels.Options{Vectorised: vectorised})
	require.NoError(t, err)
	gen, err := w.NewGenerator(p)
	require.NoError(t, err)
	ts := q.Schema.TupleSize
	size := (256 << 10) / ts * ts
	var out [][]byte
	for i := range tasks {
		b := make([]byte, size)
		gen.Fill(b, uint64(i*size/ts))
		out = append(out, b)
	}
	return plan, out
}

// TestWorkloadKernelsDoNotAllocate: in steady state a task of every
// workload allocates nothing, the fragments' group states reused through
// the task result. The tasks follow each other in the stream, so that
// panes move on as they do in a run.
func TestWorkloadKernelsDoNotAllocate(t *testing.T) {
	for _, name := range kernelWorkloads {
		for _, vec := range []bool{false, true} {
			plan, tasks := workloadTask(t, name, vec, 8)
			k := plan.NewKernel()
			var r window.TaskResult
			ts := uint64(plan.TupleSize)
			run := func(i int) {
				r.Reset(plan.Layout)
				k.Process(tasks[i%len(tasks)], uint64(i%len(tasks))*uint64(len(tasks[0]))/ts, &r)
			}
			for i := range 2 * len(tasks) { // warm-up: states grow to their size once
				run(i)
			}
			i := 0
			allocs := testing.AllocsPerRun(50, func() {
				run(i)
				i++
			})
			assert.Zero(t, allocs, "%s (vectorised %v): allocations per task", name, vec)
			assert.Equal(t, uint64(len(tasks[0]))/ts, r.Tuples, name)
		}
	}
}

// BenchmarkWorkloadKernels: one worker's kernel alone on a task of each
// workload (the vectorised kernels; the fused one serves YSB alone).
func BenchmarkWorkloadKernels(b *testing.B) {
	for _, name := range kernelWorkloads {
		b.Run(name, func(b *testing.B) {
			plan, tasks := workloadTask(b, name, true, 1)
			if plan.Layout != nil && plan.Layout.Hashed {
				// As in a run, where an Assembler merges the fragments by
				// key: the kernel may make direct tables.
				window.NewAssembler(plan.Spec, plan.Layout)
			}
			k := plan.NewKernel()
			var r window.TaskResult
			task := tasks[0]
			b.SetBytes(int64(len(task)))
			b.ReportAllocs()
			for b.Loop() {
				r.Reset(plan.Layout)
				k.Process(task, 0, &r)
			}
			b.ReportMetric(float64(b.N)*float64(len(task)/plan.TupleSize)/b.Elapsed().Seconds()/1e6, "Mtuples/s")
		})
	}
}

// TestWorkloadAssemblyDoesNotAllocate: a task of every windowed workload,
// through its kernel and the window assembler (windows emitted, sliding
// ones through their aggregator: a running sum for these invertible
// queries), allocates nothing in steady state. Windows longer than 10 s
// are cut to 10 s (slide 1 s) so that the warm-up fills them quickly; the
// layouts and group counts stay the workloads' own.
func TestWorkloadAssemblyDoesNotAllocate(t *testing.T) {
	for _, name := range []string{"cm1", "cm2", "sg1", "sg2", "lrb1", "groupby", "agg"} {
		w, err := workloads.Lookup(name)
		require.NoError(t, err)
		p := workloads.DefaultParams()
		if win := w.DefaultWindow; win.Size > 10000 {
			win.Size, win.Slide = 10000, 1000
			p.Window = win
		}
		q, err := w.Build(p)
		require.NoError(t, err)
		plan, err := kernels.Compile(q)
		require.NoError(t, err)
		gen, err := w.NewGenerator(p)
		require.NoError(t, err)
		k := plan.NewKernel()
		asm := window.NewAssembler(plan.Spec, plan.Layout)
		ts := plan.TupleSize
		task := make([]byte, (256<<10)/ts*ts)
		n := uint64(len(task) / ts)
		var r window.TaskResult
		var k0, rows uint64
		emit := func(o *window.Result) error { rows += uint64(len(o.Rows)); return nil }
		step := func() {
			gen.Fill(task, k0)
			r.Reset(plan.Layout)
			k.Process(task, k0, &r)
			k0 += n
			if err := asm.Merge(&r, emit); err != nil {
				panic(err)
			}
		}
		for range 400 { // past a window and the states' growth
			step()
		}
		// Each run covers a slide's worth of tasks, so that it emits a
		// window (AllocsPerRun rounds an average below one down to zero).
		slide := uint64(q.Window.Slide) * uint64(w.DefaultTuplesPerMs)
		per := max(1, int((slide+n-1)/n))
		allocs := testing.AllocsPerRun(20, func() {
			for range per {
				step()
			}
		})
		assert.Zero(t, allocs, "%s: allocations per slide of %d tasks, kernel and assembly", name, per)
		assert.Positive(t, rows, name)
		c := asm.Counters
		assert.Equal(t, c.Tuples, c.Counted+c.Filtered, "%s: every tuple counted or filtered, none late", name)
	}
}
