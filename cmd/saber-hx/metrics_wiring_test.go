package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/kafkatest"
	"github.com/saber-hx/saber-hx/internal/redistest"
)

// lockedBuffer is a stderr the test reads while the command writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// printedURL waits for the metrics URL a command prints on stderr.
func printedURL(t *testing.T, stderr *lockedBuffer) (url string) {
	t.Helper()
	require.Eventually(t, func() bool {
		s := stderr.String()
		i := strings.Index(s, "http://")
		if i >= 0 {
			url = strings.Fields(s[i:])[0]
		}
		return i >= 0
	}, 20*time.Second, 10*time.Millisecond, "a URL on stderr")
	return url
}

// scrapeUntil scrapes url until its text holds want, and returns it.
func scrapeUntil(t *testing.T, client *http.Client, url, want string) (body string) {
	t.Helper()
	require.Eventually(t, func() bool {
		resp, err := client.Get(url)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return strings.Contains(body, want)
	}, 20*time.Second, 20*time.Millisecond, "%q at %s", want, url)
	return body
}

// TestMetricsAddrServesEveryCommand: ysb, bench and run with
// --metrics-addr serve their engine's counters while they run (scraped at
// the URL printed on stderr), and the server is gone once they return.
func TestMetricsAddrServesEveryCommand(t *testing.T) {
	t.Parallel()
	for name, args := range map[string][]string{
		// Each runs until the scrape has seen its series, then is
		// interrupted: a fixed duration either ended before a scrape on a
		// loaded machine or spent seconds of CPU; run's are served while
		// its job is open (Job.Close takes them out of the registry).
		"ysb":   {"ysb", "--duration", "60s", "--warmup", "0s", "--workers", "1", "--bundle-size", "1048576"},
		"bench": {"bench", "groupby", "--duration", "60s", "--workers", "1", "--bundle-size", "1048576"},
		"run":   {"run", "../../examples/groupby.sql", "--output", "/dev/null", "--duration", "60s", "--workers", "1"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := startCLI(t, nil, append(args, "--metrics-addr", "127.0.0.1:0")...)
			url := urlPattern.FindString(p.waitLine(t, urlPattern, 20*time.Second))
			client := &http.Client{Transport: &http.Transport{}}
			defer client.CloseIdleConnections()
			body := scrapeUntil(t, client, url, "saber_records_in_total{")
			assert.Contains(t, body, "saber_task_latency_seconds_bucket")
			require.NoError(t, p.cmd.Process.Signal(syscall.SIGINT))
			select {
			case <-p.done:
			case <-time.After(20 * time.Second):
				t.Fatalf("still running 20 s after SIGINT:\n%s", p.log())
			}
			assert.Equal(t, 130, p.cmd.ProcessState.ExitCode(), p.log())
			_, err := client.Get(url)
			assert.Error(t, err, "the server stops with the command")
		})
	}
}

// urlPattern is the metrics URL a command prints on stderr.
var urlPattern = regexp.MustCompile(`http://\S+`)

// metrics waits for the process's line that gives its --metrics-addr
// URL, and returns the URL and a client for it (closed when t ends).
func (p *cliProcess) metrics(t *testing.T) (*http.Client, string) {
	t.Helper()
	url := urlPattern.FindString(p.waitLine(t, urlPattern, time.Minute))
	client := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(client.CloseIdleConnections)
	return client, url
}

// TestMetricsAddrYSBKafka: the original pipeline's run serves its Kafka
// source's counters (records, per-partition lag) and its Redis output's
// outages beside the engine's, also when it runs through run's machinery
// (--checkpoint-dir), where the query and the output are the SQL sink's.
func TestMetricsAddrYSBKafka(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, query string
		extra       []string
	}{
		// One program for both (examples/ysb_kafka.sql's): its source
		// events, its sink ysb_redis.
		{"plain", "ysb_redis", nil},
		{"checkpointed", "ysb_redis", []string{"--checkpoint-dir", "CKPT", "--group", "metrics"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rs := redistest.Start(t)
			k := kafkatest.Start(t, 2)
			code, _, errs := cli(t, "ysb", "setup", "--redis", rs.Addr, "--num-campaigns", "5", "--ads-per-campaign", "2")
			require.Equal(t, 0, code, errs)
			code, out, errs := cli(t, "ysb", "produce", "--brokers", k.Addr, "--topic", "ad-events", "--rate", "2000", "--duration", "500ms",
				"--partitions", "2", "--num-campaigns", "5", "--ads-per-campaign", "2")
			require.Equal(t, 0, code, errs)
			var produced int
			_, err := fmt.Sscanf(out[strings.Index(out, "produce done: "):], "produce done: %d events", &produced)
			require.NoError(t, err, out)
			args := []string{"ysb", "--source", "kafka", "--brokers", k.Addr, "--topic", "ad-events", "--redis", rs.Addr,
				"--duration", "2s", "--workers", "1", "--metrics-addr", "127.0.0.1:0"}
			for _, a := range tc.extra {
				if a == "CKPT" {
					a = t.TempDir()
				}
				args = append(args, a)
			}
			var stderr lockedBuffer
			done := make(chan int, 1)
			go func() { done <- run(args, io.Discard, &stderr) }()
			url := printedURL(t, &stderr)
			client := &http.Client{Transport: &http.Transport{}}
			defer client.CloseIdleConnections()
			body := scrapeUntil(t, client, url, fmt.Sprintf("saber_source_records_total{source=\"events\"} %d\n", produced))
			assert.Contains(t, body, `saber_source_lag_records{partition="0",source="events"} 0`)
			assert.Contains(t, body, `saber_records_in_total{query="`+tc.query+`"}`)
			assert.Contains(t, body, `saber_sink_retries_total{sink="`+tc.query+`"} 0`)
			assert.Contains(t, body, `saber_sink_down{sink="`+tc.query+`"} 0`)
			assert.Equal(t, 0, <-done, stderr.String())
		})
	}
}
