package pipeline

import (
	"fmt"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/gpu"
	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/window"
)

// PlanLine says, in a line (saber-hx explain's plans), which kernel runs a
// query's spec (the fused kernel where the query fits and vectorised is
// false, else the vectorised kernels; a window join's pairs by nested
// loops), its window's panes, and whether the GPU can run it (else why
// not).
func PlanLine(sp engine.Spec, vectorised bool) string {
	if sp.Join != nil && sp.Join.Regular {
		return "regular join (a hash index per side, pairs as the later tuple is filed; state kept for ever); CPU only"
	}
	if sp.Join != nil {
		onGPU := "the GPU can run its pairs"
		if err := gpu.SupportedJoin(sp.Join); err != nil {
			onGPU = "CPU only: " + err.Error()
		}
		return "window join (pairs per window, nested loops); " + onGPU
	}
	p, err := kernels.CompileWith(sp.Query, kernels.Options{Vectorised: vectorised})
	if err != nil {
		return "cannot compile: " + err.Error()
	}
	kernel := "vectorised kernels"
	if p.Fused {
		kernel = "the fused kernel"
	}
	onGPU := "the GPU can run it"
	if err := gpu.Supported(p); err != nil {
		onGPU = "CPU only: " + err.Error()
	}
	if !sp.Query.Stateless() {
		if ws, err := window.NewSpec(sp.Query.Window); err == nil {
			kernel = fmt.Sprintf("panes of %d, %d per window; %s", ws.Pane, ws.Size/ws.Pane, kernel)
		}
		if sp.Query.Window.Delay != 0 {
			onGPU = "CPU only: a watermark delay (the GPU kernels have none)"
		}
	}
	return kernel + "; " + onGPU
}
