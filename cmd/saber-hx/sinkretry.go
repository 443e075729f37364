package main

// How long the run's outputs retry through an outage of the server they
// write to (--sink-retry-timeout), and how that is reported.

import (
	"flag"
	"fmt"
	"sync"
	"time"

	redissink "github.com/saber-hx/saber-hx/sink/redis"
)

// addSinkRetryFlag registers --sink-retry-timeout on fs.
func addSinkRetryFlag(fs *flag.FlagSet) *time.Duration {
	return fs.Duration("sink-retry-timeout", redissink.DefaultRetryTimeout,
		"how long an output retries, with backoff, a write that fails because its server is unreachable (down, restarting) "+
			"before the run fails; meanwhile its rows are held and the run waits; 0: fail at once")
}

// sinkRetry is how the run's outputs retry.
type sinkRetry struct {
	timeout time.Duration
	logf    func(format string, args ...any)
}

// sinkRetry is the run's retry budget (--sink-retry-timeout, or its
// default) with outages reported on stderr.
func (r *sqlRun) sinkRetry() (sinkRetry, error) {
	timeout := redissink.DefaultRetryTimeout
	if r.sinkRetryTimeout != nil {
		if timeout = *r.sinkRetryTimeout; timeout < 0 {
			return sinkRetry{}, usagef("--sink-retry-timeout %v: want a duration of 0 or more, e.g. 2m", timeout)
		}
	}
	var mu sync.Mutex // the sinks report from the flusher and the merging workers
	stderr := r.stderr
	return sinkRetry{timeout: timeout, logf: func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(stderr, "saber-hx: "+format+"\n", args...)
	}}, nil
}

// flushBound bounds a flush of the outputs: the retry budget, plus what
// one write may take.
func (s sinkRetry) flushBound() time.Duration { return flushTimeout + s.timeout }

var silenceRedisOnce sync.Once
