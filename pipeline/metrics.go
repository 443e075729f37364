package pipeline

import (
	"fmt"
	"strings"
	"time"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/metrics"
	"github.com/saber-hx/saber-hx/sql"
)

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
		name := j.prog.Queries[i].Name
		remove, replaced := reg.AddSink(name, sinkCounts(o))
		j.registered(remove, replaced, "output "+name)
	}
}

// addSourceMetrics adds to reg each Kafka source's counters, under the
// source's name.
func (j *Job) addSourceMetrics(reg *metrics.Registry) {
	for _, s := range j.sources {
		if s.kafka != nil {
			remove, replaced := reg.AddSource(s.src.Name, kafkaCounts(s.kafka))
			j.registered(remove, replaced, "source "+s.src.Name)
		}
	}
}

// addEngineMetrics adds e's queries to reg, each with its event times'
// unit (engine.Config.Started: on Run's goroutine, before Close).
func (j *Job) addEngineMetrics(reg *metrics.Registry, e *engine.Engine) {
	remove, replaced := reg.AddEngine(e, metrics.EventTimeUnits(eventTimeUnits(j.prog)))
	j.registered(remove, len(replaced) > 0, "queries "+strings.Join(replaced, ", "))
}

// registered keeps remove, which takes out of Options.Metrics what the
// job added, for Close: a registry that outlives the job (a long-lived
// process's one /metrics) serves the next run's series, not this one's.
// Where the job's replaced another run's what (a job not closed, or one
// running beside this one) the log says so: its series are no longer
// served.
func (j *Job) registered(remove func(), replaced bool, what string) {
	j.unregister = append(j.unregister, remove)
	if replaced {
		fmt.Fprintf(j.log, "saber-hx: warning: metrics: another run's %s (a job not closed, or one running beside this one) "+
			"replaced in the registry (Options.Metrics) by this job's of the same name: its series are no longer served\n", what)
	}
}

// removeMetrics removes from Options.Metrics what the job added.
func (j *Job) removeMetrics() {
	for _, remove := range j.unregister {
		remove()
	}
	j.unregister = nil
}

// eventTimeUnits is the unit of each query's event times, for the
// metrics' event-time lag (0 where not known: the registry's default).
func eventTimeUnits(prog *sql.Program) []time.Duration {
	units := make([]time.Duration, len(prog.Queries))
	for i, q := range prog.Queries {
		units[i] = q.TimeUnit
	}
	return units
}
