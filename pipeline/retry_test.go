package pipeline

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestSinkRetryBudget: Options.SinkRetryTimeout as the outputs take it:
// 0 is the default, negative no retry, and a flush is bounded by the
// budget plus one write's time.
func TestSinkRetryBudget(t *testing.T) {
	for _, c := range []struct{ option, budget time.Duration }{
		{0, DefaultSinkRetryTimeout}, {-1, 0}, {5 * time.Second, 5 * time.Second},
	} {
		j := &Job{log: io.Discard, opts: Options{SinkRetryTimeout: c.option}}
		s := j.sinkRetry()
		assert.Equal(t, c.budget, s.timeout, "SinkRetryTimeout %v", c.option)
		assert.Equal(t, flushTimeout+c.budget, s.flushBound())
	}
}
