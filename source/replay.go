package source

import "fmt"

// Replay is a source of generated tuples replayed from memory: a bundle of
// whole generator periods, replayed forever, each pass's event times
// advanced by the bundle's span, so that tuple k of the stream is tuple
// k mod n of the bundle, span*(k/n) ms later. The event time is the
// little-endian int64 at byte 0 of each tuple. Any range of the stream can
// be produced independently (Fill is safe for concurrent use), which lets
// the engine's workers copy their own tasks (engine.Stream.SetFill with
// FillAt).
type Replay struct {
	bundle []byte
	n      uint64 // tuples in the bundle
	ts     int    // tuple size, bytes
	span   int64  // event-time advance of one pass, ms
	copy   CopyShiftFunc
}

// CopyShiftFunc copies the whole tuples of src into dst (len(dst) >=
// len(src)) and adds shift to each copy's event time (the int64 at byte 0
// of each tuple). A Replay calls it once per contiguous run of the bundle
// (about once per task), never per tuple.
type CopyShiftFunc func(dst, src []byte, shift int64)

// Filler generates tuples: Fill writes tuples k0, k0+1, ... into dst (a
// whole number of tuples). ysb's and the workloads' generators are
// Fillers.
type Filler interface {
	Fill(dst []byte, k0 uint64)
}

// BundleTuples is the number of tuples of a bundle of at most size bytes
// (but at least one period): a whole number of periods of period tuples,
// so that replaying the bundle continues the generator's sequence exactly.
func BundleTuples(size, tupleSize int, period uint64) uint64 {
	n := uint64(max(size, 0)) / uint64(tupleSize) / period * period
	return max(n, period)
}

// NewReplay generates tuples [0, tuples) of gen into a bundle and returns
// its replay, each pass advancing event times by span ms (for a generator
// of r tuples per ms whose period divides tuples: tuples/r). copyShift is
// the copy into the destination: nil for CopyShift.
func NewReplay(gen Filler, tupleSize int, tuples uint64, span int64, copyShift CopyShiftFunc) (*Replay, error) {
	if tupleSize < 8 {
		return nil, fmt.Errorf("replay: tuple size %d: need at least 8 bytes (the event time)", tupleSize)
	}
	if tuples == 0 {
		return nil, fmt.Errorf("replay: an empty bundle")
	}
	if span < 0 {
		return nil, fmt.Errorf("replay: span %d ms: must not be negative", span)
	}
	b := make([]byte, tuples*uint64(tupleSize))
	gen.Fill(b, 0)
	return &Replay{bundle: b, n: tuples, ts: tupleSize, span: span, copy: copyShift}, nil
}

// Bundle is the replayed bundle (tuples 0 to Tuples()-1 of the stream).
func (r *Replay) Bundle() []byte { return r.bundle }

// Tuples is the number of tuples in the bundle.
func (r *Replay) Tuples() uint64 { return r.n }

// Span is the event-time advance of one pass, ms.
func (r *Replay) Span() int64 { return r.span }

// Fill writes the stream's tuples from index k on into b (whole tuples;
// a trailing partial tuple of b is left as it is).
func (r *Replay) Fill(b []byte, k uint64) {
	ts := r.ts
	for off := 0; off+ts <= len(b); {
		pos := k % r.n
		shift := int64(k/r.n) * r.span
		c := min((len(b)-off)/ts, int(r.n-pos)) * ts
		p := int(pos) * ts
		if r.copy != nil {
			r.copy(b[off:off+c], r.bundle[p:p+c], shift)
		} else {
			CopyShift(b[off:off+c], r.bundle[p:p+c], ts, shift)
		}
		off += c
		k += uint64(c / ts)
	}
}

// FillAt is Fill for engine.Stream.SetFill: pos is the stream's byte
// offset of dst.
func (r *Replay) FillAt(dst []byte, pos uint64) { r.Fill(dst, pos/uint64(r.ts)) }
