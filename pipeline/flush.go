package pipeline

// The run's flusher: the outputs that are not files written every second,
// and the Kafka sources' offsets committed by what the flush made durable.

import (
	"context"
	"math"
	"time"

	"github.com/saber-hx/saber-hx/engine"
)

// startFlusher, where a query writes to Kafka or Redis or a source is a
// Kafka topic, flushes the sinks every second (Redis: its flush option, if
// shorter) and then commits the Kafka sources' offsets of what the flush
// made durable (at least once: a record is committed only once every
// window it counts in has been written). With a file sink nothing is
// committed while running: a file is only written when the run ends
// (commitOffsets). stop ends it and returns its first error.
func (j *Job) startFlusher() (stop func() error) {
	every, needed := time.Second, false
	for _, s := range j.sinks {
		if s != nil && s.w == nil && s.fn == nil {
			needed = true
		}
	}
	for i, q := range j.prog.Queries {
		if j.sinks[i] != nil && q.Sink != nil && q.Sink.Flush > 0 {
			every = min(every, q.Sink.Flush)
		}
	}
	for _, s := range j.sources {
		needed = needed || s.kafka != nil
	}
	if !needed {
		return func() error { return nil }
	}
	done, stopped := make(chan struct{}), make(chan error, 1)
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				stopped <- nil
				return
			case <-t.C:
				// With checkpoints the offsets are committed by each
				// checkpoint, no further.
				if err := j.flushAndCommit(!j.files() && j.ckpt == nil); err != nil {
					j.stopFeeds()
					stopped <- err
					return
				}
			}
		}
	}()
	return func() error {
		close(done)
		return <-stopped
	}
}

// flushTimeout bounds one write of an output; a flush may retry it for
// the retry budget besides (rowSink.bound).
const flushTimeout = 30 * time.Second

// flushAndCommit flushes the sinks that are not files and, with commit,
// tells each Kafka source what is out: the progress is read before the
// flush, so that everything it counts is in the sinks' buffers, which the
// flush then writes.
func (j *Job) flushAndCommit(commit bool) error {
	progress := j.progress()
	// Each sink bounds its flush (rowSink.bounded): a server gone away
	// for longer than the retry budget fails the run instead of hanging
	// it, SIGINT included.
	for _, s := range j.sinks {
		if s != nil && s.file == nil {
			if err := s.flush(context.Background()); err != nil {
				return err
			}
		}
	}
	if commit {
		for s, p := range progress {
			s.kafka.Done(p.Merged, p.Complete)
		}
	}
	return nil
}

// progress is each Kafka source's: the least over the streams it feeds
// (it writes the same bytes to each).
func (j *Job) progress() map[*sqlSource]engine.Progress {
	out := map[*sqlSource]engine.Progress{}
	for _, s := range j.sources {
		if s.kafka == nil || len(j.feeds[s]) == 0 {
			continue
		}
		p := engine.Progress{Merged: math.MaxUint64, Complete: math.MaxInt64}
		for _, st := range j.feeds[s] {
			q := st.Progress()
			p.Merged, p.Complete = min(p.Merged, q.Merged), min(p.Complete, q.Complete)
		}
		out[s] = p
	}
	return out
}

// commitOffsets, once the run has drained and its outputs are written
// (files committed), tells each Kafka source that everything it fed is
// out.
func (j *Job) commitOffsets() {
	for s := range j.progress() {
		s.kafka.Done(math.MaxUint64, math.MaxInt64)
	}
}
