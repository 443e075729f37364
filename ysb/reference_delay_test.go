package ysb

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// views builds view tuples of ad 0 of g at the given times.
func views(g *Generator, times ...int64) []byte {
	buf := make([]byte, len(times)*TupleSize)
	for i, ts := range times {
		p := buf[i*TupleSize : (i+1)*TupleSize]
		g.Fill(p, 0) // tuple 0: ad 0, a view
		binary.LittleEndian.PutUint64(p[OffEventTime:], uint64(ts))
	}
	return buf
}

// TestReferenceDelay: a tuple of window [0, 10) after the watermark 25 is
// late with a delay up to 15 (25-15 >= 10), counted with 16.
func TestReferenceDelay(t *testing.T) {
	g, err := NewGenerator(GenConfig{Campaigns: 1, AdsPerCampaign: 1, Seed: 1, TuplesPerMs: 1})
	require.NoError(t, err)
	c := g.Campaigns()
	ev := views(g, 5, 25, 8)
	for _, tc := range []struct {
		delay       int64
		late, count int64
	}{{0, 1, 1}, {15, 1, 1}, {16, 0, 2}, {1 << 62, 0, 2}} {
		rows, counts, err := ReferenceDelay(ev, c, 10, tc.delay)
		require.NoError(t, err)
		assert.Equal(t, uint64(tc.late), counts.Late, "delay %d", tc.delay)
		assert.Equal(t, tc.count, rows[0].Count, "delay %d", tc.delay)
		assert.Equal(t, int64(0), rows[0].WindowStart)
	}
	_, _, err = ReferenceDelay(ev, c, 10, -1)
	assert.ErrorContains(t, err, "watermark delay -1")

	// Near the int64 range: end + delay would overflow; still exact.
	ev = views(g, 100, maxInt64-5, 105)
	_, counts, err := ReferenceDelay(ev, c, 10, maxInt64)
	require.NoError(t, err)
	assert.Equal(t, uint64(0), counts.Late)
	_, counts, err = ReferenceDelay(ev, c, 10, 0)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), counts.Late)
}

// TestReferenceDelayZero: delay 0 is Reference on shuffled streams, and a
// larger delay never counts more tuples late.
func TestReferenceDelayZero(t *testing.T) {
	g, err := NewGenerator(GenConfig{Campaigns: 5, AdsPerCampaign: 3, Seed: 2, TuplesPerMs: 3})
	require.NoError(t, err)
	c := g.Campaigns()
	r := rand.New(rand.NewPCG(5, 6))
	ev := make([]byte, 3000*TupleSize)
	g.Fill(ev, 0)
	shuffleNear(r, ev, 200)
	want, wantC, err := Reference(ev, c, 100)
	require.NoError(t, err)
	got, gotC, err := ReferenceDelay(ev, c, 100, 0)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.Equal(t, wantC, gotC)
	require.NotZero(t, wantC.Late)
	prev := wantC.Late
	for _, d := range []int64{10, 100, 1000} {
		_, cd, err := ReferenceDelay(ev, c, 100, d)
		require.NoError(t, err)
		assert.LessOrEqual(t, cd.Late, prev)
		assert.Equal(t, cd.Tuples, cd.Filtered+cd.Unmatched+cd.Late+cd.Counted)
		prev = cd.Late
	}
	assert.Zero(t, prev, "a delay past the disorder counts nothing late")
}

// shuffleNear swaps each tuple with one up to span tuples later.
func shuffleNear(r *rand.Rand, ev []byte, span int) {
	n := len(ev) / TupleSize
	var tmp [TupleSize]byte
	for i := 0; i < n; i++ {
		j := min(n-1, i+r.IntN(span))
		a, b := ev[i*TupleSize:(i+1)*TupleSize], ev[j*TupleSize:(j+1)*TupleSize]
		copy(tmp[:], a)
		copy(a, b)
		copy(b, tmp[:])
	}
}
