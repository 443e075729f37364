package kernels

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// regStore is where a regular join keeps its tuples and their long
// strings: memory outside the Go heap (the views of the strings hold its
// addresses, and the collector need not scan what only grows), in
// mappings of regStoreChunk bytes asked to be backed by huge pages
// (madvise MADV_HUGEPAGE). A regular join's state grows for ever, each of
// its bytes written once when it is filed: with 4 KiB pages every 4 KiB
// of it is a page fault under the join's lock, which on this project's
// virtual machines was most of Nexmark q20's filing (docs/nexmark.md);
// a huge page faults once per 2 MiB. Where the kernel gives no huge
// pages, the advice is ignored and the store works as an arena.
type regStore struct {
	chunks [][]byte // chunks[len-1] is being filled, off bytes of it
	off    int
	large  [][]byte // mappings of allocations bigger than a chunk
	bytes  uint64   // handed out
}

// regStoreChunk is the size of a store's mappings: four huge pages.
const regStoreChunk = 8 << 20

// alloc returns n bytes (n > 0) that stay valid until free.
func (s *regStore) alloc(n int) []byte {
	s.bytes += uint64(n)
	if n > regStoreChunk/4 {
		m := regMap((n + 4095) &^ 4095)
		s.large = append(s.large, m)
		return m[:n:n]
	}
	if len(s.chunks) == 0 || s.off+n > regStoreChunk {
		s.chunks = append(s.chunks, regMap(regStoreChunk))
		s.off = 0
	}
	c := s.chunks[len(s.chunks)-1]
	b := c[s.off : s.off+n : s.off+n]
	s.off += n
	return b
}

// copy copies b into the store and returns the copy.
func (s *regStore) copy(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	c := s.alloc(len(b))
	copy(c, b)
	return c
}

// free unmaps every mapping: every slice into the store becomes invalid.
func (s *regStore) free() {
	for _, m := range append(s.chunks, s.large...) {
		if err := unix.Munmap(m); err != nil {
			panic(fmt.Sprintf("kernels: regular join: unmapping %d bytes: %v", len(m), err))
		}
	}
	*s = regStore{}
}

func regMap(n int) []byte {
	m, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE|unix.MAP_POPULATE)
	if err != nil {
		panic(fmt.Sprintf("kernels: regular join: mapping %d bytes: %v", n, err))
	}

	return m
}
