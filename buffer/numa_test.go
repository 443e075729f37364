package buffer

import (
	"errors"
	"os"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/saber-hx/saber-hx/cpu"
)

func skipWithoutNUMA(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
		t.Skipf("NUMA memory policy unavailable on this machine: %v", err)
	}
}

// policyAt reads back the policy mode and node mask of the page at p
// (get_mempolicy with MPOL_F_ADDR).
func policyAt(t *testing.T, p *byte) (cpu.MemPolicy, uint64) {
	t.Helper()
	var mode int32
	var mask [64]uint64
	const mpolFAddr = 1 << 1
	_, _, errno := unix.Syscall6(unix.SYS_GET_MEMPOLICY, uintptr(unsafe.Pointer(&mode)),
		uintptr(unsafe.Pointer(&mask[0])), uintptr(len(mask)*64+1), uintptr(unsafe.Pointer(p)), mpolFAddr, 0)
	require.Zero(t, errno, "get_mempolicy: %v", errno)
	for _, w := range mask[1:] {
		require.Zero(t, w, "node mask beyond node 63")
	}
	return cpu.MemPolicy(mode), mask[0]
}

func TestNewRingOnNode(t *testing.T) {
	page := os.Getpagesize()
	size := 4 * page
	for _, p := range []cpu.MemPolicy{cpu.MemPreferred, cpu.MemBind, cpu.MemDefault} {
		t.Run(p.String(), func(t *testing.T) {
			r, err := NewRingOnNode(size, 0, p)
			skipWithoutNUMA(t, err)
			require.NoError(t, err)
			defer r.Close()
			require.Equal(t, size, r.Size())

			node, err := r.Node()
			require.NoError(t, err)
			assert.Equal(t, 0, node)

			// The policy covers both halves of the mirror, every page.
			wantMask := uint64(1)
			if p == cpu.MemDefault {
				wantMask = 0
			}
			for off := 0; off < 2*size; off += page {
				mode, mask := policyAt(t, &r.buf[off])
				assert.Equal(t, p, mode, "policy at offset %d", off)
				assert.Equal(t, wantMask, mask, "node mask at offset %d", off)
			}
			// Every page is resident already, in the first half's
			// mapping, and on node 0.
			vec := make([]byte, size/page)
			_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&r.buf[0])), uintptr(size), uintptr(unsafe.Pointer(&vec[0])))
			require.Zero(t, errno, "mincore: %v", errno)
			for i, v := range vec {
				assert.Equal(t, byte(1), v&1, "page %d resident", i)
				n, err := cpu.NodeOfMemory(r.buf[i*page:])
				require.NoError(t, err)
				assert.Equal(t, 0, n, "node of page %d", i)
			}

			// A working mirrored ring: write across the wrap, read back.
			first := size - 100
			b, err := r.Reserve(first)
			require.NoError(t, err)
			for i := range b {
				b[i] = 0xAA
			}
			r.Commit(first)
			r.Free(uint64(first))

			const n = 300
			b, err = r.Reserve(n)
			require.NoError(t, err)
			require.Len(t, b, n)
			for i := range b {
				b[i] = byte(i + 1)
			}
			assert.Equal(t, uint64(first+n), r.Commit(n))
			got := r.Slice(uint64(first), n)
			for i := range got {
				require.Equal(t, byte(i+1), got[i], "byte %d across the wrap", i)
			}
			// The bytes past the wrap are the start of the first half.
			for i := 100; i < n; i++ {
				require.Equal(t, byte(i+1), r.buf[i-100], "mirror byte %d", i-100)
			}
			r.Free(uint64(first + n))

			require.NoError(t, r.Close())
			_, err = r.Node()
			assert.ErrorContains(t, err, "closed")
		})
	}
}

func TestNewRingOnNodeErrors(t *testing.T) {
	page := os.Getpagesize()

	_, err := NewRingOnNode(3*page, 0, cpu.MemPreferred)
	assert.ErrorContains(t, err, "not a power of two")

	_, err = NewRingOnNode(4*page, 4095, cpu.MemBind)
	require.Error(t, err)
	skipWithoutNUMA(t, err)
	assert.Contains(t, err.Error(), "node 4095")
	assert.Contains(t, err.Error(), "buffer: ring size")
	assert.ErrorIs(t, err, unix.EINVAL)
}

func TestRingNodePlainRing(t *testing.T) {
	r, err := NewRing(2 * os.Getpagesize())
	require.NoError(t, err)
	defer r.Close()
	b, err := r.Reserve(1)
	require.NoError(t, err)
	b[0] = 1
	r.Commit(1)
	node, err := r.Node()
	skipWithoutNUMA(t, err)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, node, 0)
}
