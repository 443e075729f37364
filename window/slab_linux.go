package window

import (
	"os"
	"runtime"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// adviseHuge asks the kernel to back the huge pages that the n bytes at p
// lie in with huge pages (MADV_HUGEPAGE) as they are first written. Go's
// runtime does not advise its heap, so under the transparent huge page
// policy most distributions set, "madvise", its memory gets 4 KiB pages
// only. The advice covers the whole huge pages at both ends too: a slab's
// blocks follow one another in the heap, and the huge page that one's end
// shares with the next's start would otherwise be left to 4 KiB pages.
// The advice changes how pages are faulted in, not what the memory holds,
// whoever's it is; an error (a kernel without transparent huge pages, a
// neighbouring range not mapped) leaves the memory as it was, and is
// ignored. GODEBUG=disablethp=1 in the environment the process starts
// with, Go's switch for a heap without huge pages, turns the advice off
// too (a program that embeds the engine and sets it by a //go:debug line
// or its go.mod's godebug instead is not seen: no API tells a package
// the setting).
func adviseHuge(p unsafe.Pointer, n int) {
	if thpDisabled || n == 0 {
		return
	}
	// The range reaches outside the Go object at p, so it is passed as
	// addresses: no pointer is made to memory p's object does not hold.
	lo := uintptr(p) &^ (hugePage - 1)
	hi := (uintptr(p) + uintptr(n) + hugePage - 1) &^ (hugePage - 1)
	_, _, _ = unix.Syscall(unix.SYS_MADVISE, lo, hi-lo, unix.MADV_HUGEPAGE)
	runtime.KeepAlive(p)
}

// thpDisabled is the environment GODEBUG's disablethp, its last setting
// winning as in the runtime.
var thpDisabled = godebugSet(os.Getenv("GODEBUG"), "disablethp")

// godebugSet reports whether the last setting of key in GODEBUG's
// comma-separated list is 1.
func godebugSet(godebug, key string) bool {
	set := false
	for kv := range strings.SplitSeq(godebug, ",") {
		if k, v, ok := strings.Cut(strings.TrimSpace(kv), "="); ok && k == key {
			set = v == "1"
		}
	}
	return set
}
