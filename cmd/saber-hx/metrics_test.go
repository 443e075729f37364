package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/query"
)

func TestMetricsFlag(t *testing.T) {
	t.Parallel()
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	addr := addMetricsFlag(fs)
	require.NoError(t, fs.Parse(nil))
	assert.Empty(t, *addr, "off by default")
	require.NoError(t, fs.Parse([]string{"--metrics-addr", "127.0.0.1:9464"}))
	assert.Equal(t, "127.0.0.1:9464", *addr)
	assert.Contains(t, fs.Lookup("metrics-addr").Usage, "Prometheus")
}

// metricsQuery is a tumbling count over 16-byte tuples (event time, value)
// with a WHERE, and input of n tuples for it.
func metricsQuery(t *testing.T, n int) (*query.Query, []byte) {
	s, err := query.NewSchema(16, query.Attribute{Name: "ts", Type: query.Int64, Offset: 0},
		query.Attribute{Name: "v", Type: query.Int64, Offset: 8})
	require.NoError(t, err)
	q := &query.Query{Name: "counts", Schema: s, Window: query.Tumbling(100),
		Where: query.Cmp(query.C("v"), query.Ne, query.Int(0)), Aggregates: []query.Aggregate{{Func: query.Count}}}
	data := make([]byte, 16*n)
	for i := range n {
		binary.LittleEndian.PutUint64(data[16*i:], uint64(i/4))
		binary.LittleEndian.PutUint64(data[16*i+8:], uint64(i%3))
	}
	return q, data
}

func scrapeCounters(t *testing.T, c *http.Client, url string) map[string]float64 {
	t.Helper()
	resp, err := c.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	got := map[string]float64{}
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) != 1 || m.GetLabel()[0].GetValue() != "counts" {
				continue
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				got[name] = m.GetCounter().GetValue()
			case dto.MetricType_HISTOGRAM:
				got[name] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return got
}

// TestStartMetricsScrapesARun: startMetrics serves a running engine at the
// URL it prints; the counters scraped after CloseAll are the summary's
// Stats; stop leaves no goroutine. Not parallel: it counts the
// process's goroutines, which the parallel tests' servers and clients
// would move (they wait, paused, while it runs).
func TestStartMetricsScrapesARun(t *testing.T) {
	base := runtime.NumGoroutine()
	q, data := metricsQuery(t, 200000)
	eng, err := engine.Start(engine.Config{Workers: 2, TaskSize: 16 * 128, BufferSize: 1 << 14}, []engine.Spec{{Query: q,
		Windows: func(*engine.Window) error { return nil }}})
	require.NoError(t, err)
	var stderr bytes.Buffer
	stop, err := startMetrics("127.0.0.1:0", eng, &stderr)
	require.NoError(t, err)
	line := stderr.String()
	require.Equal(t, 1, strings.Count(line, "\n"), "one line: %q", line)
	i := strings.Index(line, "http://")
	require.GreaterOrEqual(t, i, 0, "a URL: %q", line)
	url := strings.TrimSpace(line[i:])
	require.True(t, strings.HasSuffix(url, "/metrics"), url)

	client := &http.Client{Transport: &http.Transport{}}
	done := make(chan error, 1)
	go func() { done <- eng.Stream(0).Write(data) }()
	var last map[string]float64
	for running := true; running; {
		select {
		case err := <-done:
			require.NoError(t, err)
			running = false
		default:
			got := scrapeCounters(t, client, url)
			assert.GreaterOrEqual(t, got["saber_records_in_total"], last["saber_records_in_total"])
			last = got
		}
	}
	stats, err := eng.CloseAll()
	require.NoError(t, err)
	got := scrapeCounters(t, client, url)
	st := stats[0]
	assert.Equal(t, map[string]float64{
		"saber_records_in_total": float64(st.Tuples), "saber_bytes_in_total": float64(st.Bytes),
		"saber_records_filtered_total": float64(st.Filtered), "saber_records_late_total": float64(st.Late),
		"saber_records_unmatched_total": float64(st.Unmatched), "saber_records_counted_total": float64(st.Counted),
		"saber_records_out_total": float64(st.Rows), "saber_windows_out_total": float64(st.Windows),
		"saber_tasks_total": float64(st.Tasks), "saber_task_latency_seconds": float64(st.Tasks),
		"saber_gpu_fallback_tasks_total":   0,
		"saber_backpressure_seconds_total": got["saber_backpressure_seconds_total"],
		"saber_backpressure_waits_total":   got["saber_backpressure_waits_total"],
		"saber_serial_seconds_total":       st.SerialTime.Seconds(),
		"saber_worker_seconds_total":       st.WorkerTime.Seconds(),
	}, got)
	assert.Equal(t, float64(len(data)/16), got["saber_records_in_total"])
	assert.Positive(t, got["saber_records_filtered_total"])

	client.CloseIdleConnections()
	stop()
	_, err = client.Get(url)
	assert.Error(t, err, "stopped")
	client.CloseIdleConnections()
	deadline := time.Now().Add(10 * time.Second) // a busy machine
	for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base {
		var stacks strings.Builder
		pprof.Lookup("goroutine").WriteTo(&stacks, 1)
		t.Errorf("%d goroutines left behind:\n%s", n-base, stacks.String())
	}
}

// idleEngine starts an engine of metricsQuery's query with no input, on
// one worker; it is closed when t ends.
func idleEngine(t *testing.T) *engine.Engine {
	q, _ := metricsQuery(t, 0)
	eng, err := engine.Start(engine.Config{Workers: 1, TaskSize: 16 * 128, BufferSize: 1 << 14}, []engine.Spec{{Query: q}})
	require.NoError(t, err)
	t.Cleanup(func() { eng.CloseAll() })
	return eng
}

func TestStartMetricsOffAndBadAddresses(t *testing.T) {
	t.Parallel()
	eng := idleEngine(t)

	var stderr bytes.Buffer
	stop, err := startMetrics("", eng, &stderr)
	require.NoError(t, err)
	stop()
	assert.Empty(t, stderr.String(), "off: nothing said")

	_, err = startMetrics("9464", eng, io.Discard)
	var ue usageError
	require.True(t, errors.As(err, &ue), "not host:port is a usage error: %v", err)
	assert.Contains(t, err.Error(), `"9464"`)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	_, err = startMetrics(ln.Addr().String(), eng, io.Discard)
	require.Error(t, err)
	assert.False(t, errors.As(err, &ue), "an address in use is a run failure")
	assert.Contains(t, err.Error(), ln.Addr().String())
}

// startMetrics is serveMetrics with a stop function (nothing to stop
// with addr empty).
func startMetrics(addr string, eng *engine.Engine, stderr io.Writer) (stop func(), err error) {
	srv, err := serveMetrics(addr, eng, stderr)
	if err != nil || srv == nil {
		return func() {}, err
	}
	return func() {
		if err := srv.Close(); err != nil {
			fmt.Fprintf(stderr, "saber-hx: warning: %v\n", err)
		}
	}, nil
}
