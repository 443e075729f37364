package gpu_test

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/gpu"
	"github.com/saber-hx/saber-hx/internal/testenv"
	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/workloads"
)

// benchCase is one of saber-hx bench's synthetic workloads with its
// parameters.
type benchCase struct {
	workload string
	params   func(p *workloads.Params)
	late     bool // move one tuple in 100 back by up to 0.9 s (late for 1 s windows, within a task's pane range)
}

func (c benchCase) String() string {
	p := workloads.DefaultParams()
	c.params(&p)
	switch c.workload {
	case "select":
		return fmt.Sprintf("select predicates=%d selectivity=%v", p.Predicates, p.Selectivity)
	case "proj":
		return fmt.Sprintf("proj attributes=%d depth=%d", p.Attributes, p.ExprDepth)
	}
	return fmt.Sprintf("groupby groups=%d window=%+v tuples/ms=%d late=%v", p.Groups, p.Window, p.TuplesPerMs, c.late)
}

// benchCases: select with 1, 5 and 30 predicates (and selectivities 0,
// 0.5, 1) and 256, proj with 1..6 attributes of depth 1..4 and 16 of
// depth 8, groupby with 1, 64 and
// 1024 groups (tumbling, and a sliding window), with late tuples too.
func benchCases() []benchCase {
	var cs []benchCase
	for _, n := range []int{1, 5, 30} {
		for _, s := range []float64{0, 0.5, 1} {
			cs = append(cs, benchCase{workload: "select", params: func(p *workloads.Params) { p.Predicates, p.Selectivity = n, s }})
		}
	}
	for m := 1; m <= 6; m++ {
		for d := 1; d <= 4; d++ {
			cs = append(cs, benchCase{workload: "proj", params: func(p *workloads.Params) { p.Attributes, p.ExprDepth = m, d }})
		}
	}
	// The compute-heavy cases the GPU bundle's run.sh measures.
	cs = append(cs, benchCase{workload: "select", params: func(p *workloads.Params) { p.Predicates = 256 }},
		benchCase{workload: "proj", params: func(p *workloads.Params) { p.Attributes, p.ExprDepth = 16, 8 }})
	for _, g := range []int{1, 64, 1024} {
		// The default rate, 1000 tuples per ms: one window per 1M tuples.
		cs = append(cs, benchCase{workload: "groupby", params: func(p *workloads.Params) { p.Groups = g }})
		// 10 tuples per ms: windows inside and across tasks, late tuples.
		cs = append(cs, benchCase{workload: "groupby", params: func(p *workloads.Params) { p.Groups, p.TuplesPerMs = g, 10 }, late: true})
		cs = append(cs, benchCase{workload: "groupby", params: func(p *workloads.Params) {
			p.Groups, p.TuplesPerMs, p.Window = g, 10, query.Sliding(2000, 500)
		}, late: true})
	}
	return cs
}

// runBench runs every bench case on dev: the workload's own query and
// generated data, tasks of up to 8192 tuples (256 KiB, the engine's default
// task size), against the CPU kernels; with only, just the cases of those
// workloads.
func runBench(t *testing.T, dev gpu.Device, tuples int, only ...string) {
	for i, c := range benchCases() {
		if len(only) > 0 && !slices.Contains(only, c.workload) {
			continue
		}
		t.Run(fmt.Sprintf("%d-%s", i, c.workload), func(t *testing.T) {
			w, err := workloads.Lookup(c.workload)
			require.NoError(t, err)
			p := workloads.DefaultParams()
			p.Seed = uint64(i)
			c.params(&p)
			q, err := w.Build(p)
			require.NoError(t, err)
			pl, err := kernels.Compile(q)
			require.NoError(t, err)
			require.NoError(t, gpu.Supported(pl), "%s", c)
			g, err := w.NewGenerator(p)
			require.NoError(t, err)
			size := w.Schema.TupleSize
			data := make([]byte, tuples*size)
			g.Fill(data, 0)
			if c.late {
				r := rand.New(rand.NewPCG(uint64(i), 3))
				for k := 0; k < tuples; k++ {
					if r.IntN(100) == 0 {
						et := int64(binary.LittleEndian.Uint64(data[k*size:]))
						binary.LittleEndian.PutUint64(data[k*size:], uint64(et-r.Int64N(900)))
					}
				}
			}
			nt, nf := gpu.RunCase(t, dev, q, data, uint64(i), 4, 8192)
			t.Logf("%s: %s: %d tasks, %d fell back", c, q.Name, nt, nf)
			if c.late {
				assert.LessOrEqual(t, 4*nf, nt, "late tuples within the slack do not fall back: at most a quarter of the tasks (nt/4 is 0 for a short run)")
			} else {
				assert.Zero(t, nf, "in-order tuples never fall back")
			}
		})
	}
}

// TestEmulatorBenchWorkloads: saber-hx bench's select, proj and groupby
// workloads (built by package workloads, their generated data) have GPU
// kernels, and the emulator's results are the CPU kernels'.
func TestEmulatorBenchWorkloads(t *testing.T) {
	dev := gpu.NewEmulator()
	defer dev.Close()
	// The long run's 100000, at most 10000 under -short, 10000 by default.
	n := testenv.Scale(10000, 100000)
	if testing.Short() {
		n = min(n, 10000)
	}
	runBench(t, dev, n)
}

// TestEmulatorBenchWorkloadsTwoPass: the same with selections compacted
// by sel_compact, which evaluates WHERE again (SABER_HX_GPU_SEL=twopass),
// instead of sel_compact_flags, which reads sel_count's flags.
func TestEmulatorBenchWorkloadsTwoPass(t *testing.T) {
	t.Setenv("SABER_HX_GPU_SEL", "twopass")
	dev := gpu.NewEmulator()
	defer dev.Close()
	runBench(t, dev, 30000, "select")
}
