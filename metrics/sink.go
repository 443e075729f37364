package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// SinkStats is what an output reports to the registry (AddSink). The
// registry calls SinkCounts at every scrape, from the scraping goroutine
// while the output writes: it must be safe for that and cheap.
type SinkStats interface {
	SinkCounts() SinkCounts
}

// SinkCounts are an output's counters, from its start.
type SinkCounts struct {
	// Retries is the writes tried again after a failure of the
	// connection to the server (an outage the output waits through).
	Retries uint64
	// Down says whether the output is in an outage now: its last write
	// failed and it is retrying.
	Down bool
}

// SinkFunc is a function as a SinkStats.
type SinkFunc func() SinkCounts

// SinkCounts calls f.
func (f SinkFunc) SinkCounts() SinkCounts { return f() }

type namedSink struct {
	id   uint64
	name string
	s    SinkStats
}

func collectSink(ch chan<- prometheus.Metric, snk namedSink) {
	c := snk.s.SinkCounts()
	counter(ch, descSinkRetries, c.Retries, snk.name)
	down := 0.0
	if c.Down {
		down = 1
	}
	gauge(ch, descSinkDown, down, snk.name)
}
