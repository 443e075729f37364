package gpu

import "testing"

// TestEmulatorSelectionTwoPass: the random queries with selections compacted by sel_compact, which evaluates WHERE again
// (SABER_HX_GPU_SEL=twopass), rather than by sel_compact_flags, which
// reads sel_count's flags: the same results as the CPU kernels.
func TestEmulatorSelectionTwoPass(t *testing.T) {
	t.Setenv("SABER_HX_GPU_SEL", "twopass")
	TestEmulatorMatchesCPURandomQueries(t)
}
