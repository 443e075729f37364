package metrics_test

import (
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"runtime"
	"runtime/pprof"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/metrics"
	"github.com/saber-hx/saber-hx/query"
)

// The test stream: 16-byte tuples of an event time and a value.
const tupleSize = 16

func testQueries(t *testing.T) (agg, sel *query.Query) {
	s, err := query.NewSchema(tupleSize,
		query.Attribute{Name: "ts", Type: query.Int64, Offset: 0},
		query.Attribute{Name: "v", Type: query.Int64, Offset: 8},
	)
	require.NoError(t, err)
	agg = &query.Query{Name: "agg", Schema: s, Window: query.Tumbling(10),
		Where:      query.Cmp(query.C("v"), query.Gt, query.Int(2)),
		Aggregates: []query.Aggregate{{Func: query.Count}, {Func: query.Sum, Arg: query.C("v")}}}
	sel = &query.Query{Name: "sel", Schema: s, Where: query.Cmp(query.C("v"), query.Lt, query.Int(5))}
	return agg, sel
}

// testData is n tuples whose event times go up by one every other tuple,
// and every 50th tuple jumps 100 back: late for the tumbling windows.
func testData(n int) []byte {
	b := make([]byte, n*tupleSize)
	for i := range n {
		ts := int64(i / 2)
		if i%50 == 49 {
			ts -= 100
		}
		binary.LittleEndian.PutUint64(b[i*tupleSize:], uint64(ts))
		binary.LittleEndian.PutUint64(b[i*tupleSize+8:], uint64(i%7))
	}
	return b
}

func scrape(t *testing.T, c *http.Client, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := c.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return mfs
}

// value is the sample of family name whose labels are labels (name=value
// pairs); ok false when there is none.
func value(mfs map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	mf := mfs[name]
	if mf == nil {
		return 0, false
	}
	want := map[string]string{}
	for i := 0; i < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
	for _, m := range mf.GetMetric() {
		if !maps.Equal(labelsOf(m), want) {
			continue
		}
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			return m.GetCounter().GetValue(), true
		case dto.MetricType_GAUGE:
			return m.GetGauge().GetValue(), true
		case dto.MetricType_HISTOGRAM:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

func labelsOf(m *dto.Metric) map[string]string {
	l := map[string]string{}
	for _, p := range m.GetLabel() {
		l[p.GetName()] = p.GetValue()
	}
	return l
}

// perQuery are the families with a query label, and their types.
var perQuery = map[string]dto.MetricType{
	"saber_records_in_total":             dto.MetricType_COUNTER,
	"saber_bytes_in_total":               dto.MetricType_COUNTER,
	"saber_records_filtered_total":       dto.MetricType_COUNTER,
	"saber_records_unmatched_total":      dto.MetricType_COUNTER,
	"saber_records_late_total":           dto.MetricType_COUNTER,
	"saber_records_counted_total":        dto.MetricType_COUNTER,
	"saber_records_out_total":            dto.MetricType_COUNTER,
	"saber_windows_out_total":            dto.MetricType_COUNTER,
	"saber_tasks_total":                  dto.MetricType_COUNTER,
	"saber_gpu_fallback_tasks_total":     dto.MetricType_COUNTER,
	"saber_task_latency_seconds":         dto.MetricType_HISTOGRAM,
	"saber_backpressure_seconds_total":   dto.MetricType_COUNTER,
	"saber_backpressure_waits_total":     dto.MetricType_COUNTER,
	"saber_ring_used_bytes":              dto.MetricType_GAUGE,
	"saber_ring_size_bytes":              dto.MetricType_GAUGE,
	"saber_processor_tasks_total":        dto.MetricType_COUNTER,
	"saber_processor_busy_seconds_total": dto.MetricType_COUNTER,
}

// The counters that only grow, checked between scrapes.
var monotone = []string{"saber_records_in_total", "saber_bytes_in_total", "saber_records_filtered_total",
	"saber_records_late_total", "saber_records_counted_total", "saber_records_out_total", "saber_windows_out_total",
	"saber_tasks_total", "saber_task_latency_seconds", "saber_backpressure_seconds_total", "saber_backpressure_waits_total"}

// TestScrapeDuringARun runs two queries behind a slow sink and a small ring
// while scraping /metrics over HTTP: every family is there with its type
// and labels and the counters only grow; after CloseAll the scraped
// counters are exactly the engine's Stats, the latency histogram counts
// every merged task, the producer was back-pressured, and Close leaves no
// goroutine.
func TestScrapeDuringARun(t *testing.T) {
	base := runtime.NumGoroutine()
	agg, sel := testQueries(t)
	slow := func(*engine.Window) error { time.Sleep(20 * time.Microsecond); return nil }
	e, err := engine.Start(engine.Config{Workers: 2, TaskSize: tupleSize * 64, BufferSize: 1 << 13},
		[]engine.Spec{{Query: agg, Windows: slow}, {Query: sel, Tuples: func([]byte) error { return nil }}})
	require.NoError(t, err)

	now := time.UnixMilli(5_000)
	reg := metrics.NewRegistry(metrics.Options{Now: func() time.Time { return now }})
	reg.AddEngine(e)
	var srcMu sync.Mutex
	src := metrics.SourceCounts{Records: 7, Bytes: 70, Malformed: 1, Lag: []metrics.PartitionLag{{Partition: 0, Lag: 3}, {Partition: 2, Lag: 0}}}
	reg.AddSource("kafka:in", metrics.SourceFunc(func() metrics.SourceCounts {
		srcMu.Lock()
		defer srcMu.Unlock()
		return src
	}))
	srv, err := metrics.Serve("127.0.0.1:0", reg)
	require.NoError(t, err)
	client := &http.Client{Transport: &http.Transport{}}

	data := testData(20000)
	done := make(chan error, 2)
	go func() { done <- e.Stream(0).Write(data) }()
	go func() { done <- e.Stream(1).Write(data) }()

	last := map[string]float64{}
	scrapes := 0
	check := func(mfs map[string]*dto.MetricFamily) {
		for name, typ := range perQuery {
			mf := mfs[name]
			if !assert.NotNil(t, mf, name) {
				continue
			}
			assert.Equal(t, typ, mf.GetType(), name)
			assert.NotEmpty(t, mf.GetHelp(), name)
			for _, m := range mf.GetMetric() {
				want := []string{"query"}
				if strings.HasPrefix(name, "saber_processor_") {
					want = []string{"kind", "query"}
				}
				assert.Equal(t, want, slices.Sorted(maps.Keys(labelsOf(m))), name)
			}
		}
		for _, q := range []string{"agg", "sel"} {
			for _, name := range monotone {
				v, ok := value(mfs, name, "query", q)
				require.True(t, ok, "%s{query=%q}", name, q)
				assert.GreaterOrEqual(t, v, last[name+q], "%s{query=%q} only grows", name, q)
				last[name+q] = v
			}
			used, _ := value(mfs, "saber_ring_used_bytes", "query", q)
			size, _ := value(mfs, "saber_ring_size_bytes", "query", q)
			assert.LessOrEqual(t, used, size)
			assert.Equal(t, float64(1<<13), size)
		}
		assert.Contains(t, mfs, "go_goroutines", "the Go collector")
		assert.Contains(t, mfs, "process_cpu_seconds_total", "the process collector")
		scrapes++
	}
	for running := 2; running > 0; {
		select {
		case err := <-done:
			require.NoError(t, err)
			running--
		default:
			check(scrape(t, client, srv.URL()))
		}
	}
	stats, err := e.CloseAll()
	require.NoError(t, err)
	mfs := scrape(t, client, srv.URL())
	check(mfs)
	t.Logf("%d scrapes", scrapes)

	for _, st := range stats {
		q := st.Query
		for name, want := range map[string]uint64{
			"saber_records_in_total":         st.Tuples,
			"saber_bytes_in_total":           st.Bytes,
			"saber_records_filtered_total":   st.Filtered,
			"saber_records_unmatched_total":  st.Unmatched,
			"saber_records_late_total":       st.Late,
			"saber_records_counted_total":    st.Counted,
			"saber_windows_out_total":        st.Windows,
			"saber_tasks_total":              st.Tasks,
			"saber_task_latency_seconds":     st.Tasks,
			"saber_gpu_fallback_tasks_total": st.GPUFallbackTasks,
		} {
			v, ok := value(mfs, name, "query", q)
			require.True(t, ok, "%s{query=%q}", name, q)
			assert.Equal(t, float64(want), v, "%s{query=%q}", name, q)
		}
		used, _ := value(mfs, "saber_ring_used_bytes", "query", q)
		assert.Zero(t, used, "%s: every task merged", q)
		cpu, ok := value(mfs, "saber_processor_tasks_total", "query", q, "kind", "cpu")
		require.True(t, ok)
		assert.Equal(t, float64(st.Tasks), cpu, "%s: every task ran on the CPU kind", q)
		wm, ok := value(mfs, "saber_watermark", "query", q)
		require.True(t, ok, "%s: a watermark", q)
		assert.Equal(t, float64(st.Watermark), wm)
		lag, ok := value(mfs, "saber_event_time_lag_seconds", "query", q)
		require.True(t, ok)
		assert.InDelta(t, 5-float64(st.Watermark)/1000, lag, 1e-9, "the clock minus the watermark in ms")
	}
	aggSt, selSt := stats[0], stats[1]
	assert.Equal(t, uint64(len(data)/tupleSize), aggSt.Tuples)
	assert.Positive(t, aggSt.Filtered)
	assert.Positive(t, aggSt.Late)
	out, _ := value(mfs, "saber_records_out_total", "query", "agg")
	assert.Equal(t, float64(aggSt.Rows), out, "an aggregation's rows")
	out, _ = value(mfs, "saber_records_out_total", "query", "sel")
	assert.Equal(t, float64(selSt.Counted), out, "a selection's tuples")

	// The histogram's buckets: cumulative, in seconds, up to its count.
	var h *dto.Histogram
	for _, m := range mfs["saber_task_latency_seconds"].GetMetric() {
		if labelsOf(m)["query"] == "agg" {
			h = m.GetHistogram()
		}
	}
	require.NotNil(t, h)
	require.NotEmpty(t, h.GetBucket())
	assert.True(t, sort.SliceIsSorted(h.GetBucket(), func(i, j int) bool {
		return h.GetBucket()[i].GetUpperBound() < h.GetBucket()[j].GetUpperBound()
	}))
	prev := uint64(0)
	for _, b := range h.GetBucket() {
		assert.GreaterOrEqual(t, b.GetCumulativeCount(), prev)
		prev = b.GetCumulativeCount()
	}
	assert.LessOrEqual(t, prev, h.GetSampleCount())
	assert.Positive(t, h.GetSampleSum())
	assert.InDelta(t, 1023e-9, h.GetBucket()[0].GetUpperBound(), 1e-15, "the first bound: 1023 ns")

	bp, _ := value(mfs, "saber_backpressure_seconds_total", "query", "agg")
	assert.Positive(t, bp, "a ring of 8 KiB before a slow sink: the producer waited")
	waits, _ := value(mfs, "saber_backpressure_waits_total", "query", "agg")
	assert.Positive(t, waits)

	// The source's counters and its partitions' lag.
	for name, want := range map[string]float64{"saber_source_records_total": 7, "saber_source_bytes_total": 70, "saber_source_malformed_total": 1} {
		v, ok := value(mfs, name, "source", "kafka:in")
		require.True(t, ok, name)
		assert.Equal(t, want, v, name)
	}
	for p, want := range map[string]float64{"0": 3, "2": 0} {
		v, ok := value(mfs, "saber_source_lag_records", "source", "kafka:in", "partition", p)
		require.True(t, ok, "partition %s", p)
		assert.Equal(t, want, v)
	}
	srcMu.Lock()
	src.Records, src.Lag = 9, src.Lag[:1]
	srcMu.Unlock()
	mfs = scrape(t, client, srv.URL())
	v, _ := value(mfs, "saber_source_records_total", "source", "kafka:in")
	assert.Equal(t, 9.0, v, "read at scrape time")
	assert.Len(t, mfs["saber_source_lag_records"].GetMetric(), 1, "the partitions of the last counts")

	client.CloseIdleConnections()
	require.NoError(t, srv.Close())
	require.NoError(t, srv.Close(), "twice")
	_, err = client.Get(srv.URL())
	assert.Error(t, err, "closed")
	client.CloseIdleConnections()
	assertNoLeak(t, base)
}

// TestNamesLint: every family of the registry, the engine's, the sources'
// and the Go and process collectors', passes promlint.
func TestNamesLint(t *testing.T) {
	agg, sel := testQueries(t)
	e, err := engine.Start(engine.Config{Workers: 1, TaskSize: tupleSize * 64, BufferSize: 1 << 13},
		[]engine.Spec{{Query: agg}, {Query: sel}})
	require.NoError(t, err)
	require.NoError(t, e.Stream(0).Write(testData(1000)))
	_, err = e.CloseAll()
	require.NoError(t, err)
	reg := metrics.NewRegistry(metrics.Options{})
	reg.AddEngine(e)
	reg.AddSource("file", metrics.SourceFunc(func() metrics.SourceCounts {
		return metrics.SourceCounts{Records: 1, Lag: []metrics.PartitionLag{{Partition: 1, Lag: 2}}}
	}))
	reg.AddSink("redis:out", metrics.SinkFunc(func() metrics.SinkCounts { return metrics.SinkCounts{Retries: 3, Down: true} }))
	mfs, err := reg.Gatherer().Gather()
	require.NoError(t, err)
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	for name := range perQuery {
		assert.True(t, names[name], name)
	}
	for _, name := range []string{"saber_watermark", "saber_event_time_lag_seconds", "saber_source_records_total", "saber_source_lag_records", "saber_sink_retries_total", "saber_sink_down"} {
		assert.True(t, names[name], name)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	require.NoError(t, err)
	assert.Empty(t, problems)
}

// TestSinkCounters: an output's retries and outage are read at each scrape,
// under its name, and a sink added again under its name replaces the first.
func TestSinkCounters(t *testing.T) {
	reg := metrics.NewRegistry(metrics.Options{})
	var retries atomic.Uint64
	var down atomic.Bool
	reg.AddSink("stale", metrics.SinkFunc(func() metrics.SinkCounts { return metrics.SinkCounts{Retries: 99} }))
	reg.AddSink("stale", metrics.SinkFunc(func() metrics.SinkCounts { return metrics.SinkCounts{} }))
	reg.AddSink("redis:out", metrics.SinkFunc(func() metrics.SinkCounts {
		return metrics.SinkCounts{Retries: retries.Load(), Down: down.Load()}
	}))
	read := func() map[string][2]float64 {
		mfs, err := reg.Gatherer().Gather()
		require.NoError(t, err)
		out := map[string][2]float64{}
		for _, mf := range mfs {
			for i, name := range []string{"saber_sink_retries_total", "saber_sink_down"} {
				if mf.GetName() != name {
					continue
				}
				for _, m := range mf.GetMetric() {
					v := out[m.GetLabel()[0].GetValue()]
					if i == 0 {
						v[i] = m.GetCounter().GetValue()
					} else {
						v[i] = m.GetGauge().GetValue()
					}
					out[m.GetLabel()[0].GetValue()] = v
				}
			}
		}
		return out
	}
	assert.Equal(t, map[string][2]float64{"stale": {0, 0}, "redis:out": {0, 0}}, read())
	retries.Store(7)
	down.Store(true)
	assert.Equal(t, map[string][2]float64{"stale": {0, 0}, "redis:out": {7, 1}}, read())
	down.Store(false)
	assert.Equal(t, map[string][2]float64{"stale": {0, 0}, "redis:out": {7, 0}}, read())
}

// TestNoWatermarkBeforeTheFirstTuple: an idle query has no watermark, nor a
// lag, rather than one of -2^63.
func TestNoWatermarkBeforeTheFirstTuple(t *testing.T) {
	agg, _ := testQueries(t)
	e, err := engine.Start(engine.Config{Workers: 1, TaskSize: tupleSize * 64, BufferSize: 1 << 13}, []engine.Spec{{Query: agg}})
	require.NoError(t, err)
	defer e.CloseAll()
	reg := metrics.NewRegistry(metrics.Options{})
	reg.AddEngine(e)
	mfs, err := reg.Gatherer().Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		assert.NotEqual(t, "saber_watermark", mf.GetName())
		assert.NotEqual(t, "saber_event_time_lag_seconds", mf.GetName())
	}
}

// TestServeBadAddress: an address Serve cannot listen on is its error, at
// once, naming the address.
func TestServeBadAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	reg := metrics.NewRegistry(metrics.Options{})
	for _, addr := range []string{ln.Addr().String(), "127.0.0.1:notaport", "127.0.0.1:99999"} {
		srv, err := metrics.Serve(addr, reg)
		if !assert.Error(t, err, addr) {
			srv.Close()
			continue
		}
		assert.Contains(t, err.Error(), fmt.Sprintf("%q", addr))
	}
}

// TestIndexPage: / links to /metrics; other paths are not found.
func TestIndexPage(t *testing.T) {
	base := runtime.NumGoroutine()
	srv, err := metrics.Serve("127.0.0.1:0", metrics.NewRegistry(metrics.Options{}))
	require.NoError(t, err)
	client := &http.Client{Transport: &http.Transport{}}
	resp, err := client.Get("http://" + srv.Addr() + "/")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), `href="/metrics"`)
	resp, err = client.Get("http://" + srv.Addr() + "/nope")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	client.CloseIdleConnections()
	require.NoError(t, srv.Close())
	assertNoLeak(t, base)
}

// assertNoLeak waits (on a busy machine, up to seconds) for the goroutines
// to fall back to base; failing, it prints their stacks.
func assertNoLeak(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base {
		var stacks strings.Builder
		pprof.Lookup("goroutine").WriteTo(&stacks, 1)
		t.Errorf("%d goroutines left behind:\n%s", n-base, stacks.String())
	}
}

// gathered gathers reg (failing on an error: a collision of series) into
// name -> family.
func gathered(t *testing.T, reg *metrics.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gatherer().Gather()
	require.NoError(t, err, "the scrape")
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// TestRegistryAcrossRuns: one registry (a long-lived process's /metrics)
// over run after run. An engine whose run is over is removed, and the next
// run's engine with the same query names is served; one not removed is
// replaced by the next, as AddSource and AddSink replace by name, and
// AddEngine says which queries it replaced, so that the caller reports
// the collision: every scrape failed on the duplicate series. A remove
// takes out only what it added, not what replaced it.
func TestRegistryAcrossRuns(t *testing.T) {
	agg, sel := testQueries(t)
	runOnce := func(tuples int) *engine.Engine {
		e, err := engine.Start(engine.Config{Workers: 1, TaskSize: tupleSize * 64, BufferSize: 1 << 13}, []engine.Spec{{Query: agg}, {Query: sel}})
		require.NoError(t, err)
		require.NoError(t, e.Stream(0).Write(testData(tuples)))
		_, err = e.CloseAll()
		require.NoError(t, err)
		return e
	}
	reg := metrics.NewRegistry(metrics.Options{})
	e1 := runOnce(10)
	remove1, replaced := reg.AddEngine(e1)
	assert.Empty(t, replaced)
	mfs := gathered(t, reg)
	v, _ := value(mfs, "saber_records_in_total", "query", "agg")
	assert.Equal(t, 10.0, v)

	remove1() // the first run is over
	_, ok := gathered(t, reg)["saber_records_in_total"]
	assert.False(t, ok, "a removed engine's series")
	remove2, replaced := reg.AddEngine(runOnce(20))
	assert.Empty(t, replaced)
	v, _ = value(gathered(t, reg), "saber_records_in_total", "query", "agg")
	assert.Equal(t, 20.0, v, "the second run's")

	// A third not removed before the fourth: replaced, and said.
	_, replaced = reg.AddEngine(runOnce(30))
	assert.ElementsMatch(t, []string{"agg", "sel"}, replaced)
	remove4, replaced := reg.AddEngine(runOnce(40))
	assert.ElementsMatch(t, []string{"agg", "sel"}, replaced)
	remove2() // replaced already: takes out nothing of the fourth's
	v, _ = value(gathered(t, reg), "saber_records_in_total", "query", "agg")
	assert.Equal(t, 40.0, v, "the last run's")
	remove4()
	_, ok = gathered(t, reg)["saber_records_in_total"]
	assert.False(t, ok)

	// Sources and outputs alike.
	counts := func(n uint64) metrics.SourceFunc {
		return func() metrics.SourceCounts { return metrics.SourceCounts{Records: n} }
	}
	removeA, replacedA := reg.AddSource("in", counts(1))
	_, replacedB := reg.AddSource("in", counts(2))
	assert.False(t, replacedA)
	assert.True(t, replacedB)
	removeA()
	v, _ = value(gathered(t, reg), "saber_source_records_total", "source", "in")
	assert.Equal(t, 2.0, v, "the source that replaced the removed one's")
	removeS, replacedS := reg.AddSink("out", metrics.SinkFunc(func() metrics.SinkCounts { return metrics.SinkCounts{Retries: 3} }))
	assert.False(t, replacedS)
	removeS()
	_, ok = gathered(t, reg)["saber_sink_retries_total"]
	assert.False(t, ok)
}

// TestEventTimeUnitsPerQuery: the event-time lag reads each query's
// watermark in the unit AddEngine was given for it (EventTimeUnits), the
// registry's EventTimeUnit where none (0, or past the slice).
func TestEventTimeUnitsPerQuery(t *testing.T) {
	agg, sel := testQueries(t)
	e, err := engine.Start(engine.Config{Workers: 1, TaskSize: tupleSize * 64, BufferSize: 1 << 13}, []engine.Spec{{Query: agg}, {Query: sel}})
	require.NoError(t, err)
	require.NoError(t, e.Stream(0).Write(testData(100)))
	require.NoError(t, e.Stream(1).Write(testData(100)))
	_, err = e.CloseAll()
	require.NoError(t, err)
	now := time.Unix(1000, 0)
	for _, units := range [][]time.Duration{nil, {time.Second}, {time.Microsecond, time.Second}, {0, time.Second}} {
		reg := metrics.NewRegistry(metrics.Options{Now: func() time.Time { return now }})
		reg.AddEngine(e, metrics.EventTimeUnits(units))
		mfs := gathered(t, reg)
		for i, q := range []string{"agg", "sel"} {
			unit := time.Millisecond // the registry's default
			if i < len(units) && units[i] > 0 {
				unit = units[i]
			}
			wm, ok := value(mfs, "saber_watermark", "query", q)
			require.True(t, ok)
			require.Positive(t, wm)
			lag, ok := value(mfs, "saber_event_time_lag_seconds", "query", q)
			require.True(t, ok)
			assert.InDelta(t, 1000-wm*unit.Seconds(), lag, 1e-9, "query %s, units %v", q, units)
		}
	}
}
