package engine

import (
	"testing"
	"unsafe"
)

// TestStreamLayout holds the cache-line separation of Stream's field
// groups (see Stream): at least a line between the end of one group and the
// start of the next, so that no line holds fields of two owners, whatever
// the struct's alignment.
func TestStreamLayout(t *testing.T) {
	parallel(t)
	var s Stream
	type group struct {
		name      string
		off, size uintptr
	}
	shared := unsafe.Offsetof(s.e)
	groups := []group{
		{"read-only", shared, unsafe.Offsetof(s.mask) + unsafe.Sizeof(s.mask) - shared},
		{"producer", unsafe.Offsetof(s.producerState), unsafe.Sizeof(s.producerState)},
		{"merger", unsafe.Offsetof(s.mergerState), unsafe.Sizeof(s.mergerState)},
		{"published", unsafe.Offsetof(s.published), unsafe.Sizeof(s.published)},
	}
	end := uintptr(0)
	for _, g := range groups {
		if g.off < end+cacheLine {
			t.Errorf("%s fields start at byte %d, %d bytes after the previous group's end (%d): want at least %d", g.name, g.off, g.off-end, end, cacheLine)
		}
		end = g.off + g.size
	}
	if tail := unsafe.Sizeof(s) - end; tail < cacheLine {
		t.Errorf("%d bytes after the last group: want at least %d", tail, cacheLine)
	}
}
