package ysb

import (
	"github.com/saber-hx/saber-hx/source"
)

// BundleTuples is the number of tuples of a bundle of at most size bytes: a
// whole number of generator periods, so that replaying the bundle continues
// the generator's sequence exactly (at least one period).
func BundleTuples(size int, cfg GenConfig) int {
	return int(source.BundleTuples(size, TupleSize, bundlePeriod(cfg)))
}

// replay is the benchmark's input: a source.Replay of the generator's
// first n tuples (whole periods), each pass's event times shifted by the
// bundle's span (n / TuplesPerMs ms), copied by copyShift (the AVX2 copy
// where the CPU has it). Any range of the stream can be produced
// independently, which lets the workers ingest.
type replay struct {
	*source.Replay
	corrupt func(task []byte)
}

// newReplay generates the bundle of n tuples of gen to replay; corrupt, in
// tests, edits each task's bytes after they were filled.
func newReplay(gen *Generator, n int, corrupt func(task []byte)) (*replay, error) {
	r, err := source.NewReplay(gen, TupleSize, uint64(n), int64(n/gen.Config().TuplesPerMs), nil)
	if err != nil {
		return nil, err
	}
	return &replay{Replay: r, corrupt: corrupt}, nil
}

// fill writes the stream's tuples from index k on into b (whole tuples).
func (r *replay) fill(b []byte, k uint64) {
	r.Fill(b, k)
	if r.corrupt != nil {
		r.corrupt(b)
	}
}

// fillAt is fill for engine.Stream.SetFill: pos is a byte offset.
func (r *replay) fillAt(dst []byte, pos uint64) { r.fill(dst, pos/TupleSize) }

// bundlePeriod is the number of tuples after which every attribute the query
// reads repeats, with event time advanced by a whole number of milliseconds:
// lcm(3 event types, 5 ad types, ads, tuples per ms).
func bundlePeriod(cfg GenConfig) uint64 {
	p := uint64(15)
	for _, m := range []uint64{uint64(cfg.Campaigns * cfg.AdsPerCampaign), uint64(cfg.TuplesPerMs)} {
		p = p / gcd64(p, m) * m
	}
	return p
}

func gcd64(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
