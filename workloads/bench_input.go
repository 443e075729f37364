package workloads

// A bench input: its replayed bundle (source.Replay) or generator, and its
// producer.

import (
	"sync/atomic"
	"time"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/source"
)

// MaxBundleSize bounds the bytes of a replayed bundle (a larger
// BenchConfig.BundleSize is taken as it); a workload whose period does not
// fit is generated on the fly instead.
const MaxBundleSize = 256 << 20

// benchInput is one generated stream fed into one engine stream.
type benchInput struct {
	gen    Generator
	schema *query.Schema
	replay *source.Replay // nil: generate on the fly
	rate   uint64
	limit  uint64 // tuples to feed at most (Validate); 0: no bound
	input  []byte // Validate: the bytes fed
}

// makeBundle generates whole generator periods to replay, when they fit:
// at most MaxBundleSize bytes (NewBench refuses a negative size).
func (in *benchInput) makeBundle(size int) error {
	ts := in.schema.TupleSize
	period := in.gen.Period()
	if period == 0 || period*uint64(ts) > MaxBundleSize {
		return nil
	}
	if size > MaxBundleSize {
		size = MaxBundleSize
	}
	n := source.BundleTuples(size, ts, period)
	r, err := source.NewReplay(in.gen, ts, n, int64(n/in.rate), nil)
	if err != nil {
		return err
	}
	in.replay = r
	return nil
}

// produce feeds the stream until the deadline (or in.limit tuples, if set):
// whole tasks copied from the bundle with event times advanced on every
// pass, or generated in place. With a bundle, ingest says who copies:
// tasks left to the workers are copied by the worker that runs them
// (Stream.SetFill), and the producer only publishes their place.
func (in *benchInput) produce(s *engine.Stream, deadline time.Time, stop *atomic.Bool, record bool, ingest engine.Ingest, workers int) error {
	if in.replay == nil {
		ingest = engine.IngestProducer // a generator need not be safe for concurrent use
	}
	if ingest != engine.IngestProducer {
		s.SetFill(in.replay.FillAt)
	}
	f := engine.Feed{
		TupleSize: in.schema.TupleSize, Ingest: ingest, Workers: workers, Limit: in.limit, Fill: in.fill,
		Stop: func() bool { return stop.Load() || !time.Now().Before(deadline) },
	}
	if record {
		f.Task = in.record
	}
	_, err := f.Run(s, 0)
	return err
}

// record keeps a copy of a task's bytes (Validate), generating those of
// a task left to the workers as they will.
func (in *benchInput) record(b []byte, k uint64, left bool) {
	if left {
		n := len(in.input)
		in.input = append(in.input, make([]byte, len(b))...)
		in.fill(in.input[n:], k)
		return
	}
	in.input = append(in.input, b...)
}

// fill writes the input's tuples from index k on into b (whole tuples):
// from the bundle, event times advanced by a period's span on every pass,
// or from the generator where there is no bundle.
func (in *benchInput) fill(b []byte, k uint64) {
	if in.replay == nil {
		in.gen.Fill(b, k)
		return
	}
	in.replay.Fill(b, k)
}
