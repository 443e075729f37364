package kernels

import (
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// regStore is where a regular join keeps its tuples and their long
// strings: memory outside the Go heap (the views of the strings hold its
// addresses, and the collector need not scan what only grows), in
// mappings of regStoreChunk bytes, each populated when it is mapped
// (MAP_POPULATE: its pages faulted in by one call). A regular join's
// state grows for ever, each of its bytes written once when it is filed:
// with pages faulted one at a time as they are first written, the faults
// were over half of Nexmark q20's profile on this project's virtual
// machines (docs/nexmark.md). MADV_HUGEPAGE was tried and dropped: with
// the kernel's defrag at "madvise" a fault compacted memory and q20 ran
// slower.
//
// Workers allocate from it concurrently (RegularJoin.Cut, one allocation
// per input), under its own lock, not the join's.
type regStore struct {
	mu     sync.Mutex
	chunks [][]byte // chunks[len-1] is being filled, off bytes of it
	off    int
	large  [][]byte // mappings of allocations bigger than a chunk
	bytes  uint64   // handed out
}

// regStoreChunk is the size of a store's mappings: four huge pages. The
// first is regStoreFirst, and each next twice the last up to it, so that
// a small join (a test's, a side that keeps few tuples) maps and faults
// in little.
const (
	regStoreChunk = 8 << 20
	regStoreFirst = 256 << 10
)

// alloc returns n bytes (n > 0) that stay valid until free.
func (s *regStore) alloc(n int) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bytes += uint64(n)
	if n > regStoreChunk/4 {
		m := regMap((n + 4095) &^ 4095)
		s.large = append(s.large, m)
		return m[:n:n]
	}
	if len(s.chunks) == 0 || s.off+n > len(s.chunks[len(s.chunks)-1]) {
		size := regStoreFirst
		if k := len(s.chunks); k > 0 {
			size = min(regStoreChunk, 2*len(s.chunks[k-1]))
		}
		for size < n {
			size *= 2 // n is at most regStoreChunk/4
		}
		s.chunks = append(s.chunks, regMap(size))
		s.off = 0
	}
	c := s.chunks[len(s.chunks)-1]
	b := c[s.off : s.off+n : s.off+n]
	s.off += n
	return b
}

// free unmaps every mapping: every slice into the store becomes invalid.
func (s *regStore) free() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range append(s.chunks, s.large...) {
		if err := unix.Munmap(m); err != nil {
			panic(fmt.Sprintf("kernels: regular join: unmapping %d bytes: %v", len(m), err))
		}
	}
	s.chunks, s.off, s.large, s.bytes = nil, 0, nil, 0
}

func regMap(n int) []byte {
	m, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE|unix.MAP_POPULATE)
	if err != nil {
		panic(fmt.Sprintf("kernels: regular join: mapping %d bytes: %v", n, err))
	}

	return m
}
