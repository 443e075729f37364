package cpu

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Placement is a policy for assigning workers to CPUs.
type Placement string

const (
	// Compact fills one NUMA node before using the next, keeping workers
	// close to each other and to one node's memory.
	Compact Placement = "compact"
	// Spread deals workers round-robin over the nodes, for the most total
	// memory bandwidth and cache.
	Spread Placement = "spread"
)

// maxCPUID bounds the CPU numbers ParseCPUList accepts: far above any
// kernel's NR_CPUS (8192), low enough that "0-4000000000" cannot make a
// caller allocate gigabytes.
const maxCPUID = 1 << 16

// Plan returns the CPU for each of n workers.
//
// Compact fills a node before the next, nodes in ID order; Spread deals one
// CPU from each node in turn (node 0, node 1, ..., node 0, ...), skipping
// nodes with no CPU left. Within a node, every physical core gets one worker
// before any core gets a second one on an SMT sibling, because siblings
// share a core's execution units and L1/L2; cores are taken in the order of
// their lowest CPU ID.
//
// cores, if non-nil, names the CPUs to use explicitly, in order; p must
// still be valid but does not change the order. A CPU not in the topology
// (not allowed, not online, or not a CPU) is an error naming it; repeats
// are allowed and share the CPU.
//
// When n exceeds the CPUs available (the topology's, or len(cores)), the
// list wraps around: worker i gets the (i mod len)th CPU, so workers share
// CPUs in the same order again.
func (t *Topology) Plan(p Placement, n int, cores []int) ([]int, error) {
	if n < 1 {
		return nil, fmt.Errorf("cpu: plan: %d workers, need at least 1", n)
	}
	if p != Compact && p != Spread {
		return nil, fmt.Errorf("cpu: plan: unknown placement %q, want %q or %q", p, Compact, Spread)
	}
	var order []int
	switch {
	case cores != nil:
		if len(cores) == 0 {
			return nil, errors.New("cpu: plan: empty list of cores")
		}
		for _, c := range cores {
			if t.cpuIndex(c) < 0 {
				return nil, fmt.Errorf("cpu: plan: CPU %d is not among the allowed online CPUs (%s)", c, FormatCPUList(t.cpuIDs()))
			}
		}
		order = cores
	default:
		perNode := make([][]int, 0, len(t.Nodes))
		for _, nd := range t.Nodes {
			if o := t.nodeOrder(nd); len(o) > 0 {
				perNode = append(perNode, o)
			}
		}
		if len(perNode) == 0 {
			return nil, errors.New("cpu: plan: the topology has no CPU")
		}
		order = slices.Concat(perNode...)
		if p == Compact {
			break
		}
		total := len(order)
		order = order[:0] // refill the same array in round-robin order
		for i := 0; len(order) < total; i++ {
			for _, o := range perNode {
				if i < len(o) {
					order = append(order, o[i])
				}
			}
		}
	}
	plan := make([]int, n)
	for i := range plan {
		plan[i] = order[i%len(order)]
	}
	return plan, nil
}

// nodeOrder returns a node's CPUs with the first SMT thread of every core
// before the second thread of any, and so on.
func (t *Topology) nodeOrder(nd Node) []int {
	// Cores keyed by their lowest allowed sibling, which every thread of
	// the core shares (core_id alone repeats across sockets). Node CPUs are
	// ascending, so cores come out in order of their lowest CPU.
	var coreKeys []int
	threads := map[int][]int{}
	for _, c := range nd.CPUs {
		i := t.cpuIndex(c)
		if i < 0 {
			continue // Nodes and CPUs disagree only in a hand-built Topology
		}
		key := c
		if s := t.CPUs[i].Siblings; len(s) > 0 {
			key = s[0]
		}
		if _, seen := threads[key]; !seen {
			coreKeys = append(coreKeys, key)
		}
		threads[key] = append(threads[key], c)
	}
	order := make([]int, 0, len(nd.CPUs))
	for round := 0; len(order) < cap(order); round++ {
		progressed := false
		for _, k := range coreKeys {
			if th := threads[k]; round < len(th) {
				order = append(order, th[round])
				progressed = true
			}
		}
		if !progressed {
			break // only when some node CPU is missing from t.CPUs
		}
	}
	return order
}

// cpuIndex returns the index of CPU id in t.CPUs, or -1.
func (t *Topology) cpuIndex(id int) int {
	i, found := slices.BinarySearchFunc(t.CPUs, id, func(c CPUInfo, id int) int { return c.ID - id })
	if !found {
		return -1
	}
	return i
}

func (t *Topology) cpuIDs() []int {
	ids := make([]int, len(t.CPUs))
	for i, c := range t.CPUs {
		ids[i] = c.ID
	}
	return ids
}

// ParseCPUList parses the kernel's CPU list format, "0-3,8,10-11", into
// CPU numbers in the order written (ranges ascending). Surrounding white
// space is ignored and an empty list is valid (a CPU-less node's cpulist).
// A malformed part, a reversed range or a CPU number of 65536 or more is an
// error naming the part, and so is a list of more than 65536 CPUs in all
// (there are no more distinct numbers): a short text of many wide ranges
// cannot make it allocate more than that.
func ParseCPUList(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	cpus := []int{}
	if s == "" {
		return cpus, nil
	}
	parts := 0
	for part := range strings.SplitSeq(s, ",") {
		parts++
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := parseCPUNum(lo)
		if err != nil {
			return nil, fmt.Errorf("cpu list %q: bad part %q: %w", s, part, err)
		}
		b := a
		if isRange {
			if b, err = parseCPUNum(hi); err != nil {
				return nil, fmt.Errorf("cpu list %q: bad part %q: %w", s, part, err)
			}
			if b < a {
				return nil, fmt.Errorf("cpu list %q: bad part %q: range runs backwards", s, part)
			}
		}
		if len(cpus)+(b-a+1) > maxCPUID {
			return nil, fmt.Errorf("cpu list of %d bytes: part %d %q takes it past %d CPUs in all", len(s), parts, part, maxCPUID)
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

func parseCPUNum(s string) (int, error) {
	// Only plain decimal digits: Atoi would also take "+3".
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, errors.New("not a CPU number")
	}
	v, err := strconv.Atoi(s)
	if err != nil || v >= maxCPUID {
		return 0, fmt.Errorf("CPU number beyond %d", maxCPUID-1)
	}
	return v, nil
}

// FormatCPUList writes CPUs in the kernel's CPU list format, runs of
// consecutive numbers as ranges: [0 1 2 3 8] is "0-3,8". It is the inverse
// of ParseCPUList for ascending lists without repeats; an empty list is "".
func FormatCPUList(cpus []int) string {
	var b strings.Builder
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(cpus[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(cpus[j]))
		}
		i = j + 1
	}
	return b.String()
}
