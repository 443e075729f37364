package pipeline

import "github.com/saber-hx/saber-hx/metrics"

// outageStats is what the Kafka and Redis outputs say of their outages.
type outageStats interface {
	Retries() uint64
	Down() bool
}

// sinkCounts reads an output's outages for the metrics server.
func sinkCounts(o outageStats) metrics.SinkStats {
	return metrics.SinkFunc(func() metrics.SinkCounts { return metrics.SinkCounts{Retries: o.Retries(), Down: o.Down()} })
}

// addSinkMetrics adds to reg each query's output that has a server to
// lose (Kafka, Redis), under the query's name.
func (j *Job) addSinkMetrics(reg *metrics.Registry) {
	for i, s := range j.sinks {
		if s == nil {
			continue
		}
		var o outageStats
		switch {
		case s.hash != nil:
			o = s.hash
		case s.ysbOut != nil:
			o = s.ysbOut
		case s.kafka != nil:
			o = s.kafka
		case s.txn != nil:
			o = s.txn
		default:
			continue
		}
		reg.AddSink(j.prog.Queries[i].Name, sinkCounts(o))
	}
}
