package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestLatencyQuantiles(t *testing.T) {
	var h latencyHist
	assert.Zero(t, h.quantile(0.5))
	for range 98 {
		h.record(3 * time.Microsecond)
	}
	h.record(5 * time.Millisecond)
	h.record(6 * time.Millisecond)
	p50, p99 := h.quantile(0.5), h.quantile(0.99)
	assert.True(t, p50 >= 3*time.Microsecond && p50 < 6*time.Microsecond, "p50 %v", p50)
	assert.True(t, p99 >= 5*time.Millisecond && p99 < 12*time.Millisecond, "p99 %v", p99)
	h.reset()
	assert.Zero(t, h.quantile(0.99))
	assert.Zero(t, testing.AllocsPerRun(100, func() { h.record(time.Millisecond) }))
}
