package main

// How long the run's outputs retry through an outage of the server they
// write to (--sink-retry-timeout), and how that is reported.

import (
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	redissink "github.com/saber-hx/saber-hx/sink/redis"
)

// sinkRetryEnv, where set, is --sink-retry-timeout's value until the flag
// is registered on run's flag set (addSinkRetryFlag).
const sinkRetryEnv = "SABER_HX_SINK_RETRY_TIMEOUT"

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

// sinkRetry reads the retry budget (sinkRetryEnv, else the default) and
// reports outages on stderr.
func (r *sqlRun) sinkRetry() (sinkRetry, error) {
	timeout := redissink.DefaultRetryTimeout
	if v := os.Getenv(sinkRetryEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return sinkRetry{}, usagef("%s=%q: want a duration of 0 or more, e.g. 2m", sinkRetryEnv, v)
		}
		timeout = d
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
