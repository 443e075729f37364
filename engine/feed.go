package engine

// Feed is a producer's loop over a stream, task by task: Buffer (the rest
// of the current task, waiting while the ring is full), then either leave
// the task to the workers (Ingest.LeaveToWorkers: CommitUnfilled, and the
// stream's fill function, Stream.SetFill, writes the bytes where the task
// runs) or write it with Fill and Commit. It goes on until Stop says so or
// Limit tuples are fed. Everything it calls is per task, not per tuple,
// and it allocates nothing.
type Feed struct {
	TupleSize int         // the stream's tuple size in bytes
	Ingest    Ingest      // who copies the input; IngestProducer without SetFill
	Workers   int         // the CPU workers, for Ingest.LeaveToWorkers
	Limit     uint64      // feed tuples up to index Limit, the last task trimmed; 0: no bound
	Stop      func() bool // checked before every task: true stops the feed; nil: never
	// Fill writes the input's tuples from index k on into b (whole
	// tuples), for the tasks the producer writes.
	Fill func(b []byte, k uint64)
	// Task, if set, sees every task's bytes once they are written (or left
	// to the workers: left is set and b holds nothing yet), just before
	// they are committed; k is the index of b's first tuple.
	Task func(b []byte, k uint64, left bool)
}

// Run feeds s from tuple index k on and returns the index after the last
// tuple it fed (also with an error: Buffer's, or a commit's, whose bytes
// are counted).
func (f *Feed) Run(s *Stream, k uint64) (uint64, error) {
	ts := uint64(f.TupleSize)
	for (f.Stop == nil || !f.Stop()) && (f.Limit == 0 || k < f.Limit) {
		b, err := s.Buffer()
		if err != nil {
			return k, err
		}
		if f.Limit > 0 {
			b = b[:min(uint64(len(b)), (f.Limit-k)*ts)]
		}
		// Only the last task can be trimmed by Limit: every other Buffer
		// is a whole task, so no task mixes the two kinds of commit.
		leave := f.Ingest.LeaveToWorkers(s, f.Workers)
		if !leave {
			f.Fill(b, k)
		}
		if f.Task != nil {
			f.Task(b, k, leave)
		}
		k += uint64(len(b)) / ts
		if leave {
			err = s.CommitUnfilled(len(b))
		} else {
			err = s.Commit(len(b))
		}
		if err != nil {
			return k, err
		}
	}
	return k, nil
}
