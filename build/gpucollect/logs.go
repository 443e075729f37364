package main

// Reading what run.sh recorded: the TSV files, test counts and --json
// summaries in the logs.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
)

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
		TuplesPerS     float64 `json:"tuples_per_s"`
		EventsPerS     float64 `json:"events_per_s"`
		Validated      *bool   `json:"validated"`
		Workers        int     `json:"workers"`
		SerialFraction float64 `json:"serial_fraction"`
		Queries        []struct {
			SerialFraction float64 `json:"serial_fraction"`
		} `json:"queries"`
		Processors json.RawMessage `json:"processors"`
	}
	if json.Unmarshal(j, &s) != nil {
		return
	}
	r.Summary = j
	r.TuplesPerS, r.EventsPerS, r.Validated, r.Workers = s.TuplesPerS, s.EventsPerS, s.Validated, s.Workers
	r.SerialFraction = s.SerialFraction
	for _, q := range s.Queries {
		r.SerialFraction = max(r.SerialFraction, q.SerialFraction)
	}
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
