package kernels_test

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/window"
)

// TestYSBKernelsAlternating (SABER_HX_KERNEL_AB=ROUNDS) times YSB's kernels
// on one task in alternating rounds within one process, so that a busy
// machine's drift hits them alike, and prints each one's median ratio to
// the fused kernel with the spread. It measures; it asserts nothing about
// time.
func TestYSBKernelsAlternating(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("SABER_HX_KERNEL_AB"))
	if rounds <= 0 {
		t.Skip("SABER_HX_KERNEL_AB=ROUNDS runs it")
	}
	fused, p, task := ysbKernel(t, false)
	dense, _, _ := ysbKernel(t, true)
	vp, err := kernels.CompileWith(p.Query, kernels.Options{Vectorised: true})
	require.NoError(t, err)
	hashed, err := kernels.NewHashedKernelForTest(vp)
	require.NoError(t, err)
	ks := []kernels.Kernel{fused, dense, hashed}
	names := []string{"fused", "dense", "hashed"}
	ratios := make([][]float64, len(ks))
	var r window.TaskResult
	for range rounds {
		var ns [3]float64
		for j, k := range ks {
			// The fastest of short bursts: a burst that lost its CPU to
			// another process is not the kernel's time.
			const bursts, reps = 8, 20
			best := time.Duration(1 << 62)
			for range bursts {
				start := time.Now()
				for range reps {
					r.Reset(p.Layout)
					k.Process(task, 0, &r)
				}
				best = min(best, time.Since(start))
			}
			ns[j] = float64(best.Nanoseconds()) / reps / float64(len(task)/128)
		}
		for j := range ks {
			ratios[j] = append(ratios[j], ns[0]/ns[j])
		}
		t.Logf("ns/tuple: fused %.2f dense %.2f hashed %.2f", ns[0], ns[1], ns[2])
	}
	for j := range ks {
		s := slices.Sorted(slices.Values(ratios[j]))
		fmt.Printf("%s/fused speed: median %.3f (%.3f-%.3f) over %d rounds\n", names[j], s[len(s)/2], s[0], s[len(s)-1], rounds)
	}
}
