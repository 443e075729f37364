package main

import (
	"encoding/json"
	"fmt"
	"io"

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
	topo.WriteText(stdout)
	gpu.WriteDevices(stdout)
	return nil
}
