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
// test, measure, check), status (pass, fail, timeout, skipped), exit status,
// seconds, log file (relative to WORK), command. WORK/runs.tsv has one line
// per saber-hx run: step name, group (matrix, static, warmup, sync,
// variant, scaling, pipeline), workload, mode, task size, policy, static binding,
// repetition (0: the warm-up), extra (an environment variable set for the
// run, e.g. SABER_HX_GPU_SYNC=spin, or more flags, e.g. --workers 4).
// WORK/meta.tsv holds
// key, value lines (started, budget_s, quick, host facts).
//
// It needs nothing but the files: no GPU, no cgo.
package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
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

func results(work, out string, stdout io.Writer) error {
	res := Results{Schema: 1, Passed: true, Failed: []string{}, Skipped: []string{}, Meta: map[string]string{}, GPU: map[string]string{},
		Steps: []Step{}, Bandwidth: []Bandwidth{}, Figures: []Figure{}, Ratios: []Ratio{}, Scaling: []Scaling{}, Pipeline: []Pipeline{}, Runs: []Run{}}
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
		ru := Run{Step: field(r, 0), Config: Config{Group: field(r, 1), Workload: field(r, 2), Mode: field(r, 3), TaskSize: atoi(field(r, 4)),
			Policy: field(r, 5), Static: field(r, 6), Extra: field(r, 8)}, Rep: atoi(field(r, 7))}
		ru.Status = cmp.Or(status[ru.Step], "missing")
		if j := lastJSON(logs[ru.Step]); j != nil {
			summaryFields(&ru, j)
		}
		res.Runs = append(res.Runs, ru)
	}
	res.Figures = figures(res.Runs)
	res.Ratios = ratios(res.Figures)
	res.Scaling = scalingCurve(res.Figures)
	res.Pipeline = pipelineRatios(res.Runs)

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
