package main

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// TestMetricsAddrServesEveryCommand: ysb, bench and run with
// --metrics-addr serve their engine's counters while they run (scraped at
// the URL printed on stderr), and the server is gone once they return.
func TestMetricsAddrServesEveryCommand(t *testing.T) {
	for name, args := range map[string][]string{
		"ysb":   {"ysb", "--duration", "2s", "--warmup", "0s", "--workers", "1"},
		"bench": {"bench", "groupby", "--duration", "2s", "--workers", "1"},
		"run":   {"run", "../../examples/groupby.sql", "--output", "/dev/null", "--duration", "2s", "--workers", "1"},
	} {
		t.Run(name, func(t *testing.T) {
			var stderr lockedBuffer
			code := make(chan int, 1)
			go func() { code <- run(append(args, "--metrics-addr", "127.0.0.1:0"), io.Discard, &stderr) }()
			var url string
			require.Eventually(t, func() bool {
				s := stderr.String()
				i := strings.Index(s, "http://")
				if i < 0 {
					return false
				}
				url = strings.Fields(s[i:])[0]
				return true
			}, 20*time.Second, 10*time.Millisecond, "a URL on stderr")
			client := &http.Client{Transport: &http.Transport{}}
			defer client.CloseIdleConnections()
			var body string
			require.Eventually(t, func() bool {
				resp, err := client.Get(url)
				if err != nil {
					return false
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				body = string(b)
				return strings.Contains(body, "saber_records_in_total{")
			}, 20*time.Second, 20*time.Millisecond, "the engine's counters at %s", url)
			assert.Contains(t, body, "saber_task_latency_seconds_bucket")
			assert.Equal(t, 0, <-code, stderr.String())
			_, err := client.Get(url)
			assert.Error(t, err, "the server stops with the command")
		})
	}
}
