package gpu

import (
	"os"
	"slices"
	"sync"
	"time"
	"unsafe"
)

// Timings is what a device measured of its tasks (Program.Submit/Wait,
// every program of the device together): on the CUDA device, per task, the
// GPU's time for the copy in, the kernels and the copy out (CUDA events on
// the task's stream), and on both devices the host's time in Submit's
// device part (staging copy and enqueueing) and blocked in Wait for the
// device. Quantiles are over the last maxSamples tasks.
type Timings struct {
	Tasks uint64 // tasks timed
	// The GPU's times, µs (zero on the emulator).
	CopyIn, Kernel, CopyOut Quantiles
	// The host's, µs: Submit's device part, and waiting in Wait.
	Submit, Wait Quantiles
	// Sync is how the host waits for the device: "blocking" (the context's
	// SCHED_BLOCKING_SYNC: the waiting thread sleeps), "spin", "yield",
	// "auto", or "emulated"; with the reason where the flag could not be
	// set.
	Sync string
	// Registered is the bytes of host memory registered with the device
	// (RegisterHost) at the time of the call, DirectTasks the tasks copied
	// to the device straight from such memory, StagedTasks those copied
	// through a slot's page-locked staging buffer first.
	Registered               int64
	DirectTasks, StagedTasks uint64
	// OneTrip is the tasks whose output came back in one round trip
	// (copied with the task's counters), TwoTrips those that needed a
	// second copy after the counters were read.
	OneTrip, TwoTrips uint64
}

// Quantiles of a time, in µs.
type Quantiles struct {
	P50, P90, P99, Mean float64
}

// Timed is a Device that times its tasks (both devices are).
type Timed interface {
	Timings() Timings
}

// TimingsOf returns d's timings, or false where d does not time its tasks.
// d is a Device, or any value holding one (an engine.GPU).
func TimingsOf(d any) (Timings, bool) {
	if t, ok := d.(Timed); ok {
		return t.Timings(), true
	}
	return Timings{}, false
}

// HostRegistrar is a Device that can register host memory for direct
// copies to the device (the CUDA device: cuMemHostRegister; the emulator
// keeps the ranges, to test the engine's use). A task whose bytes lie
// inside a registered range is copied to the device from where it is,
// without the staging copy. b must stay mapped until UnregisterHost(b);
// ranges may not overlap.
type HostRegistrar interface {
	RegisterHost(b []byte) error
	UnregisterHost(b []byte) error
}

// selTwoPass says whether SABER_HX_GPU_SEL=twopass asks selections to
// evaluate WHERE in both of their kernels (sel_count, sel_compact) rather
// than once (sel_count's flags, read by sel_compact_flags): for measuring
// the difference, or for a fallback if the one-pass kernel misbehaves.
func selTwoPass() bool { return os.Getenv("SABER_HX_GPU_SEL") == "twopass" }

// hashedOneTrip says whether a task with hashed groups copies its whole
// output (every entry it has room for, bound bytes) back with its counters
// in one round trip, rather than the counters first and then just the
// entries claimed: when the bound is at most the task's input or 1 MiB,
// whichever is larger, the copy of the unused room costs less than a second
// wait (a round trip costs tens of µs, and 1 MiB crosses PCIe in about as
// long). Both devices decide the same.
func hashedOneTrip(bound, in int64) bool { return bound <= max(in, 1<<20) }

const maxSamples = 1 << 16

// timer collects a device's timings; safe for concurrent use (a lock per
// task, never per tuple).
type timer struct {
	mu                          sync.Mutex
	tasks                       uint64
	in, kern, out, submit, wait samples
	sync                        string
	direct, staged              uint64
	oneTrip, twoTrips           uint64
	ranges                      []hostRange // sorted by lo
}

type hostRange struct{ lo, hi uintptr }

// samples keeps the last maxSamples values (µs) and their sum.
type samples struct {
	v   []float32
	n   uint64
	sum float64
}

func (s *samples) add(us float64) {
	if len(s.v) < maxSamples {
		s.v = append(s.v, float32(us))
	} else {
		s.v[s.n%maxSamples] = float32(us)
	}
	s.n++
	s.sum += us
}

func (s *samples) quantiles() Quantiles {
	if len(s.v) == 0 {
		return Quantiles{}
	}
	v := slices.Clone(s.v)
	slices.Sort(v)
	at := func(q float64) float64 { return float64(v[min(len(v)-1, int(q*float64(len(v))))]) }
	return Quantiles{P50: at(0.5), P90: at(0.9), P99: at(0.99), Mean: s.sum / float64(s.n)}
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// task records one task: the GPU's times in ms (from cuEventElapsedTime;
// negative: not measured) and the host's.
func (tm *timer) task(inMs, kernMs, outMs float64, submit, wait time.Duration) {
	tm.mu.Lock()
	tm.tasks++
	if inMs >= 0 && kernMs >= 0 && outMs >= 0 {
		tm.in.add(inMs * 1e3)
		tm.kern.add(kernMs * 1e3)
		tm.out.add(outMs * 1e3)
	}
	tm.submit.add(us(submit))
	tm.wait.add(us(wait))
	tm.mu.Unlock()
}

func (tm *timer) copied(direct bool) {
	tm.mu.Lock()
	if direct {
		tm.direct++
	} else {
		tm.staged++
	}
	tm.mu.Unlock()
}

func (tm *timer) trips(one bool) {
	tm.mu.Lock()
	if one {
		tm.oneTrip++
	} else {
		tm.twoTrips++
	}
	tm.mu.Unlock()
}

func (tm *timer) timings() Timings {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	t := Timings{Tasks: tm.tasks, CopyIn: tm.in.quantiles(), Kernel: tm.kern.quantiles(), CopyOut: tm.out.quantiles(),
		Submit: tm.submit.quantiles(), Wait: tm.wait.quantiles(), Sync: tm.sync,
		DirectTasks: tm.direct, StagedTasks: tm.staged, OneTrip: tm.oneTrip, TwoTrips: tm.twoTrips}
	for _, r := range tm.ranges {
		t.Registered += int64(r.hi - r.lo)
	}
	return t
}

func rangeOf(b []byte) hostRange {
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return hostRange{lo, lo + uintptr(len(b))}
}

// addRange records a registered range; it refuses an empty or overlapping
// one (as cuMemHostRegister does).
func (tm *timer) addRange(b []byte) error {
	if len(b) == 0 {
		return errEmptyRange
	}
	r := rangeOf(b)
	tm.mu.Lock()
	defer tm.mu.Unlock()
	i, _ := slices.BinarySearchFunc(tm.ranges, r.lo, func(x hostRange, lo uintptr) int {
		switch {
		case x.lo < lo:
			return -1
		case x.lo > lo:
			return 1
		}
		return 0
	})
	if (i > 0 && tm.ranges[i-1].hi > r.lo) || (i < len(tm.ranges) && tm.ranges[i].lo < r.hi) {
		return errOverlap
	}
	tm.ranges = slices.Insert(tm.ranges, i, r)
	return nil
}

// removeRange forgets the range that starts where b does.
func (tm *timer) removeRange(b []byte) error {
	if len(b) == 0 {
		return errEmptyRange
	}
	lo := rangeOf(b).lo
	tm.mu.Lock()
	defer tm.mu.Unlock()
	for i, r := range tm.ranges {
		if r.lo == lo {
			tm.ranges = slices.Delete(tm.ranges, i, i+1)
			return nil
		}
	}
	return errNotRegistered
}

// registered says whether b lies inside one registered range.
func (tm *timer) registered(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	r := rangeOf(b)
	tm.mu.Lock()
	defer tm.mu.Unlock()
	for _, x := range tm.ranges {
		if x.lo <= r.lo && r.hi <= x.hi {
			return true
		}
	}
	return false
}

type rangeError string

func (e rangeError) Error() string { return string(e) }

const (
	errEmptyRange    = rangeError("gpu: RegisterHost: empty range")
	errOverlap       = rangeError("gpu: RegisterHost: the range overlaps one already registered")
	errNotRegistered = rangeError("gpu: UnregisterHost: no registered range starts there")
)
