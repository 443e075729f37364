package strview

import (
	"fmt"
	"os"
	"syscall"
)

// DefaultChunkSize is the size of an arena's chunks unless NewArena says
// otherwise.
const DefaultChunkSize = 1 << 20

// Arena holds the bytes of long strings outside the Go heap, in chunks
// mapped with mmap, so that views may store their addresses (see the
// package comment). Allocation bumps an offset in the current chunk; Reset
// rewinds it and keeps the chunks, so that an arena reused per task or per
// window allocates nothing once it has grown to its working size.
//
// A string bigger than a chunk gets a mapping of its own, which Reset
// unmaps: such strings are rare, copying one costs more than mapping it,
// and keeping the mapping would let one outsized string hold its memory
// for the arena's life.
//
// Every view and slice into an arena becomes invalid at its Reset or Free:
// reading one afterwards reads another string's bytes or faults.
//
// The zero Arena is ready to use with DefaultChunkSize chunks. An Arena is
// not safe for concurrent use. Its memory is not garbage collected: Free
// returns it to the operating system.
type Arena struct {
	chunkSize int
	chunks    [][]byte // ordinary chunks, chunkSize bytes each
	cur       int      // chunks[:cur] hold this cycle's strings; chunks[cur-1] is being filled
	off       int      // bytes used in chunks[cur-1]
	large     [][]byte // mappings of strings bigger than a chunk, this cycle's
	used      int
}

// NewArena returns an arena whose chunks are chunkSize bytes, rounded up
// to whole pages; 0 or less means DefaultChunkSize.
func NewArena(chunkSize int) *Arena {
	a := &Arena{}
	if chunkSize > 0 {
		a.chunkSize = roundPage(chunkSize)
	}
	return a
}

func roundPage(n int) int {
	p := os.Getpagesize()
	return (n + p - 1) / p * p
}

func (a *Arena) size() int {
	if a.chunkSize == 0 {
		a.chunkSize = DefaultChunkSize
	}
	return a.chunkSize
}

// Alloc returns n bytes of the arena, valid until its Reset or Free. They
// are zero the first time the arena hands them out, and hold earlier
// strings' bytes after a Reset. Alloc panics if the operating system
// refuses memory, as the Go runtime does when its heap cannot grow.
func (a *Arena) Alloc(n int) []byte {
	if n <= 0 {
		if n < 0 {
			panic(fmt.Sprintf("strview: Arena.Alloc(%d)", n))
		}
		return nil
	}
	cs := a.size()
	if n > cs {
		m := mmap(roundPage(n))
		a.large = append(a.large, m)
		a.used += n
		return m[:n:n]
	}
	if a.cur == 0 || a.off+n > cs {
		// The rest of the current chunk is left unused: strings are
		// small next to a chunk, so little is lost, and a string never
		// spans two mappings.
		if a.cur == len(a.chunks) {
			a.chunks = append(a.chunks, mmap(cs))
		}
		a.cur++
		a.off = 0
	}
	c := a.chunks[a.cur-1]
	b := c[a.off : a.off+n : a.off+n]
	a.off += n
	a.used += n
	return b
}

// Copy copies s into the arena and returns the copy.
func (a *Arena) Copy(s []byte) []byte {
	b := a.Alloc(len(s))
	copy(b, s)
	return b
}

// Bytes is the number of bytes handed out since the last Reset.
func (a *Arena) Bytes() int { return a.used }

// Reset makes all of the arena's memory reusable, invalidating every view
// into it. The ordinary chunks stay mapped for the next strings.
func (a *Arena) Reset() {
	for i, m := range a.large {
		munmap(m)
		a.large[i] = nil
	}
	a.large = a.large[:0]
	a.cur, a.off, a.used = 0, 0, 0
}

// Free unmaps all of the arena's memory, invalidating every view into it.
// The arena may be used again afterwards; it maps chunks anew.
func (a *Arena) Free() {
	a.Reset()
	for _, m := range a.chunks {
		munmap(m)
	}
	a.chunks, a.large = nil, nil
}

func mmap(n int) []byte {
	m, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		panic(fmt.Sprintf("strview: mapping %d bytes for an arena: %v", n, err))
	}
	return m
}

func munmap(m []byte) {
	if err := syscall.Munmap(m); err != nil {
		panic(fmt.Sprintf("strview: unmapping an arena's %d bytes: %v", len(m), err))
	}
}
