package pipeline

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/source/kafka"
)

func TestCheckpointPayloadRoundTrip(t *testing.T) {
	st := &ckptState{epoch: 9, source: "events", topic: "t", positions: map[int32]kafka.Position{0: {Offset: 5}, 3: {Offset: 7, Skip: 2}}, engine: []byte("engine")}
	got, err := decodeCkpt(encodeCkpt(nil, st))
	require.NoError(t, err)
	assert.Equal(t, st, got)
	b := encodeCkpt(nil, st)
	for n := range len(b) - len("engine") {
		_, err := decodeCkpt(b[:n])
		assert.Error(t, err, "truncated to %d", n)
	}
}

// FuzzCheckpointPayload: decodeCkpt never panics on any bytes, and what
// it accepts encodes to bytes that decode to the same state.
func FuzzCheckpointPayload(f *testing.F) {
	f.Add(encodeCkpt(nil, &ckptState{epoch: 1, source: "s", topic: "t", positions: map[int32]kafka.Position{1: {Offset: 2}}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := decodeCkpt(b)
		if err != nil {
			return
		}
		again, err := decodeCkpt(encodeCkpt(nil, st))
		require.NoError(t, err)
		if len(st.engine) == 0 {
			st.engine = nil
		}
		if len(again.engine) == 0 {
			again.engine = nil
		}
		require.Equal(t, st, again)
	})
}
