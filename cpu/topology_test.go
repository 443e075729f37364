package cpu

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/klauspost/cpuid/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The fixture trees under testdata/ hold only the files DiscoverFS reads.
// Cache directories exist only for the CPUs the tests make the first
// allowed one (cpu0, and cpu4 of container-cpuset), since only that CPU's
// caches are read.

const (
	kib = int64(1) << 10
	mib = int64(1) << 20
)

// discoverFixture runs DiscoverFS on a fixture tree, checks the fields that
// come from CPUID against the real machine and clears them, so that the
// caller can compare the rest exactly.
func discoverFixture(t *testing.T, name string, allowed []int) *Topology {
	t.Helper()
	topo, err := DiscoverFS(filepath.Join("testdata", name), allowed)
	require.NoError(t, err)
	require.NotNil(t, topo)
	assertCPUIDFields(t, topo)
	topo.Vendor, topo.Brand, topo.Features = "", "", nil
	return topo
}

func assertCPUIDFields(t *testing.T, topo *Topology) {
	t.Helper()
	assert.Equal(t, cpuid.CPU.VendorString, topo.Vendor)
	assert.Equal(t, cpuid.CPU.BrandName, topo.Brand)
	want := []string{}
	for _, f := range features {
		if cpuid.CPU.Supports(f.id) {
			want = append(want, f.name)
		}
	}
	assert.Equal(t, want, topo.Features)
}

// twoSocketCPU is CPU i of the two-socket-smt tree: socket (i%8)/4, core
// i%4 within its socket (core IDs repeat across sockets, as on real
// machines), siblings i%8 and i%8+8, restricted to the allowed ones.
func twoSocketCPU(i int, allowed ...int) CPUInfo {
	s := (i % 8) / 4
	var sib []int
	for _, c := range []int{i % 8, i%8 + 8} {
		if allowed == nil || slices.Contains(allowed, c) {
			sib = append(sib, c)
		}
	}
	return CPUInfo{ID: i, Node: s, Socket: s, Core: i % 4, Siblings: sib}
}

func twoSocketCPUs(ids []int, allowed ...int) []CPUInfo {
	out := make([]CPUInfo, len(ids))
	for k, i := range ids {
		out[k] = twoSocketCPU(i, allowed...)
	}
	return out
}

var fixtures = []struct {
	name    string // subtest name
	tree    string // directory under testdata
	allowed []int
	want    Topology
}{
	{
		name: "one-socket", tree: "one-socket",
		want: Topology{
			Nodes: []Node{{ID: 0, CPUs: []int{0, 1, 2, 3}, MemBytes: 16777216 * kib}},
			CPUs: []CPUInfo{
				{ID: 0, Core: 0, Siblings: []int{0}}, {ID: 1, Core: 1, Siblings: []int{1}},
				{ID: 2, Core: 2, Siblings: []int{2}}, {ID: 3, Core: 3, Siblings: []int{3}},
			},
			L1D: 32 * kib, L2: 1 * mib, L3: 8 * mib,
		},
	},
	{
		name: "two-socket-smt", tree: "two-socket-smt",
		want: Topology{
			Nodes: []Node{
				{ID: 0, CPUs: []int{0, 1, 2, 3, 8, 9, 10, 11}, MemBytes: 32768000 * kib},
				{ID: 1, CPUs: []int{4, 5, 6, 7, 12, 13, 14, 15}, MemBytes: 33554432 * kib},
			},
			CPUs: twoSocketCPUs([]int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}),
			L1D:  48 * kib, L2: 2 * mib, L3: 60 * mib,
		},
	},
	{
		// A cpuset of node 0 only: node 1 keeps its memory, with no CPU.
		name: "container-cpuset/node0", tree: "container-cpuset",
		allowed: []int{0, 1, 2, 3, 8, 9, 10, 11},
		want: Topology{
			Nodes: []Node{
				{ID: 0, CPUs: []int{0, 1, 2, 3, 8, 9, 10, 11}, MemBytes: 32768000 * kib},
				{ID: 1, CPUs: []int{}, MemBytes: 33554432 * kib},
			},
			CPUs: twoSocketCPUs([]int{0, 1, 2, 3, 8, 9, 10, 11}, 0, 1, 2, 3, 8, 9, 10, 11),
			L1D:  48 * kib, L2: 2 * mib, L3: 60 * mib,
		},
	},
	{
		// One thread of every core, unsorted, plus a CPU that is not
		// online: no CPU has an allowed sibling, and 99 is ignored.
		name: "container-cpuset/one-thread-per-core", tree: "container-cpuset",
		allowed: []int{11, 10, 9, 8, 7, 6, 5, 4, 99},
		want: Topology{
			Nodes: []Node{
				{ID: 0, CPUs: []int{8, 9, 10, 11}, MemBytes: 32768000 * kib},
				{ID: 1, CPUs: []int{4, 5, 6, 7}, MemBytes: 33554432 * kib},
			},
			CPUs: twoSocketCPUs([]int{4, 5, 6, 7, 8, 9, 10, 11}, 4, 5, 6, 7, 8, 9, 10, 11),
			L1D:  48 * kib, L2: 2 * mib, L3: 60 * mib,
		},
	},
	{
		// Uneven: six CPUs on node 0 (two cores with both threads), two on
		// node 1.
		name: "container-cpuset/uneven", tree: "container-cpuset",
		allowed: []int{0, 1, 2, 3, 4, 5, 8, 9},
		want: Topology{
			Nodes: []Node{
				{ID: 0, CPUs: []int{0, 1, 2, 3, 8, 9}, MemBytes: 32768000 * kib},
				{ID: 1, CPUs: []int{4, 5}, MemBytes: 33554432 * kib},
			},
			CPUs: twoSocketCPUs([]int{0, 1, 2, 3, 4, 5, 8, 9}, 0, 1, 2, 3, 4, 5, 8, 9),
			L1D:  48 * kib, L2: 2 * mib, L3: 60 * mib,
		},
	},
	{
		// Intel-style SMT numbering: threads of a core are N apart.
		name: "memoryless-node", tree: "memoryless-node",
		want: Topology{
			Nodes: []Node{
				{ID: 0, CPUs: []int{0, 1, 2, 3}, MemBytes: 8388608 * kib},
				{ID: 1, CPUs: []int{}, MemBytes: 4194304 * kib},
			},
			CPUs: []CPUInfo{
				{ID: 0, Core: 0, Siblings: []int{0, 2}}, {ID: 1, Core: 1, Siblings: []int{1, 3}},
				{ID: 2, Core: 0, Siblings: []int{0, 2}}, {ID: 3, Core: 1, Siblings: []int{1, 3}},
			},
			L1D: 32 * kib, L2: 1280 * kib, L3: 12 * mib,
		},
	},
	{
		// AMD-style SMT numbering: threads of a core are adjacent.
		name: "no-node-dir", tree: "no-node-dir",
		want: Topology{
			Nodes: []Node{{ID: 0, CPUs: []int{0, 1, 2, 3}}},
			CPUs: []CPUInfo{
				{ID: 0, Core: 0, Siblings: []int{0, 1}}, {ID: 1, Core: 0, Siblings: []int{0, 1}},
				{ID: 2, Core: 1, Siblings: []int{2, 3}}, {ID: 3, Core: 1, Siblings: []int{2, 3}},
			},
			L1D: 32 * kib, L2: 512 * kib, L3: 16 * mib,
			Notes: []string{"no " + filepath.Join("testdata", "no-node-dir", "sys/devices/system/node") + ": one node 0 assumed, holding every CPU"},
		},
	},
}

func TestDiscoverFSFixtures(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			got := discoverFixture(t, f.tree, f.allowed)
			assert.Equal(t, f.want, *got)
		})
	}
}

// writeTree creates files (path relative to the sysfs root: content) in a
// temporary directory and returns its root.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
	}
	return root
}

// minimalTree is a valid two-CPU, one-node tree with full caches, for tests
// to break one file at a time.
func minimalTree() map[string]string {
	const c, n = "sys/devices/system/cpu/", "sys/devices/system/node/"
	return map[string]string{
		c + "online":                             "0-1\n",
		c + "cpu0/topology/physical_package_id":  "0\n",
		c + "cpu0/topology/core_id":              "0\n",
		c + "cpu0/topology/thread_siblings_list": "0\n",
		c + "cpu1/topology/physical_package_id":  "0\n",
		c + "cpu1/topology/core_id":              "1\n",
		c + "cpu1/topology/thread_siblings_list": "1\n",
		c + "cpu0/cache/index0/level":            "1\n",
		c + "cpu0/cache/index0/type":             "Data\n",
		c + "cpu0/cache/index0/size":             "32K\n",
		c + "cpu0/cache/index2/level":            "2\n",
		c + "cpu0/cache/index2/type":             "Unified\n",
		c + "cpu0/cache/index2/size":             "1024K\n",
		c + "cpu0/cache/index3/level":            "3\n",
		c + "cpu0/cache/index3/type":             "Unified\n",
		c + "cpu0/cache/index3/size":             "32M\n",
		n + "node0/cpulist":                      "0-1\n",
		n + "node0/meminfo":                      "Node 0 MemTotal:       1024 kB\nNode 0 MemFree:         512 kB\n",
	}
}

func TestDiscoverFSMinimalTreeIsValid(t *testing.T) {
	// The error cases below break this tree one file at a time; it must
	// parse cleanly as it is, or they would prove nothing.
	topo, err := DiscoverFS(writeTree(t, minimalTree()), nil)
	require.NoError(t, err)
	assert.Equal(t, []Node{{ID: 0, CPUs: []int{0, 1}, MemBytes: 1 << 20}}, topo.Nodes)
	assert.Equal(t, []int64{32 * kib, 1 * mib, 32 * mib}, []int64{topo.L1D, topo.L2, topo.L3})
	assert.Empty(t, topo.Notes)
}

func TestDiscoverFSErrorsNameTheFile(t *testing.T) {
	const c, n = "sys/devices/system/cpu/", "sys/devices/system/node/"
	cases := []struct {
		name    string
		edit    map[string]string // "" content deletes the file
		allowed []int
		file    string // the file the error must name
		reason  string // and a piece of its wording
	}{
		{"online malformed", map[string]string{c + "online": "0-x\n"}, nil, c + "online", `bad part "0-x"`},
		{"online missing", map[string]string{c + "online": ""}, nil, c + "online", "no such file"},
		{"core_id malformed", map[string]string{c + "cpu1/topology/core_id": "one\n"}, nil, c + "cpu1/topology/core_id", "malformed integer"},
		{"package missing", map[string]string{c + "cpu0/topology/physical_package_id": ""}, nil, c + "cpu0/topology/physical_package_id", "no such file"},
		{"siblings without itself", map[string]string{c + "cpu1/topology/thread_siblings_list": "0\n"}, nil, c + "cpu1/topology/thread_siblings_list", "does not list cpu1 itself"},
		{"cache size malformed", map[string]string{c + "cpu0/cache/index2/size": "1024Q\n"}, nil, c + "cpu0/cache/index2/size", "malformed cache size"},
		{"cache level malformed", map[string]string{c + "cpu0/cache/index3/level": "L3\n"}, nil, c + "cpu0/cache/index3/level", "malformed integer"},
		{"meminfo malformed", map[string]string{n + "node0/meminfo": "Node 0 MemTotal: lots kB\n"}, nil, n + "node0/meminfo", "malformed MemTotal"},
		{"meminfo without MemTotal", map[string]string{n + "node0/meminfo": "Node 0 MemFree: 1 kB\n"}, nil, n + "node0/meminfo", "no MemTotal line"},
		{"cpulist missing", map[string]string{n + "node0/cpulist": ""}, nil, n + "node0/cpulist", "no such file"},
		{"cpu in two nodes", map[string]string{n + "node1/cpulist": "1\n"}, nil, n + "node1/cpulist", "cpu1 is also in node0"},
		{"cpu in no node", map[string]string{n + "node0/cpulist": "0\n"}, nil, n, "cpu1 is in no nodeN/cpulist"},
		{"nothing allowed online", nil, []int{5, 6}, c + "online", "no allowed CPU (5-6) is online"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			files := minimalTree()
			for p, content := range tc.edit {
				if content == "" {
					delete(files, p)
				} else {
					files[p] = content
				}
			}
			root := writeTree(t, files)
			topo, err := DiscoverFS(root, tc.allowed)
			require.Error(t, err)
			assert.Nil(t, topo)
			assert.Contains(t, err.Error(), filepath.Join(root, tc.file))
			assert.Contains(t, err.Error(), tc.reason)
		})
	}
}

func TestDiscoverFSNodes(t *testing.T) {
	files := minimalTree()
	const n = "sys/devices/system/node/"
	// node0 has CPU 0 only; node2 and node10 have no CPU, node10 has memory,
	// node2 none, and node2 lacks meminfo altogether (memory unknown).
	files[n+"node0/cpulist"] = "0\n"
	files[n+"node10/cpulist"] = "1\n"
	files[n+"node10/meminfo"] = "Node 10 MemTotal:       2048 kB\n"
	files[n+"node2/cpulist"] = "\n"
	files[n+"online"] = "0,2,10\n" // not a node directory: skipped
	root := writeTree(t, files)

	t.Run("ID order, not name order", func(t *testing.T) {
		topo, err := DiscoverFS(root, nil)
		require.NoError(t, err)
		assert.Equal(t, []Node{
			{ID: 0, CPUs: []int{0}, MemBytes: 1 << 20},
			{ID: 10, CPUs: []int{1}, MemBytes: 2 << 20},
		}, topo.Nodes, "node2 has neither CPU nor memory")
		assert.Equal(t, []int{0, 10}, []int{topo.CPUs[0].Node, topo.CPUs[1].Node})
	})
	t.Run("a node whose CPUs are all outside the cpuset keeps its memory", func(t *testing.T) {
		topo, err := DiscoverFS(root, []int{1})
		require.NoError(t, err)
		assert.Equal(t, []Node{
			{ID: 0, CPUs: []int{}, MemBytes: 1 << 20},
			{ID: 10, CPUs: []int{1}, MemBytes: 2 << 20},
		}, topo.Nodes)
		assert.Equal(t, []CPUInfo{{ID: 1, Node: 10, Core: 1, Siblings: []int{1}}}, topo.CPUs)
	})
}

func TestDiscoverFSCachesFallBackToCPUID(t *testing.T) {
	files := minimalTree()
	for p := range files {
		if filepath.Base(filepath.Dir(filepath.Dir(p))) == "cache" {
			delete(files, p)
		}
	}
	// An instruction cache alone says nothing about L1d.
	files["sys/devices/system/cpu/cpu0/cache/index1/level"] = "1\n"
	files["sys/devices/system/cpu/cpu0/cache/index1/type"] = "Instruction\n"
	files["sys/devices/system/cpu/cpu0/cache/index1/size"] = "64K\n"
	topo, err := DiscoverFS(writeTree(t, files), nil)
	require.NoError(t, err)

	want := func(n int) int64 { return int64(max(n, 0)) } // cpuid says -1 for unknown
	assert.Equal(t, want(cpuid.CPU.Cache.L1D), topo.L1D)
	assert.Equal(t, want(cpuid.CPU.Cache.L2), topo.L2)
	assert.Equal(t, want(cpuid.CPU.Cache.L3), topo.L3)
	if cpuid.CPU.Cache.L1D > 0 || cpuid.CPU.Cache.L2 > 0 || cpuid.CPU.Cache.L3 > 0 {
		require.Len(t, topo.Notes, 1)
		assert.Contains(t, topo.Notes[0], "size from cpuid")
	} else {
		assert.Empty(t, topo.Notes)
	}
}

func TestDiscoverRealMachine(t *testing.T) {
	topo, err := Discover()
	require.NoError(t, err)
	assertCPUIDFields(t, topo)
	require.NotEmpty(t, topo.Nodes)
	require.NotEmpty(t, topo.CPUs)

	// Every allowed CPU is online on any machine these tests run on.
	assert.Equal(t, AllowedCPUs(), topo.cpuIDs())
	inNodes := map[int]int{}
	for _, n := range topo.Nodes {
		for _, c := range n.CPUs {
			inNodes[c] = n.ID
		}
	}
	for _, c := range topo.CPUs {
		assert.Equal(t, c.Node, inNodes[c.ID], "cpu%d: its Node lists it", c.ID)
		assert.Contains(t, c.Siblings, c.ID, "cpu%d siblings include itself", c.ID)
	}
	assert.Len(t, inNodes, len(topo.CPUs), "each CPU in exactly one node")
}
