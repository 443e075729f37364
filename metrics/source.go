package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// SourceStats is what a source reports to the registry (AddSource). The
// registry calls SourceCounts at every scrape, from the scraping goroutine
// while the source runs: it must be safe for that (atomics, a lock, or a
// snapshot the source publishes per batch) and cheap.
type SourceStats interface {
	SourceCounts() SourceCounts
}

// SourceCounts are a source's counters, from its start.
type SourceCounts struct {
	Records   uint64 // records read (malformed ones included)
	Bytes     uint64 // bytes read
	Malformed uint64 // records skipped as malformed
	// Lag is, per partition of a partitioned source (Kafka), the records
	// behind the partition's end (high watermark minus next offset); nil
	// for a source without partitions.
	Lag []PartitionLag
}

// PartitionLag is one partition's consumer lag.
type PartitionLag struct {
	Partition int32
	Lag       int64
}

// SourceFunc is a function as a SourceStats.
type SourceFunc func() SourceCounts

// SourceCounts calls f.
func (f SourceFunc) SourceCounts() SourceCounts { return f() }

func collectSource(ch chan<- prometheus.Metric, src namedSource) {
	c := src.s.SourceCounts()
	counter(ch, descSrcRecords, c.Records, src.name)
	counter(ch, descSrcBytes, c.Bytes, src.name)
	counter(ch, descSrcMalformed, c.Malformed, src.name)
	for _, p := range c.Lag {
		gauge(ch, descSrcLag, float64(p.Lag), src.name, strconv.Itoa(int(p.Partition)))
	}
}
