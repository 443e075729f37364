package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/saber-hx/saber-hx/cpu"
	"github.com/saber-hx/saber-hx/gpu"
)

// runTopology prints what the engine sees of the machine: the NUMA nodes,
// the CPUs this process may use, caches, instruction set and GPUs.
func runTopology(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("topology", "  saber-hx topology [--json]\n", stdout)
	asJSON := fs.Bool("json", false, "print the topology as one JSON object")
	if err := parse(fs, args); err != nil {
		return err
	}
	topo, err := cpu.Discover()
	if err != nil {
		return err
	}
	if *asJSON {
		b, err := json.Marshal(topo)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "%s\n", b)
		return err
	}
	printTopology(stdout, topo)
	devs, gerr := gpu.Devices()
	switch {
	case errors.Is(gerr, gpu.ErrNotBuilt):
		fmt.Fprintln(stdout, "GPUs: none (this build has no CUDA support)")
	case gerr != nil:
		fmt.Fprintf(stdout, "GPUs: unknown (%v)\n", gerr)
	case len(devs) == 0:
		fmt.Fprintln(stdout, "GPUs: none")
	default:
		fmt.Fprintf(stdout, "GPUs: %d\n", len(devs))
		for _, d := range devs {
			fmt.Fprintf(stdout, "  gpu %d: %s, sm_%d%d, memory %s, PCI %s, NUMA node %d\n",
				d.Index, d.Name, d.ComputeMajor, d.ComputeMinor, formatBytes(d.MemBytes), d.PCIBusID, d.NUMANode)
		}
	}
	return nil
}

// printTopology writes topo in text: a line per node and one per physical
// core (its SMT siblings on the same line), so that a 256-CPU machine
// stays readable.
func printTopology(w io.Writer, topo *cpu.Topology) {
	fmt.Fprintf(w, "NUMA nodes: %d\n", len(topo.Nodes))
	for _, n := range topo.Nodes {
		cpus := "no allowed CPU"
		if len(n.CPUs) > 0 {
			cpus = fmt.Sprintf("%d CPUs %s", len(n.CPUs), cpu.FormatCPUList(n.CPUs))
		}
		mem := "unknown"
		if n.MemBytes > 0 {
			mem = formatBytes(n.MemBytes)
		}
		fmt.Fprintf(w, "  node %d: %s, memory %s\n", n.ID, cpus, mem)
	}
	cores := 0
	for _, c := range topo.CPUs {
		if c.Siblings[0] == c.ID {
			cores++
		}
	}
	fmt.Fprintf(w, "CPUs: %d allowed, on %d physical cores\n", len(topo.CPUs), cores)
	for _, c := range topo.CPUs {
		// Every thread of a core lists the same siblings; print the core
		// once, at its lowest CPU.
		if c.Siblings[0] != c.ID {
			continue
		}
		fmt.Fprintf(w, "  node %d socket %d core %d: CPUs %s\n", c.Node, c.Socket, c.Core, cpu.FormatCPUList(c.Siblings))
	}
	fmt.Fprintf(w, "Caches (per instance): L1d %s, L2 %s, L3 %s\n", formatBytes(topo.L1D), formatBytes(topo.L2), formatBytes(topo.L3))
	fmt.Fprintf(w, "CPU: %s, %s\n", orUnknown(topo.Vendor), orUnknown(topo.Brand))
	fmt.Fprintf(w, "Features: %s\n", orUnknown(strings.Join(topo.Features, " ")))
	for _, n := range topo.Notes {
		fmt.Fprintf(w, "Note: %s\n", n)
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// formatBytes writes n in the largest binary unit that keeps it readable:
// "48 KiB", "2 MiB", "31.25 GiB".
func formatBytes(n int64) string {
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
