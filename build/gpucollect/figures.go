package main

// The figures (medians over repetitions) and the ratios between them.

import (
	"math"
	"slices"
	"strings"
)

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}

func gpuNum(r Run, k string) float64 {
	if v, ok := r.GPU[k].(float64); ok {
		return v
	}
	return 0
}

func figures(runs []Run) []Figure {
	var figs []*Figure
	by := map[Config]*Figure{}
	passed := map[Config][]Run{} // the runs each figure's medians are of
	for _, r := range runs {
		if r.Rep == 0 || r.Group == "warmup" {
			continue
		}
		f := by[r.Config]
		if f == nil {
			f = &Figure{Config: r.Config, AllValidated: true, TuplesPerS: []float64{}}
			by[r.Config] = f
			figs = append(figs, f)
		}
		f.Reps++
		if r.Status != "pass" || r.TuplesPerS == 0 {
			f.FailedRuns++
			continue
		}
		f.TuplesPerS = append(f.TuplesPerS, r.TuplesPerS)
		passed[r.Config] = append(passed[r.Config], r)
		// ysb validates every run; bench only with --validate, which
		// run.sh does not pass (it bounds the input).
		if r.Workload == "ysb" && r.Validated != nil && !*r.Validated {
			f.AllValidated = false
		}
	}
	out := make([]Figure, 0, len(figs))
	for _, f := range figs {
		f.Median = median(f.TuplesPerS)
		if f.Median > 0 {
			f.Spread = (slices.Max(f.TuplesPerS) - slices.Min(f.TuplesPerS)) / f.Median
		}
		var share, in, k, o, sub, wait, events, serial []float64
		for _, r := range passed[f.Config] {
			events, serial = append(events, r.EventsPerS), append(serial, r.SerialFraction)
			share = append(share, r.GPUShare)
			in = append(in, gpuNum(r, "gpu_copy_in_us_p50"))
			k = append(k, gpuNum(r, "gpu_kernel_us_p50"))
			o = append(o, gpuNum(r, "gpu_copy_out_us_p50"))
			sub = append(sub, gpuNum(r, "gpu_submit_us_p50"))
			wait = append(wait, gpuNum(r, "gpu_wait_us_p50"))
		}
		f.GPUShare, f.CopyInUsP50, f.KernelUsP50, f.CopyOutUsP50 = median(share), median(in), median(k), median(o)
		f.SubmitUsP50, f.WaitUsP50 = median(sub), median(wait)
		f.EventsPerS, f.SerialFraction = median(events), median(serial)
		out = append(out, *f)
	}
	return out
}

func ratios(figs []Figure) []Ratio {
	type wk struct {
		w  string
		ts int
	}
	var order []wk
	rs := map[wk]*Ratio{}
	get := func(w string, ts int) *Ratio {
		k := wk{w, ts}
		if rs[k] == nil {
			rs[k] = &Ratio{Workload: w, TaskSize: ts}
			order = append(order, k)
		}
		return rs[k]
	}
	for _, f := range figs {
		switch {
		case f.Group == "matrix" && f.Mode == "cpu":
			get(f.Workload, f.TaskSize).CPU = f.Median
		case f.Group == "matrix" && f.Mode == "gpu":
			get(f.Workload, f.TaskSize).GPU = f.Median
		case f.Group == "matrix" && f.Mode == "hybrid":
			get(f.Workload, f.TaskSize).Hybrid = f.Median
		case f.Group == "static" && strings.HasSuffix(f.Static, "=cpu"):
			get(f.Workload, f.TaskSize).StaticCPU = f.Median
		case f.Group == "static" && strings.HasSuffix(f.Static, "=gpu"):
			get(f.Workload, f.TaskSize).StaticGPU = f.Median
		}
	}
	out := make([]Ratio, 0, len(order))
	for _, k := range order {
		r := rs[k]
		best := math.Max(r.CPU, r.GPU)
		r.BestSingle = "cpu"
		if r.GPU > r.CPU {
			r.BestSingle = "gpu"
		}
		if best > 0 && r.Hybrid > 0 {
			r.HybridOverBest = r.Hybrid / best
		}
		if bs := math.Max(r.StaticCPU, r.StaticGPU); bs > 0 && r.Hybrid > 0 {
			r.HLSOverBestStatic = r.Hybrid / bs
		}
		out = append(out, *r)
	}
	return out
}

// scalingCurve is the scaling group's figures as points, in run order: per
// workload and worker count (the --workers of the runs' flags) the median
// in tuples/s (Nexmark's: its records read) and its speedup over 1
// worker.
func scalingCurve(figs []Figure) []Scaling {
	out := []Scaling{}
	one := map[string]float64{}
	for _, f := range figs {
		if f.Group != "scaling" {
			continue
		}
		// Nexmark's too: its records read, not the events of the
		// sequence they span (docs/nexmark.md, "What a run counts").
		p := Scaling{Workload: f.Workload, Workers: workersOf(f.Extra), Unit: "tuples/s", PerS: f.Median, SerialFraction: f.SerialFraction}
		p.Failed = p.PerS == 0
		if p.Workers == 1 {
			one[p.Workload] = p.PerS
		}
		out = append(out, p)
	}
	for i := range out {
		if b := one[out[i].Workload]; b > 0 && !out[i].Failed {
			out[i].Speedup = out[i].PerS / b
		}
	}
	return out
}

// workersOf is the --workers N of a run's extra flags (0: none).
func workersOf(extra string) int { return flagOf(extra, "--workers") }

// flagOf is the number after flag in a run's extra flags (0: none).
func flagOf(extra, flag string) int {
	f := strings.Fields(extra)
	for i := 0; i+1 < len(f); i++ {
		if f[i] == flag {
			return atoi(f[i+1])
		}
	}
	return 0
}

// pipelineRatios compares, round by round, the pipeline group's runs of
// this build at each number of fetchers (extra "--fetchers N") with the
// baseline build's run of the same round (extra "base COMMIT"): run.sh
// alternates them over one backlog, so that a round's ratio is measured
// under the same conditions, and the median of the ratios is the figure.
func pipelineRatios(runs []Run) []Pipeline {
	base := map[int]float64{} // round -> the baseline's events/s
	name := ""
	var order []int // fetcher counts, in run order
	ours := map[int]map[int]float64{}
	for _, r := range runs {
		if r.Group != "pipeline" || r.Workload != "ysb-kafka" || r.Status != "pass" || r.TuplesPerS == 0 {
			continue
		}
		if b, ok := strings.CutPrefix(r.Extra, "base"); ok {
			base[r.Rep], name = r.TuplesPerS, strings.TrimSpace(b)
			continue
		}
		f := flagOf(r.Extra, "--fetchers")
		if ours[f] == nil {
			ours[f] = map[int]float64{}
			order = append(order, f)
		}
		ours[f][r.Rep] = r.TuplesPerS
	}
	out := []Pipeline{}
	for _, f := range order {
		p := Pipeline{Fetchers: f, Base: name}
		var per, bases, over []float64
		for rep, v := range ours[f] {
			per = append(per, v)
			if b := base[rep]; b > 0 {
				bases, over = append(bases, b), append(over, v/b)
			}
		}
		p.PerS, p.BasePerS, p.OverBase, p.Rounds = median(per), median(bases), median(over), len(over)
		if len(over) > 0 {
			p.OverBaseMin, p.OverBaseMax = slices.Min(over), slices.Max(over)
		}
		out = append(out, p)
	}
	return out
}
