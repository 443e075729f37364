// Package metrics serves a saber-hx run's counters to Prometheus
// (prometheus/client_golang): a Registry of its own (not the global
// default) with the Go runtime's and the process's collectors, and a
// collector that reads the engine at scrape time, so that nothing is
// updated per tuple, nor even per task beyond the engine's own counters,
// and the scraped counters are exactly the engine's (engine.Stats,
// engine.Stream.Metrics). Serve serves it over HTTP: /metrics, and / a page
// linking to it.
//
// Per query (label query: the spec's query or join name):
//
//	saber_records_in_total              counter    tuples merged (Stats.Tuples)
//	saber_bytes_in_total                counter    bytes of the merged tasks (Stats.Bytes)
//	saber_records_filtered_total        counter    tuples dropped by WHERE (Stats.Filtered)
//	saber_records_unmatched_total       counter    tuples without a match in a joined table (Stats.Unmatched)
//	saber_records_late_total            counter    tuples behind the watermark, in no open window (Stats.Late)
//	saber_records_counted_total         counter    tuples counted in a window or output (Stats.Counted)
//	saber_records_out_total             counter    rows output (Stats.Rows): windows' rows, a join's pairs, a stateless query's output tuples
//	saber_windows_out_total             counter    windows emitted (Stats.Windows)
//	saber_tasks_total                   counter    tasks merged (Stats.Tasks)
//	saber_gpu_fallback_tasks_total      counter    GPU tasks run on the CPU fallback (Stats.GPUFallbackTasks)
//	saber_task_latency_seconds          histogram  task latency, dispatched to merged
//	saber_backpressure_seconds_total    counter    time the producer waited for ring space or a task record
//	saber_backpressure_waits_total      counter    those waits
//	saber_ring_used_bytes               gauge      ring bytes committed, not yet freed
//	saber_ring_size_bytes               gauge      ring capacity
//	saber_watermark                     gauge      the largest event time merged, in the query's event-time unit; absent before the first
//	saber_event_time_lag_seconds        gauge      wall clock minus the watermark, in the query's event-time unit (EventTimeUnits, else Options.EventTimeUnit); range windows only
//	saber_processor_tasks_total         counter    tasks run, per processor kind (label kind: cpu, gpu)
//	saber_processor_busy_seconds_total  counter    busy time, per processor kind
//	saber_serial_seconds_total          counter    workers' time where no other worker can progress on the query (Stats.SerialTime)
//	saber_worker_seconds_total          counter    workers' time on the query, serial included (Stats.WorkerTime)
//
// The ratio of the last two is serial_fraction. Serial time counts as its
// section ends and worker time as the task's frame does: between two
// scrapes the serial counter can run ahead of the other by a frame, and a
// ratio over a short range above 1 is that (the summaries clamp it).
//
// A query restored from a checkpoint goes on from the snapshot's tuple,
// window and row counters (the whole stream's); its bytes, tasks and
// times start at zero.
//
// The event-time lag is meaningful only for a live source whose event times
// are the wall clock's (Kafka, a socket, a generator with timestamps now):
// with a file or a synthetic benchmark it is the distance from the data's
// epoch, as large as it looks.
//
// Per source (label source, AddSource): saber_source_records_total,
// saber_source_bytes_total, saber_source_malformed_total (counters) and
// saber_source_lag_records{partition} (gauge: a partitioned source's
// records behind the end of each partition, Kafka's consumer lag).
//
// Per output (label sink, AddSink): saber_sink_retries_total (counter:
// writes tried again through an outage of the output's server) and
// saber_sink_down (gauge: 1 while the output retries).
package metrics

import (
	"math"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/query"
)

// Options tune a Registry.
type Options struct {
	// EventTimeUnit is the unit of the queries' event times, for the
	// event-time lag, where AddEngine was not given theirs
	// (EventTimeUnits); 0 means milliseconds (YSB's, Kafka's timestamps).
	EventTimeUnit time.Duration
	// Now is the wall clock of the event-time lag; nil means time.Now.
	Now func() time.Time
}

// Registry is a Prometheus registry of a run's metrics. Its engines,
// sources and outputs may be added at any time, also while it is served,
// and removed (the function each Add returns) when their run is over, so
// that one registry, a long-lived process's one /metrics, serves run
// after run.
type Registry struct {
	reg  *prometheus.Registry
	opts Options

	mu      sync.Mutex
	seq     uint64 // numbers what is added, so that a remove takes out its own and nothing added later in its place
	engines []namedEngine
	sources []namedSource
	sinks   []namedSink
}

type namedEngine struct {
	id      uint64
	e       *engine.Engine
	queries []string        // e.SpecNames(): its series' query labels
	units   []time.Duration // EventTimeUnits, by spec
}

// EngineOption tunes how AddEngine reads an engine.
type EngineOption func(*namedEngine)

// EventTimeUnits gives the unit of each query's event times, by spec index
// (as engine.Engine.Stream's), for its event-time lag: the queries of one
// engine may read sources of different units (a SQL source's time_unit),
// which one Options.EventTimeUnit would put off by their ratio. A unit of
// 0, or a spec past units, has Options.EventTimeUnit.
func EventTimeUnits(units []time.Duration) EngineOption {
	units = slices.Clone(units)
	return func(n *namedEngine) { n.units = units }
}

type namedSource struct {
	id   uint64
	name string
	s    SourceStats
}

// NewRegistry returns a registry holding the Go runtime's and the
// process's collectors and the collector of the engines and sources added
// to it.
func NewRegistry(opts Options) *Registry {
	if opts.EventTimeUnit <= 0 {
		opts.EventTimeUnit = time.Millisecond
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	r := &Registry{reg: prometheus.NewRegistry(), opts: opts}
	r.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), (*collector)(r))
	return r
}

// AddEngine adds an engine's queries. An engine added earlier that has a
// query of the same name is replaced, as AddSource and AddSink replace by
// name: their series would collide, and every scrape fail. replaced names
// the queries of the engines replaced (nil where none was): a run whose
// engine was not removed, or two running at once, which the caller
// should report, as their series are no longer served. remove takes e out
// again (once its run is over); it does nothing where e was replaced.
func (r *Registry) AddEngine(e *engine.Engine, opts ...EngineOption) (remove func(), replaced []string) {
	queries := e.SpecNames()
	added := namedEngine{e: e, queries: queries}
	for _, o := range opts {
		o(&added)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.engines = slices.DeleteFunc(r.engines, func(n namedEngine) bool {
		if n.e != e && !slices.ContainsFunc(n.queries, func(q string) bool { return slices.Contains(queries, q) }) {
			return false
		}
		if n.e != e {
			replaced = append(replaced, n.queries...)
		}
		return true
	})
	r.seq++
	id := r.seq
	added.id = id
	r.engines = append(r.engines, added)
	return r.remover(func() { r.engines = slices.DeleteFunc(r.engines, func(n namedEngine) bool { return n.id == id }) }), replaced
}

// AddSource adds a source's counters under name (label source); a source
// added earlier under the same name is replaced (replaced is true: as
// AddEngine's, for the caller to report). remove takes it out again; it
// does nothing where the source was replaced.
func (r *Registry) AddSource(name string, s SourceStats) (remove func(), replaced bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	before := len(r.sources)
	r.sources = slices.DeleteFunc(r.sources, func(n namedSource) bool { return n.name == name })
	r.seq++
	id := r.seq
	r.sources = append(r.sources, namedSource{id, name, s})
	return r.remover(func() { r.sources = slices.DeleteFunc(r.sources, func(n namedSource) bool { return n.id == id }) }), len(r.sources) == before
}

// AddSink adds an output's counters under name (label sink); an output
// added earlier under the same name is replaced (replaced is true: as
// AddEngine's, for the caller to report). remove takes it out again; it
// does nothing where the output was replaced.
func (r *Registry) AddSink(name string, s SinkStats) (remove func(), replaced bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	before := len(r.sinks)
	r.sinks = slices.DeleteFunc(r.sinks, func(n namedSink) bool { return n.name == name })
	r.seq++
	id := r.seq
	r.sinks = append(r.sinks, namedSink{id, name, s})
	return r.remover(func() { r.sinks = slices.DeleteFunc(r.sinks, func(n namedSink) bool { return n.id == id }) }), len(r.sinks) == before
}

// remover is a remove function of Add*: del under the registry's lock.
func (r *Registry) remover(del func()) func() {
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		del()
	}
}

// Gatherer is the registry as a prometheus.Gatherer (for a handler of
// one's own, or a test).
func (r *Registry) Gatherer() prometheus.Gatherer { return r.reg }

// Register adds a collector of the caller's.
func (r *Registry) Register(c prometheus.Collector) error { return r.reg.Register(c) }

func newDesc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

var (
	descRecordsIn  = newDesc("saber_records_in_total", "Tuples of the query's merged tasks.", "query")
	descBytesIn    = newDesc("saber_bytes_in_total", "Bytes of the query's merged tasks.", "query")
	descFiltered   = newDesc("saber_records_filtered_total", "Tuples dropped by the query's WHERE.", "query")
	descUnmatched  = newDesc("saber_records_unmatched_total", "Tuples without a match in the query's joined table.", "query")
	descLate       = newDesc("saber_records_late_total", "Tuples behind the watermark, in no open window.", "query")
	descCounted    = newDesc("saber_records_counted_total", "Tuples counted in a window (a stateless query: output).", "query")
	descRecordsOut = newDesc("saber_records_out_total", "Rows output: the windows' rows, a join's pairs, a stateless query's tuples.", "query")
	descWindows    = newDesc("saber_windows_out_total", "Windows emitted.", "query")
	descTasks      = newDesc("saber_tasks_total", "Tasks merged.", "query")
	descFallback   = newDesc("saber_gpu_fallback_tasks_total", "Tasks the GPU took and ran on its CPU fallback kernel.", "query")
	descLatency    = newDesc("saber_task_latency_seconds", "Task latency, dispatched to merged (its windows emitted).", "query")
	descBPTime     = newDesc("saber_backpressure_seconds_total", "Time the query's producer waited for ring space or a task record.", "query")
	descBPWaits    = newDesc("saber_backpressure_waits_total", "Waits of the query's producer for ring space or a task record.", "query")
	descRingUsed   = newDesc("saber_ring_used_bytes", "Ring bytes committed and not yet freed (queued, running or waiting to be merged).", "query")
	descRingSize   = newDesc("saber_ring_size_bytes", "Ring capacity.", "query")
	descWatermark  = newDesc("saber_watermark", "The largest event time merged, in the query's event-time unit.", "query")
	descLag        = newDesc("saber_event_time_lag_seconds", "Wall clock minus the watermark; meaningful for live sources only.", "query")
	descKindTasks  = newDesc("saber_processor_tasks_total", "Tasks run, per processor kind.", "query", "kind")
	descKindBusy   = newDesc("saber_processor_busy_seconds_total", "Busy time, per processor kind.", "query", "kind")
	descSerial     = newDesc("saber_serial_seconds_total", "Workers' time on the query where no other worker can progress on it (its ordered result stage); over saber_worker_seconds_total: serial_fraction (it counts as a section ends, the other as its task does: over a short range the ratio can pass 1).", "query")
	descWorker     = newDesc("saber_worker_seconds_total", "Workers' time on the query, serial included (their waits for other workers, idle, not).", "query")

	descSrcRecords   = newDesc("saber_source_records_total", "Records the source read.", "source")
	descSrcBytes     = newDesc("saber_source_bytes_total", "Bytes the source read.", "source")
	descSrcMalformed = newDesc("saber_source_malformed_total", "Records the source skipped as malformed.", "source")
	descSrcLag       = newDesc("saber_source_lag_records", "Records behind the end of the partition (consumer lag).", "source", "partition")

	descSinkRetries = newDesc("saber_sink_retries_total", "Writes of the output tried again after its server's connection failed.", "sink")
	descSinkDown    = newDesc("saber_sink_down", "1 while the output's server is unreachable and its writes are retried, else 0.", "sink")

	allDescs = []*prometheus.Desc{descRecordsIn, descBytesIn, descFiltered, descUnmatched, descLate, descCounted,
		descRecordsOut, descWindows, descTasks, descFallback, descLatency, descBPTime, descBPWaits, descRingUsed,
		descRingSize, descWatermark, descLag, descKindTasks, descKindBusy, descSerial, descWorker,
		descSrcRecords, descSrcBytes, descSrcMalformed, descSrcLag, descSinkRetries, descSinkDown}
)

// The latency buckets exported, of engine's 64: from about a microsecond
// to about two minutes (the rest are in +Inf or below the first).
const firstBucket, lastBucket = 9, 36

// collector reads the registry's engines and sources at each scrape.
type collector Registry

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range allDescs {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	engines := slices.Clone(c.engines)
	sources := slices.Clone(c.sources)
	sinks := slices.Clone(c.sinks)
	c.mu.Unlock()
	now := c.opts.Now()
	for _, e := range engines {
		for i, s := range e.e.Streams() {
			unit := c.opts.EventTimeUnit
			if i < len(e.units) && e.units[i] > 0 {
				unit = e.units[i]
			}
			c.collectStream(ch, s, unit, now)
		}
	}
	for _, src := range sources {
		collectSource(ch, src)
	}
	for _, snk := range sinks {
		collectSink(ch, snk)
	}
}

func counter(ch chan<- prometheus.Metric, d *prometheus.Desc, v uint64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
}

func gauge(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

// collectStream sends s's series; unit is its event times'.
func (c *collector) collectStream(ch chan<- prometheus.Metric, s *engine.Stream, unit time.Duration, now time.Time) {
	// Read apart, while tasks merge, the histogram's count and the tasks
	// may differ by the tasks merged in between; after CloseAll they agree.
	m := s.Metrics()
	st := s.Stats()
	q := st.Query
	counter(ch, descRecordsIn, st.Tuples, q)
	counter(ch, descBytesIn, st.Bytes, q)
	counter(ch, descFiltered, st.Filtered, q)
	counter(ch, descUnmatched, st.Unmatched, q)
	counter(ch, descLate, st.Late, q)
	counter(ch, descCounted, st.Counted, q)
	counter(ch, descRecordsOut, st.Rows, q)
	counter(ch, descWindows, st.Windows, q)
	counter(ch, descTasks, st.Tasks, q)
	counter(ch, descFallback, st.GPUFallbackTasks, q)

	buckets := make(map[float64]uint64, lastBucket-firstBucket+1)
	for i := firstBucket; i <= lastBucket; i++ {
		buckets[engine.LatencyBucketBound(i).Seconds()] = m.Latency.Buckets[i]
	}
	ch <- prometheus.MustNewConstHistogram(descLatency, m.Latency.Count, m.Latency.Sum.Seconds(), buckets, q)

	counter(ch, descBPWaits, m.BackPressureWaits, q)
	ch <- prometheus.MustNewConstMetric(descBPTime, prometheus.CounterValue, m.BackPressure.Seconds(), q)
	gauge(ch, descRingUsed, float64(m.RingUsed), q)
	gauge(ch, descRingSize, float64(m.RingSize), q)
	if st.Watermark != math.MinInt64 { // none before the first merged tuple
		gauge(ch, descWatermark, float64(st.Watermark), q)
		if rangeWindows(s) {
			lag := float64(now.UnixNano())/1e9 - float64(st.Watermark)*unit.Seconds()
			gauge(ch, descLag, lag, q)
		}
	}
	ch <- prometheus.MustNewConstMetric(descSerial, prometheus.CounterValue, m.SerialTime.Seconds(), q)
	ch <- prometheus.MustNewConstMetric(descWorker, prometheus.CounterValue, m.WorkerTime.Seconds(), q)
	for _, k := range m.Kinds {
		counter(ch, descKindTasks, k.Tasks, q, k.Kind)
		ch <- prometheus.MustNewConstMetric(descKindBusy, prometheus.CounterValue, k.Busy.Seconds(), q, k.Kind)
	}
}

// rangeWindows: the stream's positions are event times (a row window's
// are indices, of no wall clock). A join's input carries the join's
// window, not its query's: its event times are taken as such.
func rangeWindows(s *engine.Stream) bool {
	if s.Right() != nil {
		return true
	}
	return s.Plan().Query.Window.Type != query.Rows
}
