package buffer

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/testenv"
)

func newTestRing(t testing.TB, size int) *Ring {
	t.Helper()
	r, err := NewRing(size)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, r.Close()) })
	return r
}

// pattern is the expected byte at absolute stream offset p. It is not
// periodic in any ring size, so a byte overwritten by data one lap ahead
// (p+Size()) is detected.
func pattern(p uint64) byte {
	p *= 0x9E3779B97F4A7C15
	return byte(p >> 56)
}

// stableGoroutines returns the goroutine count once goroutines left over by
// earlier tests have finished exiting (two equal samples 10ms apart).
func stableGoroutines() int {
	prev := runtime.NumGoroutine()
	for range 100 {
		time.Sleep(10 * time.Millisecond)
		n := runtime.NumGoroutine()
		if n == prev {
			return n
		}
		prev = n
	}
	return prev
}

// settleGoroutines waits until the goroutine count drops to want or the
// deadline passes, and returns the last count seen.
func settleGoroutines(want int) int {
	deadline := time.Now().Add(2 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestNewRingValidatesSize(t *testing.T) {
	page := os.Getpagesize()
	for _, tc := range []struct {
		size int
		msg  string
	}{
		{0, "ring size 0: must be positive"},
		{-page, "must be positive"},
		{3 * page, "not a power of two"},
		{page + 1, "not a power of two"},
		{page / 2, "not a multiple of the page size"},
	} {
		r, err := NewRing(tc.size)
		assert.Nil(t, r, "size %d", tc.size)
		if assert.Error(t, err, "size %d", tc.size) {
			assert.Contains(t, err.Error(), tc.msg)
		}
	}
	r := newTestRing(t, 4*page)
	assert.Equal(t, 4*page, r.Size())
}

func TestMirror(t *testing.T) {
	page := os.Getpagesize()
	r := newTestRing(t, page)
	size := r.Size()

	// The two halves are the same memory, in both directions.
	r.buf[7] = 0xAB
	assert.Equal(t, byte(0xAB), r.buf[size+7])
	r.buf[size+size-1] = 0xCD
	assert.Equal(t, byte(0xCD), r.buf[size-1])

	// Move the write position to 100 bytes before the physical end, then
	// write a range that wraps.
	const lead, n = 100, 300
	first, err := r.Reserve(size - lead)
	require.NoError(t, err)
	require.Len(t, first, size-lead)
	r.Free(r.Commit(size - lead))

	b, err := r.Reserve(n)
	require.NoError(t, err)
	require.Len(t, b, n)
	require.Equal(t, n, cap(b))
	start := r.Written()
	for i := range b {
		b[i] = pattern(start + uint64(i))
	}
	assert.Equal(t, start+n, r.Commit(n))

	s := r.Slice(start, n)
	require.Len(t, s, n)
	assert.Equal(t, n, cap(s))
	assert.Same(t, &b[0], &s[0], "Slice and Reserve must return the same view")
	for i := range s {
		require.Equal(t, pattern(start+uint64(i)), s[i], "byte %d", i)
	}
	// The wrapped tail landed at the start of the first half too.
	wrapped := n - lead
	for i := 0; i < wrapped; i++ {
		require.Equal(t, s[lead+i], r.buf[i], "physical byte %d", i)
	}
}

func TestReserveArgs(t *testing.T) {
	r := newTestRing(t, os.Getpagesize())
	for _, n := range []int{0, -1, r.Size() + 1} {
		_, err := r.Reserve(n)
		assert.Error(t, err, "n=%d", n)
		assert.NotErrorIs(t, err, ErrClosed)
	}
	b, err := r.Reserve(r.Size())
	require.NoError(t, err)
	assert.Len(t, b, r.Size())
	assert.Panics(t, func() { r.Commit(r.Size() + 1) })
}

// TestBackPressure streams numbered chunks of varied sizes through a small
// ring. The consumer verifies every byte, in order, exactly once, while
// sleeping randomly so the producer must wait for space.
func TestBackPressure(t *testing.T) {
	r := newTestRing(t, os.Getpagesize())
	size := r.Size()
	// 5000 chunks in the long run, 1500 by default: about 650 rings' worth.
	chunks := testenv.Scale(1500, 5000)

	type task struct {
		seq   int
		start uint64
		n     int
	}
	tasks := make(chan task, 1024) // roomy: the ring, not this channel, must throttle the producer

	var produced uint64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(tasks)
		rng := rand.New(rand.NewPCG(1, 2))
		for seq := 0; seq < chunks; seq++ {
			n := 1 + rng.IntN(size)
			if seq%7 == 0 {
				n = 1 + rng.IntN(64) // many tiny ones too
			}
			b, err := r.Reserve(n)
			if !assert.NoError(t, err) {
				return
			}
			start := r.Written()
			for i := range b {
				b[i] = pattern(start + uint64(i))
			}
			b[0] ^= byte(seq) // mark the chunk number; the consumer undoes it
			r.Commit(n)
			produced += uint64(n)
			tasks <- task{seq: seq, start: start, n: n}
		}
	}()

	var consumed uint64
	var sum, wantSum uint64
	next := 0
	rng := rand.New(rand.NewPCG(3, 4))
	for tk := range tasks {
		require.Equal(t, next, tk.seq, "tasks out of order")
		require.Equal(t, consumed, tk.start, "gap or overlap in the stream")
		require.LessOrEqual(t, r.Freed(), tk.start)
		require.LessOrEqual(t, tk.start+uint64(tk.n), r.Written())
		if rng.IntN(4) == 0 {
			time.Sleep(time.Duration(rng.IntN(200)) * time.Microsecond)
		}
		s := r.Slice(tk.start, tk.n)
		require.Len(t, s, tk.n)
		require.Equal(t, pattern(tk.start)^byte(tk.seq), s[0], "chunk %d header", tk.seq)
		for i := 1; i < len(s); i++ {
			p := tk.start + uint64(i)
			if s[i] != pattern(p) {
				require.Failf(t, "corrupt byte", "chunk %d offset %d: got %#x want %#x", tk.seq, p, s[i], pattern(p))
			}
			sum += uint64(s[i]) * (p | 1)
			wantSum += uint64(pattern(p)) * (p | 1)
		}
		consumed += uint64(tk.n)
		r.Free(tk.start + uint64(tk.n))
		next++
	}
	wg.Wait()

	assert.Equal(t, chunks, next)
	assert.Equal(t, produced, consumed)
	assert.Equal(t, produced, r.Written())
	assert.Equal(t, produced, r.Freed())
	assert.Equal(t, wantSum, sum)
	assert.Greater(t, produced, uint64(100*size), "test too small to wrap many times")
	assert.Positive(t, r.waits, "Reserve never blocked: back-pressure not exercised")
}

func TestCancelUnblocksReserve(t *testing.T) {
	r := newTestRing(t, os.Getpagesize())
	_, err := r.Reserve(r.Size())
	require.NoError(t, err)
	r.Commit(r.Size()) // ring full

	base := stableGoroutines()
	errc := make(chan error, 1)
	go func() {
		_, err := r.Reserve(1)
		errc <- err
	}()
	// Wait until the producer is parked in the slow path.
	require.Eventually(t, r.waiting.Load, 2*time.Second, time.Millisecond)
	select {
	case err := <-errc:
		require.Failf(t, "Reserve returned on a full ring", "err=%v", err)
	case <-time.After(20 * time.Millisecond):
	}

	r.Cancel()
	select {
	case err := <-errc:
		assert.ErrorIs(t, err, ErrClosed)
	case <-time.After(2 * time.Second):
		require.FailNow(t, "Cancel did not unblock Reserve")
	}
	assert.LessOrEqual(t, settleGoroutines(base), base, "goroutine leaked")

	r.Cancel() // idempotent
	_, err = r.Reserve(1)
	assert.ErrorIs(t, err, ErrClosed)
	r.Free(uint64(r.Size())) // even with space, a cancelled ring refuses
	_, err = r.Reserve(1)
	assert.ErrorIs(t, err, ErrClosed)
}

// waitingProducer is a full ring and a producer waiting in Reserve for
// need bytes, which got receives the length of once Reserve returns.
func waitingProducer(t *testing.T, need int) (r *Ring, got chan int) {
	t.Helper()
	r = newTestRing(t, os.Getpagesize())
	_, err := r.Reserve(r.Size())
	require.NoError(t, err)
	r.Commit(r.Size())
	got = make(chan int, 1)
	go func() {
		b, err := r.Reserve(need)
		if assert.NoError(t, err) {
			got <- len(b)
		}
		close(got)
	}()
	require.Eventually(t, r.waiting.Load, 2*time.Second, time.Millisecond)
	return r, got
}

func TestFreeWakesReserve(t *testing.T) {
	r, got := waitingProducer(t, 10)
	r.Free(5) // not enough: the producer must keep waiting
	select {
	case <-got:
		require.FailNow(t, "Reserve returned with only 5 bytes free")
	case <-time.After(20 * time.Millisecond):
	}
	r.Free(10)
	select {
	case n := <-got:
		assert.Equal(t, 10, n)
	case <-time.After(2 * time.Second):
		require.FailNow(t, "Free did not wake Reserve")
	}
}

// TestReleaseThenWake: Free in two steps (an ordered stage's Release,
// then Wake out of it) wakes a waiting producer as Free does.
func TestReleaseThenWake(t *testing.T) {
	r, got := waitingProducer(t, 20)
	r.Release(20)
	assert.Equal(t, uint64(20), r.Freed())
	r.Wake()
	select {
	case n := <-got:
		assert.Equal(t, 20, n)
	case <-time.After(2 * time.Second):
		require.FailNow(t, "Release and Wake did not wake Reserve")
	}
	assert.PanicsWithValue(t, fmt.Sprintf("buffer: Free(19) outside [Freed()=20, Written()=%d]", r.Size()), func() { r.Release(19) })
}

func TestFreePanicsOnBadOffsets(t *testing.T) {
	r := newTestRing(t, os.Getpagesize())
	_, err := r.Reserve(100)
	require.NoError(t, err)
	r.Commit(100)
	r.Free(50)

	assert.PanicsWithValue(t, "buffer: Free(101) outside [Freed()=50, Written()=100]", func() { r.Free(101) })
	assert.Panics(t, func() { r.Free(49) }, "going backwards")
	assert.NotPanics(t, func() { r.Free(50) }, "no-op free is fine")
	assert.NotPanics(t, func() { r.Free(100) })
	assert.Equal(t, uint64(100), r.Freed())
}

func TestCloseIdempotent(t *testing.T) {
	r, err := NewRing(os.Getpagesize())
	require.NoError(t, err)
	require.NoError(t, r.Close())
	assert.NoError(t, r.Close())
	_, err = r.Reserve(1)
	assert.ErrorIs(t, err, ErrClosed)
	r.Cancel() // still fine after Close
}

func TestFastPathDoesNotAllocate(t *testing.T) {
	r := newTestRing(t, 16*os.Getpagesize())
	const n = 1000 // not a divisor of the size: the loop wraps at varied offsets
	allocs := testing.AllocsPerRun(1000, func() {
		b, err := r.Reserve(n)
		if err != nil {
			panic(err)
		}
		b[0], b[n-1] = 1, 2
		w := r.Commit(n)
		s := r.Slice(w-n, n)
		if s[0] != 1 || s[n-1] != 2 {
			panic("bad slice")
		}
		r.Free(w)
	})
	assert.Zero(t, allocs)
	assert.Zero(t, r.waits, "fast path took the slow path")
}

func BenchmarkReserveCommitFree(b *testing.B) {
	r, err := NewRing(1 << 20)
	require.NoError(b, err)
	defer r.Close()
	const n = 4096 - 64 // odd-ish size so ranges wrap across the mirror
	b.SetBytes(n)
	b.ReportAllocs()
	for b.Loop() {
		buf, err := r.Reserve(n)
		if err != nil {
			b.Fatal(err)
		}
		buf[0] = 1
		w := r.Commit(n)
		_ = r.Slice(w-n, n)
		r.Free(w)
	}
}

func TestTryReserveDoesNotWait(t *testing.T) {
	r, err := NewRing(os.Getpagesize())
	require.NoError(t, err)
	defer r.Close()
	b, ok, err := r.TryReserve(r.Size())
	require.NoError(t, err)
	require.True(t, ok)
	r.Commit(len(b))
	_, ok, err = r.TryReserve(1)
	assert.NoError(t, err)
	assert.False(t, ok, "a full ring has no byte to reserve")
	r.Free(1)
	_, ok, err = r.TryReserve(1)
	assert.NoError(t, err)
	assert.True(t, ok)
	r.Cancel()
	_, _, err = r.TryReserve(1)
	assert.ErrorIs(t, err, ErrClosed)
}

// TestSkip: an empty ring moves on to any later position at once, and
// then works there as one that wrote and freed every byte before it:
// bytes written after the skip read back at their absolute positions,
// across the wrap. A ring holding bytes, a reservation, or a position
// behind it is refused.
func TestSkip(t *testing.T) {
	size := os.Getpagesize()
	r := newTestRing(t, size)
	pos := uint64(1)<<62 + uint64(size) - 3 // far, and 3 bytes before a wrap
	require.NoError(t, r.Skip(pos))
	assert.Equal(t, pos, r.Written())
	assert.Equal(t, pos, r.Freed())

	b, err := r.Reserve(size)
	require.NoError(t, err)
	for i := range b {
		b[i] = pattern(pos + uint64(i))
	}
	assert.Equal(t, pos+uint64(size), r.Commit(size))
	got := r.Slice(pos, size)
	for i := range got {
		require.Equal(t, pattern(pos+uint64(i)), got[i], "byte %d", i)
	}
	_, ok, err := r.TryReserve(1)
	require.NoError(t, err)
	assert.False(t, ok, "full after the skip too")

	assert.Error(t, r.Skip(pos+2*uint64(size)), "a ring holding bytes")
	r.Free(pos + uint64(size))
	assert.Error(t, r.Skip(pos), "behind the ring")
	_, err = r.Reserve(1)
	require.NoError(t, err)
	assert.Error(t, r.Skip(pos+2*uint64(size)), "a reservation outstanding")

	// A position from which the stream would wrap past 2^64 (a damaged
	// snapshot's): refused, where Free panicked once positions wrapped.
	far := newTestRing(t, size)
	err = far.Skip(math.MaxUint64 - uint64(size)/2)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "past the largest position a stream may reach")
	require.NoError(t, far.Skip(1<<63))
}
