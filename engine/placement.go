package engine

import (
	"fmt"
	"runtime"
	"slices"

	"github.com/saber-hx/saber-hx/buffer"
	"github.com/saber-hx/saber-hx/cpu"
)

// placeWorkers claims the CPUs of pinned workers (cpu.Claim), so that the
// automatic placement of another engine in this process avoids them. Workers
// without Config.CPUs are placed by Config.Placement over the NUMA nodes,
// SMT siblings last (cpu.Topology.Plan), or in the affinity mask's order
// where the topology cannot be read, over the CPUs no other engine holds;
// where too few are free they run unpinned, with a warning.
func placeWorkers(c *Config) (*cpu.Claim, error) {
	p := c.Placement
	if p == "" {
		p = cpu.Compact
	}
	if p != cpu.Compact && p != cpu.Spread {
		return nil, fmt.Errorf("engine: placement %q: want %q or %q", c.Placement, cpu.Compact, cpu.Spread)
	}
	if !c.Pin || c.Mode() == "gpu" {
		return nil, nil
	}
	n := 0
	for _, g := range c.cpuGroups() {
		n += g.Workers
	}
	if n == 0 {
		return nil, nil
	}
	if len(c.CPUs) > 0 {
		named := make([]int, n) // as cpu.Start cycles them
		for i := range named {
			named[i] = c.CPUs[i%len(c.CPUs)]
		}
		return cpu.ClaimCPUs(named), nil
	}
	order := cpu.AllowedCPUs()
	topo := c.Topology
	if topo == nil {
		topo, _ = cpu.Discover()
	}
	if topo != nil {
		if all, err := topo.Plan(p, len(topo.CPUs), nil); err == nil {
			order, c.Topology = all, topo
		}
	}
	if c.PinIngest && len(order) > n {
		// The producer's thread is pinned there: a worker on it would
		// halve both while another CPU idles.
		if i := slices.Index(order, c.IngestCore); i >= 0 {
			order = slices.Delete(slices.Clone(order), i, i+1)
		}
	}
	claim, err := cpu.ClaimFree(order, n)
	if err != nil {
		msg := fmt.Sprintf("workers run unpinned: %v", err)
		if c.MemPolicy != cpu.MemDefault {
			// Unpinned workers have no node for the rings to be on.
			msg += fmt.Sprintf("; memory policy %s not applied", c.MemPolicy)
			c.MemPolicy = cpu.MemDefault
		}
		if c.Warn != nil {
			c.Warn(msg)
		}
		c.Pin = false
		return nil, nil
	}
	c.CPUs = claim.CPUs()
	if c.MemPolicy != cpu.MemDefault && c.Topology != nil {
		if node := c.Topology.NodeOfCPU(c.CPUs[0]); node >= 0 {
			c.MemNode = c.Topology.MemoryNode(node)
		}
	}
	return claim, nil
}

// discoverNodes finds the NUMA nodes when workers are pinned on a machine
// with several: then tasks wait in per-node queues (scheduler.Config.Nodes)
// and workers prefer the tasks whose ring is on their node.
func (e *Engine) discoverNodes() {
	if !e.cfg.Pin {
		return
	}
	topo := e.cfg.Topology
	if topo == nil {
		var err error
		if topo, err = cpu.Discover(); err != nil {
			return
		}
	}
	if len(topo.Nodes) < 2 {
		return
	}
	e.nodeIndex, e.cpuNode = map[int]int{}, map[int]int{}
	for i, n := range topo.Nodes {
		e.nodeIndex[n.ID] = i
	}
	for _, c := range topo.CPUs {
		e.cpuNode[c.ID] = e.nodeIndex[c.Node]
	}
	e.cpus = e.cfg.CPUs
	if len(e.cpus) == 0 {
		e.cpus = cpu.AllowedCPUs() // where cpu.Start pins the workers by default
	}
	for _, c := range e.cpus {
		if n := topo.MemoryNode(topo.NodeOfCPU(c)); n >= 0 && !slices.Contains(e.ringNodes, n) {
			e.ringNodes = append(e.ringNodes, n)
		}
	}
}

// newRing allocates a ring of size bytes (a stream's, or its string heap)
// on NUMA node node where the kernel lets us (a warning otherwise:
// placement is an optimisation). On a machine of several nodes with
// pinned workers, streams go round-robin over the workers' nodes (MemNode
// is then the first's).
func (e *Engine) newRing(size, node int) (*buffer.Ring, error) {
	if e.cfg.MemPolicy == cpu.MemDefault {
		return buffer.NewRing(size)
	}
	r, err := buffer.NewRingOnNode(size, node, e.cfg.MemPolicy)
	if err == nil {
		return r, nil
	}
	if e.cfg.Warn != nil {
		e.cfg.Warn(fmt.Sprintf("ring memory not placed on node %d: %v", node, err))
	}
	return buffer.NewRing(size)
}

// RingNode reports the NUMA node of stream i's ring memory (-1 if unknown).
func (e *Engine) RingNode(i int) int {
	n, err := e.entries[i].stream.ring.Node()
	if err != nil {
		return -1
	}
	return n
}

// Produce runs a producer (the caller of a Stream's Buffer and Commit, or
// Write) on a goroutine of its own, pinned to Config.IngestCore when
// Config.PinIngest (a pinning the kernel refuses is a warning through
// Config.Warn, not an error), and delivers produce's error on the channel
// (buffered: nobody need receive) when it returns. The goroutine's thread
// is not unlocked, so that the runtime retires it with its narrowed
// affinity instead of reusing it.
func (e *Engine) Produce(produce func() error) <-chan error {
	done := make(chan error, 1)
	go func() {
		if err := e.cfg.pinIngestion(); err != nil && e.cfg.Warn != nil {
			e.cfg.Warn(fmt.Sprintf("ingestion not pinned: %v", err))
		}
		done <- produce()
	}()
	return done
}

// pinIngestion locks the calling goroutine to its thread and pins the
// thread to IngestCore (nothing unless PinIngest).
func (c Config) pinIngestion() error {
	if !c.PinIngest {
		return nil
	}
	runtime.LockOSThread()
	return cpu.PinCurrentThread(c.IngestCore)
}
