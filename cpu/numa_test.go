package cpu

import (
	"errors"
	"os"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// skipWithoutNUMA skips the test when err says the kernel has no NUMA
// support (ENOSYS) or forbids memory policies here (EPERM, e.g. a seccomp
// profile in a container): the cases BindMemory's callers treat as a
// warning.
func skipWithoutNUMA(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
		t.Skipf("NUMA memory policy unavailable on this machine: %v", err)
	}
}

// mapAnon maps pages fresh, untouched pages of private anonymous memory.
func mapAnon(t *testing.T, pages int) []byte {
	t.Helper()
	b, err := unix.Mmap(-1, 0, pages*os.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, unix.Munmap(b)) })
	return b
}

// policyOf reads back the policy mode and node mask governing the page at
// &b[0] (get_mempolicy with MPOL_F_ADDR).
func policyOf(t *testing.T, b []byte) (MemPolicy, []int) {
	t.Helper()
	var mode int32
	var mask [64]uint64 // 4096 nodes: at least any kernel's nr_node_ids
	_, _, errno := unix.Syscall6(unix.SYS_GET_MEMPOLICY, uintptr(unsafe.Pointer(&mode)),
		uintptr(unsafe.Pointer(&mask[0])), uintptr(len(mask)*64+1), uintptr(unsafe.Pointer(&b[0])), mpolFAddr, 0)
	if errno != 0 {
		skipWithoutNUMA(t, errno)
		require.NoError(t, errno, "get_mempolicy")
	}
	var nodes []int
	for i := range len(mask) * 64 {
		if mask[i/64]&(1<<(i%64)) != 0 {
			nodes = append(nodes, i)
		}
	}
	return MemPolicy(mode), nodes
}

func TestBindMemoryNode0(t *testing.T) {
	page := os.Getpagesize()
	for _, p := range []MemPolicy{MemPreferred, MemBind} {
		t.Run(p.String(), func(t *testing.T) {
			b := mapAnon(t, 8)
			err := BindMemory(b, 0, p)
			skipWithoutNUMA(t, err)
			require.NoError(t, err)

			// The policy took: every page of the range reports it.
			for off := 0; off < len(b); off += page {
				mode, nodes := policyOf(t, b[off:])
				require.Equal(t, p, mode, "policy of page %d", off/page)
				require.Equal(t, []int{0}, nodes, "node mask of page %d", off/page)
			}

			TouchPages(b)
			for off := 0; off < len(b); off += page {
				node, err := NodeOfMemory(b[off:])
				require.NoError(t, err)
				require.Equal(t, 0, node, "node of page %d", off/page)
			}

			// MemDefault resets the range; node is ignored.
			require.NoError(t, BindMemory(b, 12345, MemDefault))
			mode, nodes := policyOf(t, b)
			assert.Equal(t, MemDefault, mode)
			assert.Empty(t, nodes)
		})
	}
}

func TestBindMemoryRefusesBadArguments(t *testing.T) {
	page := os.Getpagesize()
	b := mapAnon(t, 2)

	err := BindMemory(b[1:], 0, MemBind)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not aligned")
	assert.Contains(t, err.Error(), "node 0")

	// Unaligned in a way the kernel would also reject, even with the
	// default policy.
	assert.ErrorContains(t, BindMemory(b[page/2:], 0, MemDefault), "not aligned")

	assert.ErrorContains(t, BindMemory(nil, 0, MemBind), "empty range")
	assert.ErrorContains(t, BindMemory(b, 0, MemPolicy(7)), "unknown memory policy")

	err = BindMemory(b, -1, MemPreferred)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "node -1")
	assert.ErrorIs(t, err, unix.EINVAL)

	err = BindMemory(b, 1<<20, MemBind)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "node 1048576")
	assert.ErrorIs(t, err, unix.EINVAL)
}

func TestBindMemoryInvalidNode(t *testing.T) {
	b := mapAnon(t, 1)
	for _, p := range []MemPolicy{MemPreferred, MemBind} {
		// 4095 is within the range BindMemory passes on, so the kernel
		// itself refuses it (no such node).
		err := BindMemory(b, 4095, p)
		require.Error(t, err, p.String())
		skipWithoutNUMA(t, err)
		assert.Contains(t, err.Error(), "node 4095", p.String())
		assert.ErrorIs(t, err, unix.EINVAL, p.String())
		assert.Contains(t, err.Error(), "mbind", p.String())
	}
}

func TestNodeOfMemory(t *testing.T) {
	_, err := NodeOfMemory(nil)
	assert.ErrorContains(t, err, "empty range")

	// Touched by the Go runtime: a heap object.
	buf := make([]byte, 64)
	buf[0] = 1
	node, err := NodeOfMemory(buf)
	skipWithoutNUMA(t, err)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, node, 0)
}

func TestTouchPages(t *testing.T) {
	page := os.Getpagesize()
	TouchPages(nil) // no panic

	b := mapAnon(t, 4)
	for i := range b {
		b[i] = byte(i * 7)
	}
	TouchPages(b[100 : 3*page+1])
	for i := range b {
		if b[i] != byte(i*7) {
			t.Fatalf("TouchPages changed byte %d: %d, want %d", i, b[i], byte(i*7))
		}
	}

	// Fresh pages: an unaligned range spanning three pages faults in
	// exactly those three.
	f := mapAnon(t, 4)
	TouchPages(f[page-1 : 2*page+1])
	vec := make([]byte, 4)
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&f[0])), uintptr(len(f)), uintptr(unsafe.Pointer(&vec[0])))
	require.Zero(t, errno, "mincore: %v", errno)
	assert.Equal(t, []byte{1, 1, 1, 0}, []byte{vec[0] & 1, vec[1] & 1, vec[2] & 1, vec[3] & 1})
}

func TestParseMemPolicy(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want MemPolicy
		err  bool
	}{
		{"default", MemDefault, false},
		{"preferred", MemPreferred, false},
		{"bind", MemBind, false},
		{"", 0, true},
		{"Bind", 0, true},
		{" bind", 0, true},
		{"interleave", 0, true},
		{"local", 0, true},
	} {
		got, err := ParseMemPolicy(tc.in)
		if tc.err {
			require.Error(t, err, "%q", tc.in)
			assert.Contains(t, err.Error(), `"`+tc.in+`"`)
			for _, name := range []string{`"default"`, `"preferred"`, `"bind"`} {
				assert.Contains(t, err.Error(), name, "error for %q names the valid values", tc.in)
			}
			continue
		}
		require.NoError(t, err, "%q", tc.in)
		assert.Equal(t, tc.want, got, "%q", tc.in)
		assert.Equal(t, tc.in, got.String())
	}
	assert.Equal(t, "MemPolicy(7)", MemPolicy(7).String())
	assert.Equal(t, "MemPolicy(-1)", MemPolicy(-1).String())
	// The kernel's MPOL_* numbering.
	assert.Equal(t, []int{0, 1, 2}, []int{int(MemDefault), int(MemPreferred), int(MemBind)})
}

func TestNodeOfCPU(t *testing.T) {
	for _, tc := range []struct {
		tree    string
		allowed []int
		want    map[int]int
	}{
		{"two-socket-smt", nil, map[int]int{0: 0, 3: 0, 4: 1, 7: 1, 8: 0, 11: 0, 12: 1, 15: 1, 16: -1, -1: -1}},
		{"container-cpuset", []int{4, 5, 6, 7}, map[int]int{4: 1, 7: 1, 0: -1, 12: -1}},
		{"one-socket", nil, map[int]int{0: 0, 3: 0, 4: -1}},
		{"memoryless-node", nil, map[int]int{0: 0, 3: 0}},
		{"no-node-dir", nil, map[int]int{0: 0, 3: 0, 4: -1}},
	} {
		topo := discoverFixture(t, tc.tree, tc.allowed)
		for cpu, want := range tc.want {
			assert.Equal(t, want, topo.NodeOfCPU(cpu), "%s: cpu %d", tc.tree, cpu)
		}
	}

	// A hand-built topology may list a CPU only under its node.
	hand := &Topology{Nodes: []Node{{ID: 3, CPUs: []int{5}}}}
	assert.Equal(t, 3, hand.NodeOfCPU(5))
	assert.Equal(t, -1, hand.NodeOfCPU(6))
}

func TestNodeOfCPURealMachine(t *testing.T) {
	topo, err := Discover()
	require.NoError(t, err)
	for _, c := range topo.CPUs {
		assert.Equal(t, c.Node, topo.NodeOfCPU(c.ID))
	}
}
