package main

// The short table on stdout and in summary.txt.

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

func table(w io.Writer, r *Results) {
	fmt.Fprintf(w, "== steps (the measurement runs that passed: counted, not listed)\n")
	var measured, skipped int
	for _, s := range r.Steps {
		if s.Kind == "measure" && s.Status == "pass" {
			measured++
			continue
		}
		if s.Kind == "measure" && s.Status == "skipped" {
			skipped++
			continue
		}
		extra := ""
		if s.Tests != nil {
			extra = fmt.Sprintf("  tests: %d passed, %d failed, %d skipped", s.Tests.Pass, s.Tests.Fail, s.Tests.Skip)
			if len(s.Tests.Failed) > 0 {
				extra += " (" + strings.Join(s.Tests.Failed, " ") + ")"
			}
		}
		fmt.Fprintf(w, "%-8s %-34s %6.1f s%s\n", s.Status, s.Name, s.Seconds, extra)
	}
	fmt.Fprintf(w, "%d measurement runs passed, %d skipped for time\n", measured, skipped)
	if len(r.Bandwidth) > 0 {
		fmt.Fprintf(w, "== copy bandwidth from page-locked memory (GB/s)\n")
		for _, b := range r.Bandwidth {
			fmt.Fprintf(w, "%8d KiB  host to device %6.1f  device to host %6.1f\n", b.KiB, b.H2DGBs, b.D2HGBs)
		}
	}
	if len(r.Figures) > 0 {
		fmt.Fprintf(w, "== throughput, median of the repetitions (M tuples/s)\n")
		fmt.Fprintf(w, "%-7s %-8s %6s %-7s %-26s %9s %7s %6s %8s %8s %8s %s\n", "group", "workload", "task", "mode", "policy",
			"M tup/s", "spread", "gpu%", "in us", "kern us", "out us", "reps")
		for _, f := range r.Figures {
			pol := f.Policy
			if f.Static != "" {
				pol += " " + f.Static
			}
			if f.Extra != "" {
				pol += " " + strings.TrimPrefix(f.Extra, "SABER_HX_")
			}
			note := fmt.Sprintf("%d", len(f.TuplesPerS))
			if f.FailedRuns > 0 {
				note += fmt.Sprintf(" (%d failed)", f.FailedRuns)
			}
			if !f.AllValidated {
				note += " NOT VALIDATED"
			}
			fmt.Fprintf(w, "%-7s %-8s %6s %-7s %-26s %9.2f %7.3f %6.1f %8.1f %8.1f %8.1f %s\n", f.Group, f.Workload, size(f.TaskSize),
				f.Mode, pol, f.Median/1e6, f.Spread, 100*f.GPUShare, f.CopyInUsP50, f.KernelUsP50, f.CopyOutUsP50, note)
		}
	}
	if len(r.Ratios) > 0 {
		fmt.Fprintf(w, "== hybrid / best single processor, hybrid (hls) / best static binding\n")
		for _, x := range r.Ratios {
			fmt.Fprintf(w, "%-8s %6s  cpu %8.2f  gpu %8.2f  hybrid %8.2f  best %s  hybrid/best %.3f", x.Workload, size(x.TaskSize),
				x.CPU/1e6, x.GPU/1e6, x.Hybrid/1e6, x.BestSingle, x.HybridOverBest)
			if x.HLSOverBestStatic > 0 {
				fmt.Fprintf(w, "  static cpu %.2f gpu %.2f  hls/best-static %.3f", x.StaticCPU/1e6, x.StaticGPU/1e6, x.HLSOverBestStatic)
			}
			fmt.Fprintln(w)
		}
	}
	if len(r.Scaling) > 0 {
		fmt.Fprintf(w, "== CPU scaling, cpu mode (M/s at each number of workers, speedup over 1, serial fraction)\n")
		last := ""
		for _, p := range r.Scaling {
			if p.Workload != last {
				if last != "" {
					fmt.Fprintln(w)
				}
				fmt.Fprintf(w, "%-12s %-8s", p.Workload, p.Unit)
				last = p.Workload
			}
			if p.Failed {
				fmt.Fprintf(w, "  %d: failed", p.Workers)
				continue
			}
			fmt.Fprintf(w, "  %d: %.2f (%.2fx, %.2f)", p.Workers, p.PerS/1e6, p.Speedup, p.SerialFraction)
		}
		fmt.Fprintln(w)
	}
	if len(r.Pipeline) > 0 {
		fmt.Fprintf(w, "== Kafka YSB pipeline, backlog (M events/s, median of rounds; over the baseline %s: median of the rounds' ratios, min-max)\n", r.Pipeline[0].Base)
		for _, p := range r.Pipeline {
			fmt.Fprintf(w, "fetchers %2d  %8.2f  baseline %8.2f  %.2fx (%.2f-%.2f, %d rounds)\n", p.Fetchers, p.PerS/1e6, p.BasePerS/1e6,
				p.OverBase, p.OverBaseMin, p.OverBaseMax, p.Rounds)
		}
		for _, f := range r.Figures {
			if f.Workload == "kafka-ceiling" && f.Median > 0 {
				fmt.Fprintf(w, "ceiling: franz-go's consumer alone, decoding nothing, %s: %.2f M records/s\n", strings.TrimPrefix(f.Extra, "--"), f.Median/1e6)
			}
		}
	}
	verdict := "ALL PASSED"
	if !r.Passed {
		verdict = "FAILED: " + strings.Join(r.Failed, " ")
		if len(r.Steps) == 0 {
			verdict = "FAILED: no step ran"
		}
	}
	if n := len(r.Skipped); n > 0 {
		names := r.Skipped
		if n > 5 {
			names = append(slices.Clone(names[:5]), fmt.Sprintf("and %d more", n-5))
		}
		verdict += fmt.Sprintf(" (%d skipped for time: %s)", n, strings.Join(names, " "))
	}
	fmt.Fprintln(w, verdict)
}

func size(b int) string {
	switch {
	case b >= 1<<20 && b%(1<<20) == 0:
		return fmt.Sprintf("%dM", b>>20)
	case b >= 1<<10 && b%(1<<10) == 0:
		return fmt.Sprintf("%dK", b>>10)
	}
	return strconv.Itoa(b)
}
