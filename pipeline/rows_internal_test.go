package pipeline

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
)

// TestEncodeValueRealRoundsOnce: an integer appended to a REAL column is
// rounded to the float32 once, as CAST(i AS REAL): 2^60 + 2^36 + 1, just
// above the tie of 2^60 and 2^60 + 2^37, rounds up (through a float64, the
// tie, it rounded to 2^60); a float64 and a float32 are kept as they are.
func TestEncodeValueRealRoundsOnce(t *testing.T) {
	real := query.Attribute{Type: query.Float32, Size: 4}
	for _, c := range []struct {
		v    any
		want float32
	}{
		{int64(1<<60 + 1<<36 + 1), float32(1<<60 + 1<<37)},
		{int64(1<<60 + 1<<36), float32(1 << 60)},
		{int32(16777217), float32(16777216)},
		{0.1, float32(0.1)},
		{float32(0.3), float32(0.3)},
	} {
		tup := make([]byte, 4)
		require.NoError(t, encodeValue(tup, real, c.v, nil), "%v", c.v)
		assert.Equal(t, c.want, math.Float32frombits(binary.LittleEndian.Uint32(tup)), "%T %v", c.v, c.v)
	}
}
