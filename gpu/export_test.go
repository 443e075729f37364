package gpu

// Hooks for the external tests (package gpu_test, which may import
// packages that import gpu, such as workloads).

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/query"
)

// compileChecked, set by cuda_test.go, compiles p on a CUDA device with
// its outputs checked against the emulator's (compileCUDA); nil for other
// devices.
var compileChecked func(t *testing.T, d Device, p *kernels.Plan, depth int) *program

// RunCase compiles q for the CPU and for dev (Supported must accept it),
// runs data through both in tasks of random sizes up to maxTuples with
// depth slots (runCase), and returns the tasks and how many fell back.
func RunCase(t *testing.T, dev Device, q *query.Query, data []byte, seed uint64, depth, maxTuples int) (tasks, fallbacks int) {
	t.Helper()
	p, pg := compilePlans(t, q, kernels.Options{})
	require.NoError(t, Supported(p))
	var pr *program
	if compileChecked != nil {
		pr = compileChecked(t, dev, pg, depth)
	}
	if pr == nil {
		pr = compileEmu(t, dev, pg, depth)
	}
	return runCase(t, rand.New(rand.NewPCG(seed, 1)), p, pr, data, maxTuples, q.Name)
}
