package cpu

import (
	"fmt"
	"io"
	"strings"
)

// WriteText writes t for a reader (saber-hx topology): a line per node and
// one per physical core (its SMT siblings on the same line), so that a
// 256-CPU machine stays readable.
func (t *Topology) WriteText(w io.Writer) {
	fmt.Fprintf(w, "NUMA nodes: %d\n", len(t.Nodes))
	for _, n := range t.Nodes {
		cpus := "no allowed CPU"
		if len(n.CPUs) > 0 {
			cpus = fmt.Sprintf("%d CPUs %s", len(n.CPUs), FormatCPUList(n.CPUs))
		}
		mem := "unknown"
		if n.MemBytes > 0 {
			mem = FormatBytes(n.MemBytes)
		}
		fmt.Fprintf(w, "  node %d: %s, memory %s\n", n.ID, cpus, mem)
	}
	cores := 0
	for _, c := range t.CPUs {
		if c.Siblings[0] == c.ID {
			cores++
		}
	}
	fmt.Fprintf(w, "CPUs: %d allowed, on %d physical cores\n", len(t.CPUs), cores)
	for _, c := range t.CPUs {
		// Every thread of a core lists the same siblings; print the core
		// once, at its lowest CPU.
		if c.Siblings[0] != c.ID {
			continue
		}
		fmt.Fprintf(w, "  node %d socket %d core %d: CPUs %s\n", c.Node, c.Socket, c.Core, FormatCPUList(c.Siblings))
	}
	fmt.Fprintf(w, "Caches (per instance): L1d %s, L2 %s, L3 %s\n", FormatBytes(t.L1D), FormatBytes(t.L2), FormatBytes(t.L3))
	fmt.Fprintf(w, "CPU: %s, %s\n", orUnknown(t.Vendor), orUnknown(t.Brand))
	fmt.Fprintf(w, "Features: %s\n", orUnknown(strings.Join(t.Features, " ")))
	for _, n := range t.Notes {
		fmt.Fprintf(w, "Note: %s\n", n)
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// FormatBytes writes n in the largest binary unit that keeps it readable:
// "48 KiB", "2 MiB", "31.25 GiB".
func FormatBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	u := 0
	v := float64(n)
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d %s", int64(v), units[u])
	}
	return fmt.Sprintf("%.2f %s", v, units[u])
}
