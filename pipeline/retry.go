package pipeline

// How long the run's outputs retry through an outage of the server they
// write to (Options.SinkRetryTimeout), and how that is reported.

import (
	"fmt"
	"sync"
	"time"

	redissink "github.com/saber-hx/saber-hx/sink/redis"
)

// DefaultSinkRetryTimeout is Options.SinkRetryTimeout's default.
const DefaultSinkRetryTimeout = redissink.DefaultRetryTimeout

// SinkRetryTimeout is Options.SinkRetryTimeout for a command line's
// --sink-retry-timeout d, where 0 means no retry.
func SinkRetryTimeout(d time.Duration) (time.Duration, error) {
	switch {
	case d < 0:
		return 0, usagef("--sink-retry-timeout %v: want a duration of 0 or more, e.g. 2m", d)
	case d == 0:
		return -1, nil // no retry
	}
	return d, nil
}

// sinkRetry is how the run's outputs retry.
type sinkRetry struct {
	timeout time.Duration
	logf    func(format string, args ...any)
}

// sinkRetry is the run's retry budget (Options.SinkRetryTimeout, or its
// default) with outages reported on the log.
func (j *Job) sinkRetry() sinkRetry {
	timeout := j.opts.SinkRetryTimeout
	switch {
	case timeout == 0:
		timeout = DefaultSinkRetryTimeout
	case timeout < 0:
		timeout = 0
	}
	var mu sync.Mutex // the sinks report from the flusher and the merging workers
	stderr := j.log
	return sinkRetry{timeout: timeout, logf: func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(stderr, "saber-hx: "+format+"\n", args...)
	}}
}

// flushBound bounds a flush of the outputs: the retry budget, plus what
// one write may take.
func (s sinkRetry) flushBound() time.Duration { return flushTimeout + s.timeout }
