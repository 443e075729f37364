package ysb

import "math"

// Expected is the aggregate the generator implies for a range of tuples,
// indexed by campaign index (generation order, see Generator.Campaigns).
// Count[c] == 0 means campaign c has no row; MaxEventTime[c] is then 0.
type Expected struct {
	Count        []int64
	MaxEventTime []int64
}

// Expected computes, for generator tuples k in [k0, k1), the per-campaign COUNT
// of views (event_type == 0) and MAX(event_time) over those views. k1 <= k0 is
// an empty range.
//
// It costs O(lcm(3, nAds) + Campaigns), independent of k1-k0, so a benchmark
// moving 100+ M tuples/s can be checked window by window: the view/ad pattern
// repeats every period P = lcm(3, nAds) tuples, so counts are whole periods
// times a precomputed per-period count plus one partial period scanned; and
// because event time never decreases with k, a campaign's maximum is the time
// of its last view, found by scanning back at most one period.
//
// out's slices are reused when their capacity suffices (no allocation).
func (g *Generator) Expected(k0, k1 uint64, out *Expected) {
	nc := len(g.campaigns)
	out.Count = resize(out.Count, nc)
	out.MaxEventTime = resize(out.MaxEventTime, nc)
	if k1 <= k0 {
		return
	}
	n := k1 - k0
	if full := n / g.period; full > 0 {
		f := int64(full)
		for c, v := range g.viewsPerPeriod {
			out.Count[c] = f * v
		}
	}
	g.countViews(k0, k0+n%g.period, out.Count)

	// Campaigns with views in range, each of which has a view in the last
	// min(n, P) tuples: scan back from the last view until all are found.
	need := 0
	for c, cnt := range out.Count {
		if cnt > 0 {
			need++
			out.MaxEventTime[c] = math.MinInt64 // "not found yet"
		}
	}
	lo := k0
	if n > g.period {
		lo = k1 - g.period
	}
	last := k1 - 1
	k := last - last%3 // largest view index <= k1-1
	if k < lo {
		return // no views at all (need is 0 as well)
	}
	nAds := len(g.ads)
	ad := int(k % uint64(nAds))
	step := 3 % nAds
	tpms := uint64(g.cfg.TuplesPerMs)
	for need > 0 {
		if c := g.adCamp[ad]; out.MaxEventTime[c] == math.MinInt64 {
			out.MaxEventTime[c] = g.cfg.StartMs + int64(k/tpms)
			need--
		}
		if k-lo < 3 { // k >= lo holds here; written this way so lo+3 cannot overflow
			break
		}
		k -= 3
		if ad -= step; ad < 0 {
			ad += nAds
		}
	}
}

// countViews adds to counts the views per campaign among tuples [k0, k1).
// Cost (k1-k0)/3 steps: only every third tuple is a view.
func (g *Generator) countViews(k0, k1 uint64, counts []int64) {
	if k1 <= k0 {
		return
	}
	k := k0
	if r := k % 3; r != 0 {
		k += 3 - r
	}
	if k >= k1 {
		return
	}
	nAds := len(g.ads)
	ad := int(k % uint64(nAds))
	step := 3 % nAds
	for n := (k1 - k + 2) / 3; n > 0; n-- {
		counts[g.adCamp[ad]]++
		if ad += step; ad >= nAds {
			ad -= nAds
		}
	}
}

// resize returns s with length n and all elements zero, reusing its array.
func resize(s []int64, n int) []int64 {
	if cap(s) < n {
		return make([]int64, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// TupleRange returns the generator tuples [k0, k1) whose event_time lies in
// [windowStart, windowStart+windowMs). The range is unbounded above (the
// caller clamps k1 to the tuples actually generated). Windows before StartMs
// start at tuple 0 or are empty; windowMs <= 0 gives an empty range. Bounds
// that would pass 2^64-1 saturate there.
func (g *Generator) TupleRange(windowStart, windowMs int64) (k0, k1 uint64) {
	k0 = g.firstTupleAt(windowStart)
	if windowMs <= 0 {
		return k0, k0
	}
	if windowStart > math.MaxInt64-windowMs {
		return k0, math.MaxUint64 // end beyond any representable event time
	}
	return k0, g.firstTupleAt(windowStart + windowMs)
}

// firstTupleAt returns the first k with event_time(k) >= t, i.e.
// ceil((t-StartMs)*TuplesPerMs) clamped to [0, MaxUint64].
func (g *Generator) firstTupleAt(t int64) uint64 {
	if t <= g.cfg.StartMs {
		return 0
	}
	// t > StartMs, so the difference is positive and exact in uint64 even
	// when t-StartMs overflows int64.
	d := uint64(t) - uint64(g.cfg.StartMs)
	tpms := uint64(g.cfg.TuplesPerMs)
	if d > math.MaxUint64/tpms {
		return math.MaxUint64
	}
	return d * tpms
}
