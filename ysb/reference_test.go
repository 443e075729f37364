package ysb

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/engine"
)

// ev is a hand-built tuple: only the fields the query reads.
type ev struct {
	ts int64
	et int32
	ad UUID
}

func encode(evs ...ev) []byte {
	b := make([]byte, len(evs)*TupleSize)
	for i, e := range evs {
		p := b[i*TupleSize:]
		binary.LittleEndian.PutUint64(p[OffEventTime:], uint64(e.ts))
		binary.LittleEndian.PutUint32(p[OffEventType:], uint32(e.et))
		copy(p[OffAdID:], e.ad[:])
		p[OffUserID] = 0xEE // fields the query ignores must not matter
		p[100] = 0xEE
	}
	return b
}

// Two campaigns: X owns ads A and B, Y owns ad C.
func smallTable(t *testing.T) (c *Campaigns, a, b, cc, x, y UUID) {
	a, b, cc = mustUUID(t, idA), mustUUID(t, idB), mustUUID(t, idC)
	x, y = mustUUID(t, idX), mustUUID(t, idY)
	return &Campaigns{AdIDs: []UUID{cc, a, b}, CampaignIDs: []UUID{y, x, x}}, a, b, cc, x, y
}

func TestReferenceSemantics(t *testing.T) {
	c, a, b, cc, x, y := smallTable(t)
	unknown := mustUUID(t, "12345678-0000-0000-0000-000000000000")
	stream := encode(
		ev{5, EventView, a},       // counted [0,10) X
		ev{3, EventView, cc},      // out of order, window [0,10) open (W=5): counted Y
		ev{7, EventClick, a},      // filtered
		ev{9, EventPurchase, b},   // filtered
		ev{8, 7, b},               // unknown event type: filtered, not a view
		ev{12, EventView, b},      // counted [10,20) X; W was 9
		ev{1, EventView, a},       // W=12 >= end 10: late
		ev{9, EventView, unknown}, // unmatched, not late: the join comes first
		ev{25, EventClick, a},     // filtered, but advances W to 25
		ev{19, EventView, b},      // W=25 >= 20: late
		ev{11, EventView, a},      // late
		ev{29, EventView, a},      // counted [20,30) X
		ev{21, EventView, b},      // counted [20,30) X, max stays 29
		ev{20, EventView, cc},     // counted [20,30) Y
		ev{-1, EventView, a},      // late (window [-10,0))
	)
	rows, counts, err := Reference(stream, c, 10)
	require.NoError(t, err)
	assert.Equal(t, []Row{
		{0, x, 1, 5},
		{0, y, 1, 3},
		{10, x, 1, 12},
		{20, x, 2, 29},
		{20, y, 1, 20},
	}, rows)
	assert.Equal(t, Counts{Tuples: 15, Filtered: 4, Unmatched: 1, Late: 4, Counted: 6}, counts)
	assert.Equal(t, counts.Tuples, counts.Filtered+counts.Unmatched+counts.Late+counts.Counted)
}

func TestReferenceNegativeTimestamps(t *testing.T) {
	c, a, _, cc, x, y := smallTable(t)
	rows, counts, err := Reference(encode(
		ev{-25, EventView, a}, // window [-30,-20)
		ev{-21, EventView, a}, // same window
		ev{-20, EventView, cc},
		ev{-1, EventView, a}, // [-10,0): truncating division would say [0,10)
		ev{0, EventView, a},
		ev{-10, EventView, cc}, // W=0 >= end of [-10,0)? end is 0, 0 >= 0: late
	), c, 10)
	require.NoError(t, err)
	assert.Equal(t, []Row{
		{-30, x, 2, -21},
		{-20, y, 1, -20},
		{-10, x, 1, -1},
		{0, x, 1, 0},
	}, rows)
	assert.Equal(t, Counts{Tuples: 6, Late: 1, Counted: 5}, counts)
}

func TestReferenceFirstTupleHasNoWatermark(t *testing.T) {
	c, a, _, _, x, _ := smallTable(t)
	// Were W to start at 0 rather than "none", the first tuple, at a negative
	// time, would be late.
	rows, counts, err := Reference(encode(ev{-50, EventView, a}, ev{-55, EventView, a}, ev{-41, EventView, a}), c, 10)
	require.NoError(t, err)
	assert.Equal(t, []Row{{-50, x, 2, -41}}, rows)
	assert.Equal(t, Counts{Tuples: 3, Late: 1, Counted: 2}, counts)

	rows, counts, err = Reference(nil, c, 10)
	require.NoError(t, err)
	assert.Empty(t, rows)
	assert.Equal(t, Counts{}, counts)
}

func TestReferenceExtremeTimes(t *testing.T) {
	c, a, _, _, x, _ := smallTable(t)
	top := int64(math.MaxInt64)
	topStart := top - top%10
	rows, _, err := Reference(encode(ev{top, EventView, a}, ev{top - 1, EventView, a}), c, 10)
	require.NoError(t, err)
	assert.Equal(t, []Row{{topStart, x, 2, top}}, rows, "the topmost window never closes")

	_, _, err = Reference(encode(ev{0, EventView, a}, ev{math.MinInt64, EventView, a}), c, 10)
	assert.ErrorContains(t, err, "tuple 1 (byte offset 128)")
	// A filtered tuple at that time is not an error: it has no window.
	_, counts, err := Reference(encode(ev{math.MinInt64, EventClick, a}), c, 10)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), counts.Filtered)
}

func TestReferenceErrors(t *testing.T) {
	c, a, _, _, x, _ := smallTable(t)
	_, _, err := Reference(make([]byte, 3*TupleSize+5), c, 10)
	assert.ErrorContains(t, err, "(5 trailing bytes)")
	_, _, err = Reference(nil, c, 0)
	assert.ErrorContains(t, err, "windowMs = 0")
	_, _, err = Reference(nil, nil, 10)
	assert.ErrorContains(t, err, "nil campaigns")
	dup := &Campaigns{AdIDs: []UUID{a, a}, CampaignIDs: []UUID{x, x}}
	_, _, err = Reference(nil, dup, 10)
	assert.ErrorContains(t, err, "duplicate ad_id "+idA)
	_, _, err = Reference(nil, &Campaigns{AdIDs: []UUID{a}}, 10)
	assert.ErrorContains(t, err, "1 ad ids but 0 campaign ids")
}

// On in-order generator data nothing is late, and each window's rows are
// exactly what Expected implies for its tuple range.
func TestReferenceMatchesExpectedOnGeneratorData(t *testing.T) {
	for _, tc := range []struct {
		cfg      GenConfig
		n        uint64
		windowMs int64
	}{
		{DefaultGenConfig(), 250_000, WindowMs},
		{GenConfig{Campaigns: 4, AdsPerCampaign: 5, Seed: 2, StartMs: -333, TuplesPerMs: 7}, 20_000, 100},
		{GenConfig{Campaigns: 7, AdsPerCampaign: 1, Seed: 1, StartMs: 17, TuplesPerMs: 1}, 5_000, 13},
	} {
		g := newGen(t, tc.cfg)
		events := make([]byte, tc.n*TupleSize)
		g.Fill(events, 0)
		rows, counts, err := Reference(events, g.Campaigns(), tc.windowMs)
		require.NoError(t, err)
		assert.Zero(t, counts.Late)
		assert.Zero(t, counts.Unmatched)
		assert.Equal(t, tc.n, counts.Tuples)
		assert.Equal(t, (tc.n+2)/3, counts.Counted)

		var want []Row
		var e Expected
		first := windowStartOrDie(t, tc.cfg.StartMs, tc.windowMs)
		last := tc.cfg.StartMs + int64((tc.n-1)/uint64(tc.cfg.TuplesPerMs))
		for ws := first; ws <= last; ws += tc.windowMs {
			k0, k1 := g.TupleRange(ws, tc.windowMs)
			g.Expected(k0, min(k1, tc.n), &e)
			for ci, cnt := range e.Count {
				if cnt > 0 {
					want = append(want, Row{ws, g.campaigns[ci], cnt, e.MaxEventTime[ci]})
				}
			}
		}
		SortRows(want)
		require.NotEmpty(t, want)
		assert.Equal(t, want, rows, "cfg %+v", tc.cfg)
	}
}

func windowStartOrDie(t *testing.T, ts, windowMs int64) int64 {
	s, ok := windowStart(ts, windowMs)
	require.True(t, ok)
	return s
}

// int64Events is n YSB events near the ends of int64 for windows of
// windowMs: near MinInt64 (from just below the lowest accepted window
// start), near MaxInt64 (saturating there), or jumping between both ends
// and zero; views of known ads mostly, some clicks and unknown ads.
func int64Events(r *rand.Rand, n int, windowMs int64, ads []UUID) ([]byte, string) {
	span := int64(math.MaxInt64)
	if windowMs < span/4 {
		span = 4 * windowMs
	}
	step := max(1, span/int64(max(n, 1))*int64(1+r.IntN(3)))
	lowest := math.MinInt64 / windowMs * windowMs // the lowest window start (/ truncates toward zero)
	mode := []string{"min", "max", "mixed"}[r.IntN(3)]
	cur := lowest - min(r.Int64N(3), lowest-math.MinInt64)
	if mode == "max" {
		cur = math.MaxInt64 - r.Int64N(span)
	}
	unknown := UUID{0xff}
	evs := make([]ev, n)
	for i := range evs {
		e := ev{ts: cur, et: EventView, ad: ads[r.IntN(len(ads))]}
		switch r.IntN(10) {
		case 0:
			e.et = EventClick
		case 1:
			e.ad = unknown
		}
		if j := r.Int64N(step + 1); r.IntN(4) == 0 && e.ts-math.MinInt64 >= j {
			e.ts -= j
		}
		if mode == "mixed" && r.IntN(10) == 0 {
			e.ts = []int64{math.MinInt64, lowest, 0, math.MaxInt64, math.MaxInt64 - r.Int64N(span)}[r.IntN(5)]
		}
		evs[i] = e
		if d := r.Int64N(step + 1); cur > math.MaxInt64-d {
			cur = math.MaxInt64
		} else {
			cur += d
		}
	}
	return encode(evs...), mode
}

var refusedOffset = regexp.MustCompile(`tuple (\d+) \(byte offset (\d+)\)`)

// checkEngineAgainstReference runs events through the engine (RunReader)
// with both CPU kernels, several task sizes and worker counts, and requires
// Reference's rows and counts, or a refusal of the same tuple: an
// engine.InputError (an engine.ErrInput) naming Reference's byte offset.
func checkEngineAgainstReference(t *testing.T, events []byte, c *Campaigns, windowMs int64, msg string) (refused bool) {
	t.Helper()
	want, counts, werr := Reference(events, c, windowMs)
	for _, vec := range []bool{false, true} {
		for _, task := range []int{TupleSize, 5 * TupleSize, 64 * TupleSize} {
			for _, workers := range []int{1, 3} {
				m := fmt.Sprintf("%s, vectorised %v, task %d, workers %d", msg, vec, task, workers)
				cfg := engine.Config{Workers: workers, TaskSize: task, BufferSize: 1 << 14, Vectorised: vec}
				rows, st, err := RunReader(cfg, bytes.NewReader(events), c, windowMs)
				if werr != nil {
					require.ErrorIs(t, err, engine.ErrInput, "%s: Reference: %v", m, werr)
					var ie *engine.InputError
					require.ErrorAs(t, err, &ie, m)
					sub := refusedOffset.FindStringSubmatch(werr.Error())
					require.NotNil(t, sub, werr.Error())
					off, _ := strconv.ParseUint(sub[2], 10, 64)
					assert.Equal(t, off, ie.Offset, "%s: Reference: %v; engine: %v", m, werr, err)
					assert.Equal(t, int64(binary.LittleEndian.Uint64(events[off+OffEventTime:])), ie.Pos, m)
					continue
				}
				require.NoError(t, err, m)
				SortRows(rows)
				require.Equal(t, want, rows, m)
				assert.Equal(t, counts, Counts{Tuples: st.Tuples, Filtered: st.Filtered, Unmatched: st.Unmatched, Late: st.Late, Counted: st.Counted}, m)
			}
		}
	}
	return werr != nil
}

// TestEngineMatchesReferenceAtInt64Edges: issue 12's cases and random
// event streams near both ends of int64, for 10 s windows and others: the
// engine gives Reference's rows and counts, or refuses the same tuple.
func TestEngineMatchesReferenceAtInt64Edges(t *testing.T) {
	c, a, b, cc, x, _ := smallTable(t)
	// Issue 12: both views of the topmost window counted; [0, MaxInt64]
	// keeps its top row; the lowest window starts at a multiple of 10000;
	// MinInt64 is refused.
	const top = math.MaxInt64 / 10000 * 10000
	rows, _, err := Reference(encode(ev{math.MaxInt64 - 100, EventView, a}, ev{math.MaxInt64 - 50, EventView, a}), c, 10000)
	require.NoError(t, err)
	assert.Equal(t, []Row{{top, x, 2, math.MaxInt64 - 50}}, rows)
	for _, events := range [][]byte{
		encode(ev{math.MaxInt64 - 100, EventView, a}, ev{math.MaxInt64 - 50, EventView, a}),
		encode(ev{0, EventView, a}, ev{math.MaxInt64, EventView, b}),
		encode(ev{-9223372036854770000, EventView, a}, ev{-9223372036854770000 + 5, EventView, cc}),
		encode(ev{0, EventView, a}, ev{math.MinInt64, EventView, a}),
		encode(ev{math.MinInt64, EventClick, a}, ev{math.MinInt64, EventView, a}),
	} {
		checkEngineAgainstReference(t, events, c, 10000, "issue 12")
	}
	refused, seeds := 0, 30
	if testing.Short() {
		seeds = 8
	}
	for seed := range seeds {
		r := rand.New(rand.NewPCG(uint64(seed), 12))
		windowMs := []int64{10000, 1, 3, 1 + r.Int64N(1000), 1 + r.Int64N(math.MaxInt64), math.MaxInt64}[r.IntN(6)]
		events, mode := int64Events(r, 20+r.IntN(400), windowMs, []UUID{a, b, cc})
		if checkEngineAgainstReference(t, events, c, windowMs, fmt.Sprintf("seed %d, %s, window %d", seed, mode, windowMs)) {
			refused++
		}
	}
	assert.Positive(t, refused)
	assert.Less(t, refused, seeds)
}
