// Command gpucollect turns what the GPU bundle's run.sh recorded into
// results.json and a short table (build/gpu-bundle.sh builds it into the
// bundle as ./collect; run.sh calls it after every step, so that
// results.json is whole whenever the run stops).
//
//	collect results WORK OUT   write OUT/results.json and OUT/summary.txt
//	                           from WORK/steps.tsv, WORK/runs.tsv and the
//	                           logs they name; print the table on stdout
//	collect names FILE         print the queries of the --json summary on
//	                           FILE's last line, comma-separated (for
//	                           --static QUERY=KIND)
//
// WORK/steps.tsv has one line per step, tab-separated: name, kind (env,
// test, measure), status (pass, fail, timeout, skipped), exit status,
// seconds, log file (relative to WORK), command. WORK/runs.tsv has one line
// per saber-hx run: step name, group (matrix, static, warmup, sync,
// variant), workload, mode, task size, policy, static binding, repetition
// (0: the warm-up), extra (an environment variable set for the run, e.g.
// SABER_HX_GPU_SYNC=spin). WORK/meta.tsv holds
// key, value lines (started, budget_s, quick, host facts).
//
// It needs nothing but the files: no GPU, no cgo.
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "collect: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	switch {
	case len(args) == 3 && args[0] == "results":
		return results(args[1], args[2], stdout)
	case len(args) == 2 && args[0] == "names":
		names, err := queryNames(args[1])
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, strings.Join(names, ","))
		return nil
	}
	return errors.New("usage: collect results WORK OUT | collect names FILE")
}

// Step is one step of run.sh.
type Step struct {
	Name    string  `json:"name"`
	Kind    string  `json:"kind"`
	Status  string  `json:"status"` // pass, fail, timeout, skipped
	RC      int     `json:"rc"`
	Seconds float64 `json:"seconds"`
	Log     string  `json:"log"` // in logs.tar.gz
	Command string  `json:"command"`
	// Go test binaries: the top-level tests that passed, failed, were
	// skipped; the names of those that failed.
	Tests *TestCounts `json:"tests,omitempty"`
	// The last lines of the log of a step that did not pass.
	Tail string `json:"tail,omitempty"`
}

type TestCounts struct {
	Pass   int      `json:"pass"`
	Fail   int      `json:"fail"`
	Skip   int      `json:"skip"`
	Failed []string `json:"failed"`
}

// Run is one saber-hx run of the measurements.
type Run struct {
	Step     string `json:"step"`
	Group    string `json:"group"`
	Workload string `json:"workload"`
	Mode     string `json:"mode"`
	TaskSize int    `json:"task_size"`
	Policy   string `json:"policy"`
	Static   string `json:"static,omitempty"`
	Rep      int    `json:"rep"`
	Extra    string `json:"extra,omitempty"`
	Status   string `json:"status"`

	TuplesPerS float64 `json:"tuples_per_s"`
	Validated  *bool   `json:"validated,omitempty"`
	// Tasks per processor kind (cpu, gpu) over every query.
	TasksCPU         uint64  `json:"tasks_cpu"`
	TasksGPU         uint64  `json:"tasks_gpu"`
	GPUShare         float64 `json:"gpu_share"`
	GPUFallbackTasks uint64  `json:"gpu_fallback_tasks"`
	// The GPU part of the summary (gpu_*), as saber-hx wrote it.
	GPU map[string]any `json:"gpu,omitempty"`
	// The whole --json summary.
	Summary json.RawMessage `json:"summary,omitempty"`
}

// Figure is the repetitions of one configuration.
type Figure struct {
	Group         string    `json:"group"`
	Workload      string    `json:"workload"`
	Mode          string    `json:"mode"`
	TaskSize      int       `json:"task_size"`
	Policy        string    `json:"policy"`
	Static        string    `json:"static,omitempty"`
	Extra         string    `json:"extra,omitempty"`
	Reps          int       `json:"reps"`
	TuplesPerS    []float64 `json:"tuples_per_s"`
	Median        float64   `json:"tuples_per_s_median"`
	Spread        float64   `json:"spread"` // (max - min) / median
	GPUShare      float64   `json:"gpu_share_median"`
	CopyInUsP50   float64   `json:"gpu_copy_in_us_p50"`
	KernelUsP50   float64   `json:"gpu_kernel_us_p50"`
	CopyOutUsP50  float64   `json:"gpu_copy_out_us_p50"`
	SubmitUsP50   float64   `json:"gpu_submit_us_p50"` // the host's, per task
	WaitUsP50     float64   `json:"gpu_wait_us_p50"`
	AllValidated  bool      `json:"all_validated"` // ysb: every run validated; bench: not checked (true)
	FailedRuns    int       `json:"failed_runs"`
	key, baseline string
}

// Ratio compares hybrid with the best single processor and with the best
// static binding, per workload and task size.
type Ratio struct {
	Workload   string  `json:"workload"`
	TaskSize   int     `json:"task_size"`
	CPU        float64 `json:"cpu"`
	GPU        float64 `json:"gpu"`
	Hybrid     float64 `json:"hybrid"`
	BestSingle string  `json:"best_single"`
	// HybridOverBest: hybrid (hls) / max(cpu, gpu), medians.
	HybridOverBest float64 `json:"hybrid_over_best_single"`
	// StaticCPU, StaticGPU: hybrid mode with --policy static binding the
	// query to one kind; HLSOverBestStatic: hybrid (hls) / the better.
	StaticCPU         float64 `json:"static_cpu,omitempty"`
	StaticGPU         float64 `json:"static_gpu,omitempty"`
	HLSOverBestStatic float64 `json:"hls_over_best_static,omitempty"`
}

type Bandwidth struct {
	KiB    int     `json:"kib"`
	H2DGBs float64 `json:"h2d_gb_s"`
	D2HGBs float64 `json:"d2h_gb_s"`
}

// Results is results.json.
type Results struct {
	Schema int `json:"schema"`
	// Passed: every step that ran passed (none failed or timed out) and
	// every test step ran; a measurement skipped for lack of time is
	// listed in Skipped only.
	Passed    bool              `json:"passed"`
	Failed    []string          `json:"failed"` // the steps that failed or timed out
	Skipped   []string          `json:"skipped"`
	Meta      map[string]string `json:"meta"`
	GPU       map[string]string `json:"gpu"` // nvidia-smi's query fields
	Steps     []Step            `json:"steps"`
	Bandwidth []Bandwidth       `json:"bandwidth"`
	Figures   []Figure          `json:"figures"`
	Ratios    []Ratio           `json:"ratios"`
	Runs      []Run             `json:"runs"`
}

func readTSV(path string) ([][]string, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rows [][]string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if l := sc.Text(); l != "" {
			rows = append(rows, strings.Split(l, "\t"))
		}
	}
	return rows, sc.Err()
}

func field(r []string, i int) string {
	if i < len(r) {
		return r[i]
	}
	return ""
}

func atoi(s string) int {
	n, _ := strconv.Atoi(strings.TrimSpace(s))
	return n
}

func atof(s string) float64 {
	f, _ := strconv.ParseFloat(strings.TrimSpace(s), 64)
	return f
}

var (
	testLine = regexp.MustCompile(`^--- (PASS|FAIL|SKIP): (\S+)`)
	bwLine   = regexp.MustCompile(`(\d+) KiB: host to device ([0-9.]+) GB/s, device to host ([0-9.]+) GB/s`)
)

// testCounts reads the top-level test results of a -test.v log.
func testCounts(log []byte) *TestCounts {
	c := &TestCounts{Failed: []string{}}
	for _, l := range strings.Split(string(log), "\n") {
		m := testLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		switch m[1] {
		case "PASS":
			c.Pass++
		case "FAIL":
			c.Fail++
			c.Failed = append(c.Failed, m[2])
		case "SKIP":
			c.Skip++
		}
	}
	return c
}

func tail(b []byte, lines int) string {
	s := strings.TrimRight(string(b), "\n")
	ls := strings.Split(s, "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}

// lastJSON returns the last line of log that is a JSON object.
func lastJSON(log []byte) json.RawMessage {
	ls := strings.Split(strings.TrimRight(string(log), "\n"), "\n")
	for i := len(ls) - 1; i >= 0; i-- {
		l := strings.TrimSpace(ls[i])
		if strings.HasPrefix(l, "{") && json.Valid([]byte(l)) {
			return json.RawMessage(l)
		}
	}
	return nil
}

func queryNames(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	j := lastJSON(b)
	if j == nil {
		return nil, fmt.Errorf("%s: no JSON summary line", path)
	}
	var s struct {
		Processors struct {
			Queries []string `json:"queries"`
		} `json:"processors"`
	}
	if err := json.Unmarshal(j, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(s.Processors.Queries) == 0 {
		return nil, fmt.Errorf("%s: the summary names no query", path)
	}
	return s.Processors.Queries, nil
}

// summaryFields fills r's figures from a --json summary (ysb's or bench's).
func summaryFields(r *Run, j json.RawMessage) {
	var s struct {
		TuplesPerS float64         `json:"tuples_per_s"`
		Validated  *bool           `json:"validated"`
		Processors json.RawMessage `json:"processors"`
	}
	if json.Unmarshal(j, &s) != nil {
		return
	}
	r.Summary = j
	r.TuplesPerS, r.Validated = s.TuplesPerS, s.Validated
	var p struct {
		Kinds    []string   `json:"kinds"`
		Tasks    [][]uint64 `json:"tasks"`
		Fallback uint64     `json:"gpu_fallback_tasks"`
	}
	if len(s.Processors) == 0 || json.Unmarshal(s.Processors, &p) != nil {
		return
	}
	for k, per := range p.Tasks {
		var n uint64
		for _, x := range per {
			n += x
		}
		if k < len(p.Kinds) && p.Kinds[k] == "gpu" {
			r.TasksGPU += n
		} else {
			r.TasksCPU += n
		}
	}
	if all := r.TasksCPU + r.TasksGPU; all > 0 {
		r.GPUShare = float64(r.TasksGPU) / float64(all)
	}
	r.GPUFallbackTasks = p.Fallback
	var raw map[string]any
	if json.Unmarshal(s.Processors, &raw) == nil {
		for k, v := range raw {
			if strings.HasPrefix(k, "gpu") {
				if r.GPU == nil {
					r.GPU = map[string]any{}
				}
				r.GPU[k] = v
			}
		}
	}
}

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

func results(work, out string, stdout io.Writer) error {
	res := Results{Schema: 1, Passed: true, Failed: []string{}, Skipped: []string{}, Meta: map[string]string{}, GPU: map[string]string{},
		Steps: []Step{}, Bandwidth: []Bandwidth{}, Figures: []Figure{}, Ratios: []Ratio{}, Runs: []Run{}}
	meta, err := readTSV(filepath.Join(work, "meta.tsv"))
	if err != nil {
		return err
	}
	for _, m := range meta {
		res.Meta[field(m, 0)] = field(m, 1)
	}
	gpuq, err := readTSV(filepath.Join(work, "gpu.tsv"))
	if err != nil {
		return err
	}
	for _, m := range gpuq {
		res.GPU[field(m, 0)] = field(m, 1)
	}
	steps, err := readTSV(filepath.Join(work, "steps.tsv"))
	if err != nil {
		return err
	}
	status := map[string]string{}
	logs := map[string][]byte{}
	for _, r := range steps {
		st := Step{Name: field(r, 0), Kind: field(r, 1), Status: field(r, 2), RC: atoi(field(r, 3)), Seconds: atof(field(r, 4)),
			Log: field(r, 5), Command: field(r, 6)}
		var log []byte
		if st.Log != "" {
			log, _ = os.ReadFile(filepath.Join(work, st.Log))
		}
		logs[st.Name] = log
		if st.Kind == "test" && st.Status != "skipped" {
			st.Tests = testCounts(log)
		}
		if st.Status != "pass" && st.Status != "skipped" {
			st.Tail = tail(log, 30)
		}
		switch st.Status {
		case "pass":
		case "skipped":
			res.Skipped = append(res.Skipped, st.Name)
			if st.Kind == "test" { // a check that did not run did not pass
				res.Passed = false
				res.Failed = append(res.Failed, st.Name+" (skipped)")
			}
		default:
			res.Passed = false
			res.Failed = append(res.Failed, st.Name)
		}
		status[st.Name] = st.Status
		if st.Name == "bandwidth" {
			for _, m := range bwLine.FindAllStringSubmatch(string(log), -1) {
				res.Bandwidth = append(res.Bandwidth, Bandwidth{KiB: atoi(m[1]), H2DGBs: atof(m[2]), D2HGBs: atof(m[3])})
			}
		}
		res.Steps = append(res.Steps, st)
	}
	if len(steps) == 0 {
		res.Passed = false
	}
	runs, err := readTSV(filepath.Join(work, "runs.tsv"))
	if err != nil {
		return err
	}
	for _, r := range runs {
		ru := Run{Step: field(r, 0), Group: field(r, 1), Workload: field(r, 2), Mode: field(r, 3), TaskSize: atoi(field(r, 4)),
			Policy: field(r, 5), Static: field(r, 6), Rep: atoi(field(r, 7)), Extra: field(r, 8)}
		ru.Status = cmp.Or(status[ru.Step], "missing")
		if j := lastJSON(logs[ru.Step]); j != nil {
			summaryFields(&ru, j)
		}
		res.Runs = append(res.Runs, ru)
	}
	res.Figures = figures(res.Runs)
	res.Ratios = ratios(res.Figures)

	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(out, "results.json"), append(b, '\n')); err != nil {
		return err
	}
	var tb strings.Builder
	table(&tb, &res)
	if err := writeAtomic(filepath.Join(out, "summary.txt"), []byte(tb.String())); err != nil {
		return err
	}
	_, err = io.WriteString(stdout, tb.String())
	return err
}

func writeAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func figures(runs []Run) []Figure {
	var figs []*Figure
	by := map[string]*Figure{}
	for _, r := range runs {
		if r.Rep == 0 || r.Group == "warmup" {
			continue
		}
		key := fmt.Sprintf("%s|%s|%s|%d|%s|%s|%s", r.Group, r.Workload, r.Mode, r.TaskSize, r.Policy, r.Static, r.Extra)
		f := by[key]
		if f == nil {
			f = &Figure{Group: r.Group, Workload: r.Workload, Mode: r.Mode, TaskSize: r.TaskSize, Policy: r.Policy, Static: r.Static,
				Extra: r.Extra, AllValidated: true, TuplesPerS: []float64{}, key: key}
			by[key] = f
			figs = append(figs, f)
		}
		f.Reps++
		if r.Status != "pass" || r.TuplesPerS == 0 {
			f.FailedRuns++
			continue
		}
		f.TuplesPerS = append(f.TuplesPerS, r.TuplesPerS)
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
		var share, in, k, o, sub, wait []float64
		for _, r := range runs {
			key := fmt.Sprintf("%s|%s|%s|%d|%s|%s|%s", r.Group, r.Workload, r.Mode, r.TaskSize, r.Policy, r.Static, r.Extra)
			if key != f.key || r.Rep == 0 || r.Status != "pass" || r.TuplesPerS == 0 {
				continue
			}
			share = append(share, r.GPUShare)
			in = append(in, gpuNum(r, "gpu_copy_in_us_p50"))
			k = append(k, gpuNum(r, "gpu_kernel_us_p50"))
			o = append(o, gpuNum(r, "gpu_copy_out_us_p50"))
			sub = append(sub, gpuNum(r, "gpu_submit_us_p50"))
			wait = append(wait, gpuNum(r, "gpu_wait_us_p50"))
		}
		f.GPUShare, f.CopyInUsP50, f.KernelUsP50, f.CopyOutUsP50 = median(share), median(in), median(k), median(o)
		f.SubmitUsP50, f.WaitUsP50 = median(sub), median(wait)
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
