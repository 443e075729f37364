package kafka

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/source"
)

// TestIdleCountsFromLastRecords: partitions that went quiet at once turn
// idle together, IdleTimeout after their last records, however late the
// merge came to wait on each; one that never had records, IdleTimeout
// after the merge first waited on it.
func TestIdleCountsFromLastRecords(t *testing.T) {
	s, err := newSource(Config{Brokers: []string{"127.0.0.1:1"}, Topic: "t", Decoder: jsonDecoder(t, source.Fail), IdleTimeout: time.Second})
	require.NoError(t, err)
	for id := range int32(3) {
		s.assign(id, 0)
	}
	t0 := time.Unix(1000, 0)
	s.parts[0].lastRecords, s.parts[1].lastRecords = t0, t0 // partition 2 never had any
	for _, p := range s.parts {
		s.refresh(p)
	}
	require.Equal(t, 3, s.waiting)

	// The merge drained partitions 0 and 1 only 3 s after their last
	// records: they are idle at once; partition 2 starts its wait now.
	now := t0.Add(3 * time.Second)
	deadline, ok := s.idleDeadline(now)
	assert.True(t, s.parts[0].idle)
	assert.True(t, s.parts[1].idle)
	assert.False(t, s.parts[2].idle)
	assert.True(t, ok)
	assert.Equal(t, now.Add(time.Second), deadline, "partition 2: IdleTimeout after the merge first waited on it")
	assert.Equal(t, 1, s.waiting)

	_, _ = s.idleDeadline(now.Add(time.Second))
	assert.True(t, s.parts[2].idle)
	assert.Equal(t, 0, s.waiting)
}

// TestMarksStayBounded: marks that Done has used are dropped even while
// newer ones stay pending (a windowed run), so the queue does not grow
// with the run.
func TestMarksStayBounded(t *testing.T) {
	s, err := newSource(Config{Brokers: []string{"127.0.0.1:1"}, Topic: "t", Group: "g", Decoder: jsonDecoder(t, source.Fail)})
	require.NoError(t, err)
	s.assign(0, 0)
	p := s.parts[0]
	for i := range 100000 {
		p.emitPos, p.emitOff, p.runMax = uint64(i+1)*testTS, int64(i), int64(i)
		p.touched = true
		s.touched = append(s.touched, 0)
		s.pushMarks()
		s.Done(uint64(i+1)*testTS, int64(i)-10) // the last ten pending
	}
	assert.Less(t, cap(p.marks), 1024, "marks used are dropped")
	assert.Equal(t, int64(100000-11), p.done, "the offset after the done prefix: records whose time is below complete")
}
