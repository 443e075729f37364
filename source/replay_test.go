package source

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// periodGen is a plain generator: tuple k has event time k/rate (the int64
// at byte 0) and, after it, bytes that are a function of k mod period and
// their position, so that its first n tuples (a multiple of period and of
// rate) replayed with a span of n/rate ms per pass are its sequence.
type periodGen struct {
	ts           int
	period, rate uint64
}

func (g periodGen) tuple(dst []byte, k uint64) {
	binary.LittleEndian.PutUint64(dst, k/g.rate)
	p := k % g.period
	for i := 8; i < g.ts; i++ {
		dst[i] = byte(p*31 + uint64(i)*7 + p>>8)
	}
}

func (g periodGen) Fill(dst []byte, k0 uint64) {
	for off := 0; off < len(dst); off += g.ts {
		g.tuple(dst[off:off+g.ts], k0)
		k0++
	}
}

// TestReplayIsTheGenerator: filling any range of the replayed stream gives
// the bytes the generator gives there directly, across several passes of
// the bundle, for 32-, 64- and 128-byte tuples, with the portable copy and
// with a copy supplied by the caller, through Fill and FillAt.
func TestReplayIsTheGenerator(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, ts := range []int{32, 64, 128} {
		for _, c := range []struct{ period, rate, periods uint64 }{{1, 1, 1}, {15, 5, 1}, {15, 5, 3}, {60, 4, 7}, {3000, 10, 2}} {
			g := periodGen{ts: ts, period: c.period, rate: c.rate}
			n := c.period * c.periods
			for _, hook := range []string{"portable", "caller"} {
				name := fmt.Sprintf("%dB/period%d/rate%d/x%d/%s", ts, c.period, c.rate, c.periods, hook)
				t.Run(name, func(t *testing.T) {
					var calls int
					var cs CopyShiftFunc
					if hook == "caller" {
						cs = func(dst, src []byte, shift int64) {
							calls++
							naiveCopyShift(dst, src, ts, shift)
						}
					}
					r, err := NewReplay(g, ts, n, int64(n/c.rate), cs)
					require.NoError(t, err)
					require.Equal(t, n, r.Tuples())
					require.Len(t, r.Bundle(), int(n)*ts)

					total := 4*n + 3 // several passes, ending inside one (or n=1: 7)
					want := make([]byte, int(total)*ts)
					g.Fill(want, 0)
					got := make([]byte, len(want))
					r.Fill(got, 0)
					require.Equal(t, want, got, "the whole stream")
					if hook == "caller" {
						assert.Equal(t, int((total+n-1)/n), calls, "one copy per pass of the bundle, never per tuple")
					}
					for range 40 {
						a := rng.Uint64N(total)
						b := a + rng.Uint64N(total-a+1)
						part := make([]byte, int(b-a)*ts)
						if rng.IntN(2) == 0 {
							r.Fill(part, a)
						} else {
							r.FillAt(part, a*uint64(ts))
						}
						require.Equal(t, want[int(a)*ts:int(b)*ts], part, "tuples [%d, %d)", a, b)
					}
					// Far into the stream: the event time keeps advancing.
					k := uint64(1_000_003) * n
					one := make([]byte, ts)
					r.Fill(one, k+1)
					wantOne := make([]byte, ts)
					g.Fill(wantOne, k+1)
					require.Equal(t, wantOne, one, "tuple %d", k+1)
				})
			}
		}
	}
}

// TestReplayPartialTuple: a trailing partial tuple of the destination is
// left as it was.
func TestReplayPartialTuple(t *testing.T) {
	g := periodGen{ts: 32, period: 6, rate: 2}
	r, err := NewReplay(g, 32, 6, 3, nil)
	require.NoError(t, err)
	got := make([]byte, 9*32+5)
	for i := range got {
		got[i] = 0xA5
	}
	r.Fill(got, 4)
	want := make([]byte, 9*32)
	g.Fill(want, 4)
	assert.Equal(t, want, got[:9*32])
	assert.Equal(t, []byte{0xA5, 0xA5, 0xA5, 0xA5, 0xA5}, got[9*32:])
}

// TestReplayFillAllocatesNothing: the ingestion copy allocates nothing.
func TestReplayFillAllocatesNothing(t *testing.T) {
	g := periodGen{ts: 64, period: 60, rate: 4}
	r, err := NewReplay(g, 64, 600, 150, nil)
	require.NoError(t, err)
	b := make([]byte, 1000*64)
	k := uint64(0)
	allocs := testing.AllocsPerRun(100, func() {
		r.Fill(b, k)
		k += 1000
	})
	assert.Zero(t, allocs)
}

func TestNewReplayErrors(t *testing.T) {
	g := periodGen{ts: 32, period: 1, rate: 1}
	_, err := NewReplay(g, 4, 1, 1, nil)
	assert.ErrorContains(t, err, "tuple size 4")
	_, err = NewReplay(g, 32, 0, 1, nil)
	assert.ErrorContains(t, err, "empty bundle")
	_, err = NewReplay(g, 32, 1, -1, nil)
	assert.ErrorContains(t, err, "span -1")
}

func TestBundleTuples(t *testing.T) {
	assert.Equal(t, uint64(3000), BundleTuples(1, 128, 3000), "at least one period")
	assert.Equal(t, uint64(3000), BundleTuples(-1, 128, 3000), "at least one period")
	assert.Equal(t, uint64(3000*43), BundleTuples(16<<20, 128, 3000))
	assert.Equal(t, uint64(16<<20/32), BundleTuples(16<<20, 32, 1))
	assert.Equal(t, uint64(14), BundleTuples(15*32, 32, 7))
}

// naiveCopyShift is CopyShift's oracle: tuple by tuple.
func naiveCopyShift(dst, src []byte, ts int, shift int64) {
	for t := 0; t+ts <= len(src); t += ts {
		copy(dst[t:t+ts], src[t:t+ts])
		et := int64(binary.LittleEndian.Uint64(dst[t:])) + shift
		binary.LittleEndian.PutUint64(dst[t:], uint64(et))
	}
}
