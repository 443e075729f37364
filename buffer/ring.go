package buffer

import (
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ErrClosed is returned by Reserve once the ring has been cancelled or closed.
var ErrClosed = errors.New("buffer: ring closed")

// cacheLine is the false-sharing granule on amd64 (and most arm64 parts).
const cacheLine = 64

// Ring is a single-producer circular byte buffer backed by a mirrored
// mapping of 2*Size() bytes; see the package documentation.
//
// Positions are absolute uint64 byte offsets since the start of the stream;
// they only grow, so at 100 GB/s they wrap after ~5 years. The physical
// position of absolute offset p is p & (Size()-1), and a range of up to
// Size() bytes starting there is always contiguous thanks to the mirror.
//
// Roles:
//   - the producer (one goroutine) calls Reserve and Commit;
//   - the consumer calls Free in stream order (calls serialised by the caller,
//     but possibly from different goroutines);
//   - anyone may call Slice on a committed, unfreed range, and Cancel.
//
// The two counters are written by different goroutines, so each sits on its
// own cache line: the producer bumping written must not invalidate the line
// the consumer writes freed to, and vice versa.
type Ring struct {
	_ [cacheLine]byte // keep written off the line of whatever precedes us

	// Producer-owned line.
	written  atomic.Uint64 // bytes committed since the start of the stream
	reserved int           // bytes of the last reservation not yet committed
	waits    uint64        // times Reserve took the slow path (tests, stats)
	_        [cacheLine - 8 - 8 - 8]byte

	// Consumer-owned line.
	freed atomic.Uint64 // bytes released since the start of the stream
	_     [cacheLine - 8]byte

	// Read-mostly state, shared by both sides.
	buf  []byte // len 2*size: the memfd mapped at buf[0:size] and buf[size:]
	size int
	mask uint64

	// waiting is set by a producer about to block in Reserve. Free only
	// touches the channel when it is set, so the common Free is two atomic
	// loads and a store. It is written on the slow path only.
	waiting atomic.Bool
	// space carries "bytes were freed" wake-ups. One slot suffices: there is
	// a single producer, and it re-checks the condition after every wake-up,
	// so coalesced or stale tokens are harmless.
	space chan struct{}

	closed     atomic.Bool
	done       chan struct{} // closed by Cancel; wakes a blocked Reserve
	cancelOnce sync.Once

	unmapMu  sync.Mutex
	unmapped bool
}

// NewRing maps a ring of size bytes. size must be a power of two and a
// multiple of the page size (mmap granularity for the mirror).
func NewRing(size int) (*Ring, error) { return newRing(size, nil) }

// newRing is NewRing with an optional place hook, called with the whole
// 2*size mirrored mapping after it is mapped and before any of its pages
// has been touched (NewRingOnNode binds and faults the pages there). If
// place fails, the mapping is released and its error returned.
func newRing(size int, place func(buf []byte) error) (*Ring, error) {
	page := os.Getpagesize()
	switch {
	case size <= 0:
		return nil, fmt.Errorf("buffer: ring size %d: must be positive", size)
	case size&(size-1) != 0:
		return nil, fmt.Errorf("buffer: ring size %d: not a power of two", size)
	case size%page != 0:
		return nil, fmt.Errorf("buffer: ring size %d: not a multiple of the page size %d", size, page)
	case size > math.MaxInt/2:
		return nil, fmt.Errorf("buffer: ring size %d: too large to mirror", size)
	}
	buf, err := mapMirror(size)
	if err != nil {
		return nil, fmt.Errorf("buffer: ring size %d: %w", size, err)
	}
	if place != nil {
		if err := place(buf); err != nil {
			_ = unix.Munmap(buf)
			return nil, fmt.Errorf("buffer: ring size %d: %w", size, err)
		}
	}
	return &Ring{
		buf:   buf,
		size:  size,
		mask:  uint64(size - 1),
		space: make(chan struct{}, 1),
		done:  make(chan struct{}),
	}, nil
}

// mapMirror returns a 2*size mapping whose two halves are the same memory.
func mapMirror(size int) (buf []byte, err error) {
	fd, err := unix.MemfdCreate("saber-ring", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	// The mappings keep the memory alive; the descriptor is not needed
	// once both halves are mapped (or on any failure).
	defer unix.Close(fd)
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		return nil, fmt.Errorf("ftruncate memfd: %w", err)
	}

	// Reserve 2*size bytes of address space so nothing else can land in
	// the second half between our two fixed mappings. unix.Mmap records the
	// region, so unix.Munmap(buf) later releases all of it, including the
	// MAP_FIXED overlays.
	buf, err = unix.Mmap(-1, 0, 2*size, unix.PROT_NONE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil, fmt.Errorf("reserve %d bytes of address space: %w", 2*size, err)
	}
	defer func() {
		if err != nil {
			_ = unix.Munmap(buf)
			buf = nil
		}
	}()
	for half := 0; half < 2; half++ {
		addr := uintptr(unsafe.Pointer(&buf[half*size]))
		got, _, errno := unix.Syscall6(unix.SYS_MMAP, addr, uintptr(size),
			unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_FIXED,
			uintptr(fd), 0)
		if errno != 0 {
			return nil, fmt.Errorf("mmap memfd at half %d: %w", half, errno)
		}
		if got != addr {
			return nil, fmt.Errorf("mmap memfd at half %d: kernel placed it at %#x, want %#x", half, got, addr)
		}
	}
	return buf, nil
}

// Size returns the capacity of the ring in bytes.
func (r *Ring) Size() int { return r.size }

// Mapping is the ring's whole mirrored mapping, 2*Size bytes: every task's
// bytes, also those of a task that crosses the wrap, lie inside it (for a
// device that registers the ring's memory once).
func (r *Ring) Mapping() []byte { return r.buf }

// Written returns the absolute offset one past the last committed byte.
func (r *Ring) Written() uint64 { return r.written.Load() }

// Freed returns the absolute offset below which all bytes have been freed.
func (r *Ring) Freed() uint64 { return r.freed.Load() }

// Reserve returns the n bytes starting at Written() as one contiguous slice
// (len n, cap n), waiting until they are free. Producer only. The bytes
// become visible to the consumer side with Commit. A later Reserve without
// Commit replaces the reservation.
//
// It returns ErrClosed if the ring is cancelled before or while waiting.
// The fast path (enough space) takes no lock and does not allocate.
func (r *Ring) Reserve(n int) ([]byte, error) {
	if n <= 0 || n > r.size {
		return nil, fmt.Errorf("buffer: reserve %d bytes: must be in [1, %d]", n, r.size)
	}
	if r.closed.Load() {
		return nil, ErrClosed
	}
	w := r.written.Load() // only we write it; the atomic load is a plain MOV on amd64
	if w-r.freed.Load()+uint64(n) > uint64(r.size) {
		if err := r.waitSpace(w + uint64(n) - uint64(r.size)); err != nil {
			return nil, err
		}
	}
	r.reserved = n
	off := w & r.mask
	end := off + uint64(n) // <= 2*size: the mirror makes this contiguous
	return r.buf[off:end:end], nil
}

// TryReserve is Reserve without waiting: ok is false when the n bytes are
// not free yet. A producer that must not block (one that runs on a worker,
// such as a chained query's upstream result stage) does other work and
// tries again.
func (r *Ring) TryReserve(n int) (b []byte, ok bool, err error) {
	if n <= 0 || n > r.size {
		return nil, false, fmt.Errorf("buffer: reserve %d bytes: must be in [1, %d]", n, r.size)
	}
	if r.closed.Load() {
		return nil, false, ErrClosed
	}
	w := r.written.Load()
	if w-r.freed.Load()+uint64(n) > uint64(r.size) {
		return nil, false, nil
	}
	r.reserved = n
	off := w & r.mask
	end := off + uint64(n)
	return r.buf[off:end:end], true, nil
}

// waitSpace blocks until Freed() >= need or the ring is cancelled.
//
// No lost wake-up: we publish waiting=true before re-reading freed, and Free
// stores freed before reading waiting. With sequentially consistent atomics
// at least one side sees the other's store: either we see the new freed and
// do not sleep, or Free sees waiting and leaves a token in the channel,
// which survives until we receive it.
func (r *Ring) waitSpace(need uint64) error {
	r.waits++
	defer r.waiting.Store(false)
	for {
		r.waiting.Store(true)
		if r.closed.Load() {
			return ErrClosed
		}
		if r.freed.Load() >= need {
			return nil
		}
		select {
		case <-r.space:
		case <-r.done:
			return ErrClosed
		}
	}
}

// Commit publishes the first n bytes of the last reservation and returns the
// new Written(). Producer only. Committing more than was reserved is an
// engine bug and panics.
func (r *Ring) Commit(n int) uint64 {
	if n < 0 || n > r.reserved {
		panic(fmt.Sprintf("buffer: Commit(%d) exceeds the outstanding reservation of %d bytes", n, r.reserved))
	}
	r.reserved -= n
	// Single writer: a load and a store are enough, no read-modify-write.
	w := r.written.Load() + uint64(n)
	r.written.Store(w)
	return w
}

// Slice returns a contiguous view (len n, cap n) of the absolute range
// [start, start+n). The caller guarantees Freed() <= start, start+n <=
// Written() and n <= Size(); this is not checked, to keep the hot path free
// of shared-counter reads. The view is valid until the range is freed.
func (r *Ring) Slice(start uint64, n int) []byte {
	off := start & r.mask
	end := off + uint64(n)
	return r.buf[off:end:end]
}

// Free releases every byte before absolute offset end and wakes a producer
// waiting in Reserve. Calls must be serialised by the caller and made in
// stream order; end < Freed() or end > Written() is an engine bug and panics.
func (r *Ring) Free(end uint64) {
	r.Release(end)
	r.Wake()
}

// Release is Free without the wake-up: a consumer that frees in an
// ordered stage of its own calls Wake once out of it, so that waking a
// producer that sleeps (a system call) is not part of that stage.
func (r *Ring) Release(end uint64) {
	if f, w := r.freed.Load(), r.written.Load(); end < f || end > w {
		panic(fmt.Sprintf("buffer: Free(%d) outside [Freed()=%d, Written()=%d]", end, f, w))
	}
	r.freed.Store(end)
}

// Wake wakes a producer waiting in Reserve for the bytes released before.
// Any goroutine, after its Release.
func (r *Ring) Wake() {
	if r.waiting.Load() {
		select {
		case r.space <- struct{}{}:
		default: // a token is already pending; the producer will re-check
		}
	}
}

// maxPosition is the largest position Skip goes to: 2^63, which a stream
// of 100 GB/s reaches in about three years, leaving as much again before
// positions would wrap.
const maxPosition = 1 << 63

// Skip moves an empty ring's positions on to pos, as if the bytes up to
// it had been written and freed, in constant time: a restored stream goes
// on from its position without touching the bytes before it. The ring must
// be empty (every committed byte freed, no reservation outstanding) and
// pos not behind it; neither side may run meanwhile.
func (r *Ring) Skip(pos uint64) error {
	w := r.written.Load()
	switch {
	case r.reserved != 0 || r.freed.Load() != w:
		return fmt.Errorf("buffer: skip to %d: the ring holds %d bytes and a reservation of %d", pos, w-r.freed.Load(), r.reserved)
	case pos < w:
		return fmt.Errorf("buffer: skip to %d: behind the ring's position %d", pos, w)
	case pos > maxPosition:
		// Positions are compared as they are (Free's check, the engine's
		// marks): one that would wrap past 2^64 in a run is refused here,
		// where a damaged or crafted snapshot brings it, not met later.
		return fmt.Errorf("buffer: skip to %d: past the largest position a stream may reach, %d", pos, uint64(maxPosition))
	}
	r.written.Store(pos)
	r.freed.Store(pos)
	return nil
}

// Cancel makes a blocked Reserve, and every later one, return ErrClosed.
// It is idempotent and safe from any goroutine. It does not unmap memory, so
// outstanding slices stay valid; stop the producer and consumers, then Close.
func (r *Ring) Cancel() {
	r.cancelOnce.Do(func() {
		r.closed.Store(true)
		close(r.done)
	})
}

// Close cancels the ring and unmaps its memory. It is idempotent. The caller
// guarantees that no slice from the ring is used afterwards, and that the
// producer is not inside Reserve (Cancel first, then wait for it to return).
func (r *Ring) Close() error {
	r.Cancel()
	r.unmapMu.Lock()
	defer r.unmapMu.Unlock()
	if r.unmapped {
		return nil
	}
	r.unmapped = true
	if err := unix.Munmap(r.buf); err != nil {
		return fmt.Errorf("buffer: unmap ring of %d bytes: %w", r.size, err)
	}
	return nil
}
