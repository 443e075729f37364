//go:build !linux

package window

import "unsafe"

// adviseHuge does nothing where the kernel has no advice for huge pages
// that this package gives (slab_linux.go).
func adviseHuge(unsafe.Pointer, int) {}
