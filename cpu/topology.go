package cpu

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/klauspost/cpuid/v2"
)

// Topology is what the engine knows about the machine it places workers on:
// NUMA nodes, the CPUs this process may use, caches and instruction set.
//
// Only allowed CPUs (the process affinity mask, i.e. a container's or
// cgroup's cpuset) appear anywhere in it: CPUs the process cannot run on are
// useless for placement and would only mislead the planner.
type Topology struct {
	// Nodes are the NUMA nodes, by ID, that hold at least one allowed CPU
	// or some memory. A node with memory but no allowed CPU stays listed,
	// with empty CPUs: both a CPU-less memory node (HBM, CXL) and a node
	// whose CPUs all lie outside the cpuset can still hold this process's
	// memory, which matters for memory binding. A node with neither is
	// dropped.
	Nodes []Node `json:"nodes"`
	// CPUs are the allowed, online CPUs, by ID.
	CPUs []CPUInfo `json:"cpus"`
	// Vendor, Brand and Features come from the CPUID instruction of the
	// CPU this runs on, never from the sysfs tree: there is no sysfs source
	// for them, so tests on fixture trees see the real machine here.
	Vendor   string   `json:"vendor"`
	Brand    string   `json:"brand"`
	Features []string `json:"features"`
	// L1D, L2 and L3 are the bytes of one instance of each cache level,
	// as seen by the first allowed CPU, from sysfs where present, else from
	// CPUID; 0 where neither knows (a machine without L3).
	L1D int64 `json:"l1d_bytes"`
	L2  int64 `json:"l2_bytes"`
	L3  int64 `json:"l3_bytes"`
	// Notes say where discovery had to assume something.
	Notes []string `json:"notes,omitempty"`
}

// Node is one NUMA node.
type Node struct {
	ID int `json:"id"`
	// CPUs are the node's allowed CPUs, ascending; empty (never nil) for
	// a node kept only for its memory.
	CPUs []int `json:"cpus"`
	// MemBytes is MemTotal from nodeN/meminfo; 0 if unknown.
	MemBytes int64 `json:"mem_bytes"`
}

// CPUInfo describes one allowed logical CPU.
type CPUInfo struct {
	ID     int `json:"id"`
	Node   int `json:"node"`
	Socket int `json:"socket"` // physical_package_id
	Core   int `json:"core"`   // core_id: unique within a socket only
	// Siblings are the allowed SMT siblings sharing this CPU's physical
	// core, itself included, ascending. Siblings outside the allowed set
	// are left out, so all CPUs of one core list the same siblings.
	Siblings []int `json:"siblings"`
}

// features are the CPUID flags reported in Topology.Features, in this
// order: the ones the engine's kernels or their successors may select on,
// not the hundreds cpuid knows.
var features = []struct {
	name string
	id   cpuid.FeatureID
}{
	{"sse4.2", cpuid.SSE42},
	{"popcnt", cpuid.POPCNT},
	{"aes", cpuid.AESNI},
	{"avx", cpuid.AVX},
	{"avx2", cpuid.AVX2},
	{"fma", cpuid.FMA3},
	{"bmi1", cpuid.BMI1},
	{"bmi2", cpuid.BMI2},
	{"lzcnt", cpuid.LZCNT},
	{"avx512f", cpuid.AVX512F},
	{"avx512bw", cpuid.AVX512BW},
	{"avx512dq", cpuid.AVX512DQ},
	{"avx512vl", cpuid.AVX512VL},
	{"asimd", cpuid.ASIMD},
	{"crc32", cpuid.CRC32},
}

// Discover reads the real machine: the sysfs tree at "/" and the process's
// allowed CPUs (AllowedCPUs).
func Discover() (*Topology, error) { return DiscoverFS("/", AllowedCPUs()) }

// DiscoverFS reads a sysfs tree rooted at root (root/sys/devices/system/node
// and root/sys/devices/system/cpu), keeping only the online CPUs in allowed;
// nil allowed means every online CPU. Allowed CPUs that are not online are
// ignored. Without a node directory (a kernel without NUMA) there is one
// node 0 holding every allowed CPU, and a Note says so.
//
// Vendor, Brand, Features and any cache size missing from sysfs come from
// CPUID of the machine this runs on, whatever root is.
func DiscoverFS(root string, allowed []int) (*Topology, error) {
	cpuDir := filepath.Join(root, "sys/devices/system/cpu")
	nodeDir := filepath.Join(root, "sys/devices/system/node")

	online, err := readCPUList(filepath.Join(cpuDir, "online"))
	if err != nil {
		return nil, err
	}
	// ok marks the CPUs this topology describes: online and allowed. A
	// bitmap indexed by CPU ID, since CPU IDs are small and dense.
	// ParseCPUList bounds every ID, so the bitmap stays small.
	ok := make([]bool, slices.Max(append(online, 0))+1)
	for _, c := range online {
		ok[c] = true
	}
	if allowed != nil {
		isOnline := ok
		ok = make([]bool, len(isOnline))
		for _, c := range allowed {
			if c >= 0 && c < len(ok) && isOnline[c] {
				ok[c] = true
			}
		}
	}
	var ids []int
	for c, in := range ok {
		if in {
			ids = append(ids, c)
		}
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("cpu: topology: no allowed CPU (%s) is online (%s: %s)",
			FormatCPUList(allowed), filepath.Join(cpuDir, "online"), FormatCPUList(online))
	}

	t := &Topology{CPUs: make([]CPUInfo, len(ids))}
	for i, c := range ids {
		if t.CPUs[i], err = readCPU(cpuDir, c, ok); err != nil {
			return nil, err
		}
	}
	if err := t.readNodes(nodeDir, ok); err != nil {
		return nil, err
	}
	if err := t.readCaches(filepath.Join(cpuDir, fmt.Sprintf("cpu%d", ids[0]), "cache")); err != nil {
		return nil, err
	}
	t.Vendor, t.Brand = cpuid.CPU.VendorString, cpuid.CPU.BrandName
	t.Features = []string{}
	for _, f := range features {
		if cpuid.CPU.Supports(f.id) {
			t.Features = append(t.Features, f.name)
		}
	}
	return t, nil
}

// readCPU reads one CPU's topology directory.
func readCPU(cpuDir string, c int, ok []bool) (CPUInfo, error) {
	dir := filepath.Join(cpuDir, fmt.Sprintf("cpu%d", c), "topology")
	info := CPUInfo{ID: c}
	var err error
	if info.Socket, err = readInt(filepath.Join(dir, "physical_package_id")); err != nil {
		return info, err
	}
	if info.Core, err = readInt(filepath.Join(dir, "core_id")); err != nil {
		return info, err
	}
	path := filepath.Join(dir, "thread_siblings_list")
	sib, err := readCPUList(path)
	if err != nil {
		return info, err
	}
	if !slices.Contains(sib, c) {
		return info, fmt.Errorf("cpu: topology: %s: %q does not list cpu%d itself", path, FormatCPUList(sib), c)
	}
	info.Siblings = slices.DeleteFunc(sib, func(s int) bool { return s >= len(ok) || !ok[s] })
	slices.Sort(info.Siblings)
	return info, nil
}

// readNodes fills t.Nodes and every CPU's Node.
func (t *Topology) readNodes(nodeDir string, ok []bool) error {
	entries, err := os.ReadDir(nodeDir)
	if errors.Is(err, fs.ErrNotExist) {
		all := make([]int, len(t.CPUs))
		for i, c := range t.CPUs {
			all[i] = c.ID // CPUInfo.Node is already 0
		}
		t.Nodes = []Node{{ID: 0, CPUs: all}}
		t.Notes = append(t.Notes, fmt.Sprintf("no %s: one node 0 assumed, holding every CPU", nodeDir))
		return nil
	}
	if err != nil {
		return fmt.Errorf("cpu: topology: read node directory: %w", err)
	}
	var nodeIDs []int
	for _, e := range entries {
		// The directory also holds files such as "online" and "has_cpu";
		// only nodeN directories describe nodes.
		id, err := strconv.Atoi(strings.TrimPrefix(e.Name(), "node"))
		if err != nil || !strings.HasPrefix(e.Name(), "node") || id < 0 {
			continue
		}
		nodeIDs = append(nodeIDs, id)
	}
	slices.Sort(nodeIDs) // ReadDir sorts by name: node10 before node2

	nodeOf := make(map[int]int, len(t.CPUs))
	for _, id := range nodeIDs {
		dir := filepath.Join(nodeDir, fmt.Sprintf("node%d", id))
		path := filepath.Join(dir, "cpulist")
		cpus, err := readCPUList(path)
		if err != nil {
			return err
		}
		n := Node{ID: id, CPUs: []int{}}
		for _, c := range cpus {
			if c < len(ok) && ok[c] {
				if prev, dup := nodeOf[c]; dup {
					return fmt.Errorf("cpu: topology: %s: cpu%d is also in node%d", path, c, prev)
				}
				nodeOf[c] = id
				n.CPUs = append(n.CPUs, c)
			}
		}
		slices.Sort(n.CPUs)
		if n.MemBytes, err = readMemTotal(filepath.Join(dir, "meminfo")); err != nil {
			return err
		}
		if len(n.CPUs) > 0 || n.MemBytes > 0 {
			t.Nodes = append(t.Nodes, n)
		}
	}
	for i := range t.CPUs {
		id, found := nodeOf[t.CPUs[i].ID]
		if !found {
			// Every online CPU belongs to exactly one node; a tree that
			// says otherwise cannot be planned on.
			return fmt.Errorf("cpu: topology: cpu%d is in no nodeN/cpulist under %s", t.CPUs[i].ID, nodeDir)
		}
		t.CPUs[i].Node = id
	}
	return nil
}

// readMemTotal returns the MemTotal of a nodeN/meminfo file in bytes; 0 if
// the file does not exist.
func readMemTotal(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("cpu: topology: %w", err)
	}
	// Lines look like "Node 0 MemTotal:       32768000 kB".
	for line := range strings.Lines(string(b)) {
		_, rest, found := strings.Cut(line, "MemTotal:")
		if !found {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("cpu: topology: %s: malformed MemTotal line %q", path, strings.TrimSpace(line))
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || kb < 0 || kb > 1<<53 {
			return 0, fmt.Errorf("cpu: topology: %s: malformed MemTotal %q", path, f[0])
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("cpu: topology: %s: no MemTotal line", path)
}

// readCaches sets L1D, L2 and L3 from one CPU's cache/indexN directories,
// and from CPUID for levels sysfs does not describe.
func (t *Topology) readCaches(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cpu: topology: read cache directory: %w", err)
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "index") {
			continue
		}
		idx := filepath.Join(dir, e.Name())
		typ, err := os.ReadFile(filepath.Join(idx, "type"))
		if errors.Is(err, fs.ErrNotExist) {
			continue // some kernels describe caches only partially
		}
		if err != nil {
			return fmt.Errorf("cpu: topology: %w", err)
		}
		if strings.TrimSpace(string(typ)) == "Instruction" {
			continue
		}
		level, err := readInt(filepath.Join(idx, "level"))
		if err != nil {
			return err
		}
		size, err := readSize(filepath.Join(idx, "size"))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		switch level {
		case 1:
			t.L1D = size
		case 2:
			t.L2 = size
		case 3:
			t.L3 = size
		}
	}
	var fromCPUID []string
	for _, c := range []struct {
		name  string
		dst   *int64
		cpuid int
	}{{"L1d", &t.L1D, cpuid.CPU.Cache.L1D}, {"L2", &t.L2, cpuid.CPU.Cache.L2}, {"L3", &t.L3, cpuid.CPU.Cache.L3}} {
		if *c.dst == 0 && c.cpuid > 0 {
			*c.dst = int64(c.cpuid)
			fromCPUID = append(fromCPUID, c.name)
		}
	}
	if len(fromCPUID) > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("%s size from cpuid: not in %s", strings.Join(fromCPUID, ", "), dir))
	}
	return nil
}

// readSize reads a cache size such as "32K", "1024K" or "32M" in bytes.
func readSize(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, err // the caller skips it
		}
		return 0, fmt.Errorf("cpu: topology: %w", err)
	}
	s := strings.TrimSpace(string(b))
	num, shift := s, 0
	if s != "" {
		switch s[len(s)-1] {
		case 'K':
			num, shift = s[:len(s)-1], 10
		case 'M':
			num, shift = s[:len(s)-1], 20
		case 'G':
			num, shift = s[:len(s)-1], 30
		}
	}
	v, err := strconv.ParseInt(num, 10, 64)
	if err != nil || v < 0 || v > 1<<32 {
		return 0, fmt.Errorf("cpu: topology: %s: malformed cache size %q", path, s)
	}
	return v << shift, nil
}

// readInt reads a file holding one decimal integer.
func readInt(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("cpu: topology: %w", err)
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("cpu: topology: %s: malformed integer %q", path, strings.TrimSpace(string(b)))
	}
	return v, nil
}

// readCPUList reads a file in the kernel's CPU list format.
func readCPUList(path string) ([]int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cpu: topology: %w", err)
	}
	l, err := ParseCPUList(string(b))
	if err != nil {
		return nil, fmt.Errorf("cpu: topology: %s: %w", path, err)
	}
	return l, nil
}
