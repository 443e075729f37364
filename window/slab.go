package window

import "unsafe"

// slab hands out the arrays that hold a query's window state for as long
// as the query runs: the rows of the panes of an id-indexed layout and the
// lists of their groups. A pane may give its rows to a worker in exchange
// for the worker's direct table (absorbPinned), so that the tables the
// workers write come from the panes' slab too, once each task record has
// made its first ones: one slab per assembler, where one per task record
// would carve a block for each of them. Such arrays are made while
// the first window's span of event time fills (an hour of panes for a
// sliding window), are written as soon as they are made, and are then
// reused, never freed one by one. Once a slab has handed out slabFrom
// bytes (a small query's state never does, and costs nothing more), it
// carves them from blocks of slabBlock bytes, each advised for huge pages
// where the kernel leaves that to the program (adviseHuge): the first
// write of a 2 MiB page costs one fault where 4 KiB pages cost 512, and
// that first touch of its state is most of what a query's first span of
// event time pays over its steady speed (docs/performance.md).
//
// A slab's arrays stay valid for as long as they are referenced, as any
// Go slice: a block is Go memory, kept by the arrays carved from it. The
// owner of a slab uses it from one goroutine at a time.
type slab[T int32 | int64] struct {
	block []T // what is left of the block being carved
	made  int // bytes handed out
}

const (
	slabFrom  = 2 << 20
	slabBlock = 8 << 20
)

// take returns a zeroed array of length n and capacity c (n <= c).
func (s *slab[T]) take(n, c int) []T {
	var zero T
	elem := int(unsafe.Sizeof(zero))
	bytes := c * elem
	s.made += bytes
	if s.made <= slabFrom || bytes > slabBlock/4 || c == 0 {
		v := make([]T, c)
		if bytes >= hugePage {
			adviseHuge(unsafe.Pointer(unsafe.SliceData(v)), bytes)
		}
		return v[:n:c]
	}
	if len(s.block) < c {
		s.block = make([]T, slabBlock/elem)
		adviseHuge(unsafe.Pointer(unsafe.SliceData(s.block)), slabBlock)
	}
	v := s.block[:n:c]
	s.block = s.block[c:]
	return v
}

// hugePage is the size of the pages adviseHuge asks for: the huge page
// of x86-64 and of arm64 with 4 KiB base pages.
const hugePage = 2 << 20
