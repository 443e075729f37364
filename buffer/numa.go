package buffer

import (
	"errors"
	"fmt"

	"github.com/saber-hx/saber-hx/cpu"
)

// NewRingOnNode is NewRing with the ring's memory placed on a NUMA node
// under policy p (see cpu.BindMemory), and every page faulted in before it
// returns, so that neither the producer nor a consumer pays a page fault
// for a first write and the placement does not depend on which thread
// touches a page first.
//
// Both halves of the mirror map the same memfd pages. The node of a shared
// page is decided when it is first faulted in, by the policy of the mapping
// that faults it, so the policy is applied to both halves' ranges before
// any page is touched, and the pages are then touched once through the
// first half.
//
// With MemDefault no policy is set (a fresh memfd already has the default
// one) and node is ignored: the pages land on the node of the calling
// thread. Otherwise a failing mbind fails the call and releases the memory;
// where the kernel has no NUMA support or refuses the call
// (errors.Is(err, errors.ErrUnsupported) or errors.Is(err, fs.ErrPermission))
// a caller should warn and fall back to NewRing.
func NewRingOnNode(size, node int, p cpu.MemPolicy) (*Ring, error) {
	return newRing(size, func(buf []byte) error {
		if p != cpu.MemDefault {
			if err := cpu.BindMemory(buf, node, p); err != nil {
				return err
			}
		}
		cpu.TouchPages(buf[:size])
		return nil
	})
}

// Node reports the NUMA node of the ring's first page (cpu.NodeOfMemory).
// It fails once the ring is closed. For a ring from NewRing the page must
// have been written first.
func (r *Ring) Node() (int, error) {
	r.unmapMu.Lock()
	defer r.unmapMu.Unlock()
	if r.unmapped {
		return -1, errors.New("buffer: node of ring: ring closed")
	}
	n, err := cpu.NodeOfMemory(r.buf[:1])
	if err != nil {
		return -1, fmt.Errorf("buffer: node of ring of %d bytes: %w", r.size, err)
	}
	return n, nil
}
