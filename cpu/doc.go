// Package cpu places the engine's worker goroutines on cores.
//
// Go goroutines float between OS threads, so pinning only works for a
// goroutine that holds runtime.LockOSThread: the affinity belongs to the
// thread, not the goroutine. Group starts workers; pinned ones are locked
// and never unlocked, so that a pinned thread is destroyed when its worker
// returns instead of going back to the runtime's pool with a narrowed
// affinity mask. Unpinned workers are not locked: waking a locked goroutine
// is an OS thread switch, which costs throughput when goroutines outnumber
// cores (see docs/numa.md).
//
// The set of usable CPUs comes from the process affinity mask (which is how
// container and cgroup cpusets show up), captured at package init from the
// main thread, before any pinning could have narrowed it.
//
// Linux-only; uses raw syscalls via golang.org/x/sys/unix (no cgo).
package cpu
