package cpu

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// MemPolicy is a NUMA memory policy for BindMemory. The values are the
// kernel's MPOL_* modes (include/uapi/linux/mempolicy.h).
type MemPolicy int

const (
	// MemDefault is the process's default policy: pages come from the
	// node of the thread that first touches them (MPOL_DEFAULT).
	MemDefault MemPolicy = iota
	// MemPreferred allocates on the given node while it has free memory,
	// elsewhere otherwise (MPOL_PREFERRED).
	MemPreferred
	// MemBind allocates only on the given node; when it runs out the
	// process is reclaimed from or killed rather than spilling over
	// (MPOL_BIND).
	MemBind
)

// get_mempolicy(2) flags (include/uapi/linux/mempolicy.h); x/sys/unix does
// not define them.
const (
	mpolFNode = 1 << 0 // MPOL_F_NODE: return a node ID, not a policy
	mpolFAddr = 1 << 1 // MPOL_F_ADDR: look up the policy/node of an address
)

// maxNodeID bounds the node numbers BindMemory passes to the kernel, which
// rejects a node mask longer than one page of bits (32768 nodes with 4 KiB
// pages); every kernel's MAX_NUMNODES is far below that.
const maxNodeID = 1 << 15

var memPolicyNames = [...]string{MemDefault: "default", MemPreferred: "preferred", MemBind: "bind"}

// String returns "default", "preferred" or "bind", or MemPolicy(N) for a
// value that is none of them.
func (p MemPolicy) String() string {
	if p >= 0 && int(p) < len(memPolicyNames) {
		return memPolicyNames[p]
	}
	return fmt.Sprintf("MemPolicy(%d)", int(p))
}

// ParseMemPolicy parses "default", "preferred" or "bind" (exactly, as
// String writes them).
func ParseMemPolicy(s string) (MemPolicy, error) {
	for p, name := range memPolicyNames {
		if s == name {
			return MemPolicy(p), nil
		}
	}
	return 0, fmt.Errorf("cpu: unknown memory policy %q: want %q, %q or %q",
		s, MemDefault, MemPreferred, MemBind)
}

// BindMemory applies policy p for node to the pages of b with mbind(2). b
// must be non-empty and start on a page boundary; the kernel rounds its
// length up to whole pages, so the policy also covers the rest of b's last
// page. MemDefault resets the range to the process policy and ignores
// node.
//
// Only pages faulted in afterwards follow the policy (no MPOL_MF_MOVE):
// call it on fresh memory, then touch the pages (TouchPages) from any
// thread. For a shared mapping (a memfd, shmem) the policy is recorded on
// the file's pages and holds for every mapping of them.
//
// Errors wrap the syscall error and name the node. Where the kernel has no
// NUMA support (ENOSYS; errors.Is(err, errors.ErrUnsupported)) or refuses
// the call (EPERM, e.g. a seccomp profile without CAP_SYS_NICE;
// errors.Is(err, fs.ErrPermission)), the message says so and callers
// should treat it as a warning and carry on with unplaced memory. EINVAL
// usually means the node does not exist, has no memory or is outside the
// cpuset's allowed memory nodes.
func BindMemory(b []byte, node int, p MemPolicy) error {
	if len(b) == 0 {
		return fmt.Errorf("cpu: bind memory to node %d (%s): empty range", node, p)
	}
	addr := uintptr(unsafe.Pointer(&b[0]))
	where := fmt.Sprintf("cpu: bind %d bytes at %#x to node %d (%s)", len(b), addr, node, p)
	if page := uintptr(os.Getpagesize()); addr%page != 0 {
		return fmt.Errorf("%s: address not aligned to the page size %d", where, page)
	}
	var mask []uint64
	switch p {
	case MemDefault:
		// MPOL_DEFAULT takes an empty node mask.
	case MemPreferred, MemBind:
		if node < 0 || node >= maxNodeID {
			return fmt.Errorf("%s: node outside [0, %d): %w", where, maxNodeID, unix.EINVAL)
		}
		mask = make([]uint64, node/64+1)
		mask[node/64] = 1 << (node % 64)
	default:
		return fmt.Errorf("%s: unknown memory policy", where)
	}
	var maskPtr, maxNode uintptr
	if len(mask) > 0 {
		maskPtr = uintptr(unsafe.Pointer(&mask[0]))
		// The kernel reads maxnode-1 bits (a historical off-by-one that
		// libnuma also compensates for).
		maxNode = uintptr(len(mask)*64 + 1)
	}
	_, _, errno := unix.Syscall6(unix.SYS_MBIND, addr, uintptr(len(b)), uintptr(p), maskPtr, maxNode, 0)
	// maskPtr is a bare uintptr to the GC: keep mask alive until the
	// kernel has read it.
	runtime.KeepAlive(mask)
	if errno != 0 {
		return fmt.Errorf("%s: mbind: %w%s", where, errno, numaHint(errno))
	}
	return nil
}

// numaHint explains the errors callers should treat as warnings.
func numaHint(errno unix.Errno) string {
	switch errno {
	case unix.ENOSYS:
		return " (the kernel has no NUMA support; memory stays unplaced)"
	case unix.EPERM:
		return " (NUMA memory policy not permitted here, e.g. a container without CAP_SYS_NICE; memory stays unplaced)"
	case unix.EINVAL:
		return " (no such node, no memory on it, or outside this process's allowed memory nodes)"
	}
	return ""
}

// NodeOfMemory reports the NUMA node of the page holding &b[0], with
// get_mempolicy(2) and MPOL_F_NODE|MPOL_F_ADDR. It is meant for tests and
// the run summary. The page must have been touched: the lookup faults in
// an absent page for reading, which for private anonymous memory maps the
// shared zero page and says nothing about where a write would put it.
func NodeOfMemory(b []byte) (int, error) {
	if len(b) == 0 {
		return -1, errors.New("cpu: node of memory: empty range")
	}
	addr := uintptr(unsafe.Pointer(&b[0]))
	var node int32 // the kernel writes an int
	_, _, errno := unix.Syscall6(unix.SYS_GET_MEMPOLICY, uintptr(unsafe.Pointer(&node)), 0, 0, addr, mpolFNode|mpolFAddr, 0)
	if errno != 0 {
		return -1, fmt.Errorf("cpu: node of memory at %#x: get_mempolicy: %w%s", addr, errno, numaHint(errno))
	}
	return int(node), nil
}

// MemoryNode is the node whose memory the CPUs of node use: node itself
// where it has memory, or where no node's memory is known (MemBytes 0
// everywhere), else the first node that has some. A node of CPUs without
// memory (POWER LPARs, some ARM and AMD machines) takes no mbind of its
// own: the kernel refuses a policy whose nodes have no memory.
func (t *Topology) MemoryNode(node int) int {
	first, known := -1, false
	for _, nd := range t.Nodes {
		if nd.MemBytes <= 0 {
			continue
		}
		if nd.ID == node {
			return node
		}
		if !known {
			first, known = nd.ID, true
		}
	}
	if !known || node < 0 {
		return node
	}
	return first
}

// NodeOfCPU returns the NUMA node of cpu in t, or -1 if t does not
// describe cpu.
func (t *Topology) NodeOfCPU(cpu int) int {
	if i := t.cpuIndex(cpu); i >= 0 {
		return t.CPUs[i].Node
	}
	for _, nd := range t.Nodes { // a hand-built Topology may list it only here
		for _, c := range nd.CPUs {
			if c == cpu {
				return nd.ID
			}
		}
	}
	return -1
}

// TouchPages writes one byte in every page b overlaps (b[0], then the first
// byte of each later page), writing back the value already there so the
// contents do not change. On memory not yet faulted in this is the first
// touch: under the default policy each page is allocated on the node of the
// calling thread, under BindMemory's policy where it says.
func TouchPages(b []byte) {
	if len(b) == 0 {
		return
	}
	page := os.Getpagesize()
	base := uintptr(unsafe.Pointer(&b[0]))
	for i := 0; i < len(b); {
		touchByte(&b[i], b[i])
		i += page - int((base+uintptr(i))%uintptr(page))
	}
}

// touchByte stores v, the value the caller read from *p, into *p. It is a
// separate, non-inlined function because the compiler drops a store of a
// value just loaded from the same address as a no-op, and the write fault
// is the point.
//
//go:noinline
func touchByte(p *byte, v byte) { *p = v }
