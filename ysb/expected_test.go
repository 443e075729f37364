package ysb

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var expectedConfigs = []GenConfig{
	DefaultGenConfig(),
	{Campaigns: 7, AdsPerCampaign: 1, Seed: 1, StartMs: 0, TuplesPerMs: 1},     // nAds 7: period 21
	{Campaigns: 4, AdsPerCampaign: 5, Seed: 2, StartMs: -333, TuplesPerMs: 7},  // nAds 20
	{Campaigns: 3, AdsPerCampaign: 11, Seed: 3, StartMs: 1000, TuplesPerMs: 3}, // nAds 33, multiple of 3
	{Campaigns: 1, AdsPerCampaign: 1, Seed: 4, StartMs: 5, TuplesPerMs: 1},     // nAds 1
	{Campaigns: 2, AdsPerCampaign: 1, Seed: 5, StartMs: 0, TuplesPerMs: 10},    // nAds 2: 3 % nAds == 1
	{Campaigns: 5, AdsPerCampaign: 2, Seed: 6, StartMs: 0, TuplesPerMs: 1},     // nAds 10, a campaign can lack views in short ranges
}

// bruteExpected aggregates Fill'ed tuples [k0, k1) directly.
func bruteExpected(g *Generator, k0, k1 uint64) Expected {
	nc := len(g.campaigns)
	e := Expected{Count: make([]int64, nc), MaxEventTime: make([]int64, nc)}
	if k1 <= k0 {
		return e
	}
	campOf := make(map[UUID]int)
	for a, ad := range g.ads {
		campOf[ad] = a / g.cfg.AdsPerCampaign
	}
	buf := make([]byte, (k1-k0)*TupleSize)
	g.Fill(buf, k0)
	le := binary.LittleEndian
	for off := 0; off < len(buf); off += TupleSize {
		p := buf[off:]
		if le.Uint32(p[OffEventType:]) != EventView {
			continue
		}
		c := campOf[UUID(p[OffAdID:OffAdID+16])]
		ts := int64(le.Uint64(p[OffEventTime:]))
		if e.Count[c] == 0 || ts > e.MaxEventTime[c] {
			e.MaxEventTime[c] = ts
		}
		e.Count[c]++
	}
	return e
}

func TestExpectedMatchesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, cfg := range expectedConfigs {
		g := newGen(t, cfg)
		var got Expected
		p := g.period
		for i := range 300 {
			var k0 uint64
			switch i % 3 {
			case 0:
				k0 = r.Uint64N(4 * p)
			case 1:
				k0 = r.Uint64N(1<<40) + 1<<40 // far from zero
			default:
				k0 = uint64(i) // small, including 0, 1, 2
			}
			var n uint64
			switch i % 4 {
			case 0:
				n = r.Uint64N(8) // empty and tiny ranges
			case 1:
				n = r.Uint64N(p + 2) // less than one period
			case 2:
				n = p - 1 + r.Uint64N(3) // around exactly one period
			default:
				n = r.Uint64N(5*p + 1) // several periods
			}
			g.Expected(k0, k0+n, &got)
			want := bruteExpected(g, k0, k0+n)
			require.Equal(t, want, got, "cfg %+v range [%d, %d)", cfg, k0, k0+n)
		}
		// Reversed and empty ranges give all-zero slices of the right length.
		g.Expected(10, 3, &got)
		assert.Equal(t, bruteExpected(g, 0, 0), got)
	}
}

func TestExpectedCostIndependentOfRange(t *testing.T) {
	g := newGen(t, DefaultGenConfig())
	var e Expected
	const k0, k1 = 5, 1 << 62
	start := time.Now()
	g.Expected(k0, k1, &e)
	// A range of 2^62 tuples is only feasible in closed form; a scan would run for years.
	assert.Less(t, time.Since(start), 5*time.Second)
	// Every campaign's last view lies in the last period, so brute force over
	// it gives the maxima of the whole range.
	assert.Equal(t, bruteExpected(g, k1-g.period, k1).MaxEventTime, e.MaxEventTime)
	var total int64
	for _, cnt := range e.Count {
		total += cnt
	}
	// Views are the multiples of 3 in [k0, k1).
	assert.Equal(t, int64((k1-1)/3-(k0-1)/3), total)
}

func TestExpectedReusesSlices(t *testing.T) {
	g := newGen(t, DefaultGenConfig())
	e := Expected{Count: make([]int64, 3, 100), MaxEventTime: make([]int64, 100)}
	e.Count[2] = 99 // stale values must be cleared
	count0 := &e.Count[:1][0]
	allocs := testing.AllocsPerRun(20, func() { g.Expected(12345, 12345+3*g.period+17, &e) })
	assert.Zero(t, allocs)
	assert.Same(t, count0, &e.Count[0])
	assert.Equal(t, bruteExpected(g, 12345, 12345+3*g.period+17), e)
}

func TestTupleRange(t *testing.T) {
	for _, cfg := range expectedConfigs {
		g := newGen(t, cfg)
		const n = 1000
		buf := make([]byte, n*TupleSize)
		g.Fill(buf, 0)
		ts := func(k uint64) int64 { return int64(binary.LittleEndian.Uint64(buf[k*TupleSize:])) }
		for ws := cfg.StartMs - 50; ws < cfg.StartMs+60; ws += 3 {
			for _, wms := range []int64{1, 2, 7, 10} {
				k0, k1 := g.TupleRange(ws, wms)
				require.LessOrEqual(t, k0, k1)
				require.Less(t, k1, uint64(n), "test range too short")
				for k := uint64(0); k < n; k++ {
					// testify only where a tuple is misplaced: its calls, a
					// stack walk each, were most of the test's time.
					if in := ts(k) >= ws && ts(k) < ws+wms; in != (k >= k0 && k < k1) {
						assert.Equal(t, in, k >= k0 && k < k1, "cfg %+v window [%d,+%d) tuple %d ts %d range [%d,%d)", cfg, ws, wms, k, ts(k), k0, k1)
					}
				}
			}
		}
		// Non-positive widths are empty; windows wholly before StartMs are empty at 0.
		k0, k1 := g.TupleRange(cfg.StartMs+5, 0)
		assert.Equal(t, k0, k1)
		k0, k1 = g.TupleRange(cfg.StartMs-100, 50)
		assert.Equal(t, [2]uint64{0, 0}, [2]uint64{k0, k1})
		// Extremes saturate instead of wrapping.
		k0, k1 = g.TupleRange(math.MaxInt64-5, 100)
		assert.Equal(t, uint64(math.MaxUint64), k1)
		assert.LessOrEqual(t, k0, k1)
		k0, k1 = g.TupleRange(math.MinInt64, 10)
		assert.Equal(t, [2]uint64{0, 0}, [2]uint64{k0, k1})
	}
}

func BenchmarkExpectedWindow(b *testing.B) {
	g := newGen(b, DefaultGenConfig())
	var e Expected
	for i := 0; b.Loop(); i++ {
		k0, k1 := g.TupleRange(int64(i)*WindowMs, WindowMs)
		g.Expected(k0, k1, &e)
	}
}
