package kernels_test

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/window"
)

// abKernel is one contender of TestKernelsAlternating.
type abKernel struct {
	name string
	k    kernels.Kernel
}

// TestKernelsAlternating (SABER_HX_KERNEL_AB=ROUNDS, and
// SABER_HX_KERNEL_AB_WORKLOADS=ysb,sg1,... to choose) times each
// workload's kernels on one task in alternating rounds within one process,
// so that a busy machine's drift hits them alike, and prints each one's
// median speed relative to the first with the spread: the default kernel
// (fused where the shape fits) and the vectorised one. It measures; it
// asserts nothing about time.
func TestKernelsAlternating(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("SABER_HX_KERNEL_AB"))
	if rounds <= 0 {
		t.Skip("SABER_HX_KERNEL_AB=ROUNDS runs it")
	}
	names := []string{"ysb", "sg1", "agg"}
	// SABER_HX_KERNEL_AB_COPIES=N: the task in N places, run in turn, so
	// that it comes from L3 or memory as a run's tasks do, not from L2.
	copies, _ := strconv.Atoi(os.Getenv("SABER_HX_KERNEL_AB_COPIES"))
	copies = max(1, copies)
	if w := os.Getenv("SABER_HX_KERNEL_AB_WORKLOADS"); w != "" {
		names = strings.Split(w, ",")
	}
	for _, name := range names {
		var plan *kernels.Plan
		var task []byte
		var ks []abKernel
		for _, vec := range []bool{false, true} {
			var p *kernels.Plan
			if name == "ysb" {
				_, p, task = ysbKernel(t, vec)
			} else {
				var tasks [][]byte
				p, tasks = workloadTask(t, name, vec, 1)
				task = tasks[0]
			}
			if !vec || plan.Fused { // else the default is the vectorised kernel already
				ks = append(ks, abKernel{map[bool]string{false: "default", true: "vector"}[vec], p.NewKernel()})
			}
			if plan == nil {
				plan = p
			}
		}
		places := [][]byte{task}
		for range copies - 1 {
			places = append(places, slices.Clone(task))
		}
		rel := make([][]float64, len(ks))
		abs := make([][]float64, len(ks))
		var r window.TaskResult
		n := len(task) / plan.TupleSize
		for range rounds {
			ns := make([]float64, len(ks))
			for j, c := range ks {
				// The fastest of short bursts: a burst that lost its CPU
				// to another process is not the kernel's time.
				bursts, reps := 8, max(20, len(places))
				best := time.Duration(1 << 62)
				for range bursts {
					start := time.Now()
					for i := range reps {
						r.Reset(plan.Layout)
						r.Out = r.Out[:0]
						c.k.Process(places[i%len(places)], 0, &r)
					}
					best = min(best, time.Since(start))
				}
				ns[j] = float64(best.Nanoseconds()) / float64(reps) / float64(n)
			}
			for j := range ks {
				rel[j] = append(rel[j], ns[0]/ns[j])
				abs[j] = append(abs[j], ns[j])
			}
		}
		for j, c := range ks {
			s := slices.Sorted(slices.Values(rel[j]))
			a := slices.Sorted(slices.Values(abs[j]))
			fmt.Printf("%s (fused %v): %s: %.2f ns/tuple (median), speed relative to %s: median %.3f (%.3f-%.3f) over %d rounds\n",
				name, plan.Fused, c.name, a[len(a)/2], ks[0].name, s[len(s)/2], s[0], s[len(s)-1], rounds)
		}
	}
}
