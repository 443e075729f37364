package ysb

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newGen(t testing.TB, cfg GenConfig) *Generator {
	t.Helper()
	g, err := NewGenerator(cfg)
	require.NoError(t, err)
	return g
}

// Golden values from the C yardstick (shared/anchors/ysb_cost.c):
// bundleSHA256 is the SHA-256 of its first 3001 bundle tuples (generation loop
// copied verbatim into a dumper), campaign0 its first campaign id.
const (
	goldenTuples       = 3001
	goldenBundleSHA256 = "32eeb36a1c4284d894d927c42124e0025a80e9c05fdbabc311abecdd18de2721"
	goldenCampaign0    = "956eeb2f-2632-d7bd-03f1-66b233e3ef28" // hi bdd732262feb6e95, lo 28efe333b266f103
)

func TestFillMatchesYSBCost(t *testing.T) {
	g := newGen(t, DefaultGenConfig())
	buf := make([]byte, goldenTuples*TupleSize)
	g.Fill(buf, 0)
	sum := sha256.Sum256(buf)
	assert.Equal(t, goldenBundleSHA256, hex.EncodeToString(sum[:]))
	assert.Equal(t, goldenCampaign0, g.Campaigns().CampaignIDs[0].String())

	// Spot-check tuple 1001 field by field against the C dump.
	p := buf[1001*TupleSize:][:TupleSize]
	le := binary.LittleEndian
	assert.Equal(t, uint64(100), le.Uint64(p[OffEventTime:]))
	assert.Equal(t, mix(1001), le.Uint64(p[OffUserID:]))
	assert.Equal(t, make([]byte, 8), p[OffUserID+8:OffPageID])
	assert.Equal(t, mix(^uint64(1001)), le.Uint64(p[OffPageID:]))
	assert.Equal(t, g.Campaigns().AdIDs[1], UUID(p[OffAdID:OffAdID+16]))
	assert.Equal(t, uint32(1), le.Uint32(p[OffAdType:]))
	assert.Equal(t, uint32(2), le.Uint32(p[OffEventType:]))
	assert.Equal(t, uint32(1001), le.Uint32(p[OffIP:]))
	assert.Equal(t, make([]byte, TupleSize-68), p[68:])
}

// TestExpectedMatchesYSBCostChecksum replays ysb_cost's single timed pass
// (`ysb_cost --mb N --secs 0`) through Expected: it flushes every window the
// last tuple has moved past and sums lo*31 + count*7 + maxts + wstart per row.
func TestExpectedMatchesYSBCostChecksum(t *testing.T) {
	g := newGen(t, DefaultGenConfig())
	for _, tc := range []struct {
		n                    uint64
		windows, rows, views uint64
		checksum             uint64
	}{
		{819200, 8, 800, 266667, 12296321263054465901}, // --mb 100
		{303100, 3, 300, 100000, 4611120473630424712},  // --mb 37
	} {
		lastTs := int64((tc.n - 1) / 10)
		var rows, views, checksum uint64
		var e Expected
		windows := uint64(lastTs / WindowMs)
		for w := range int64(windows) {
			ws := w * WindowMs
			k0, k1 := g.TupleRange(ws, WindowMs)
			g.Expected(k0, min(k1, tc.n), &e)
			for c, cnt := range e.Count {
				if cnt == 0 {
					continue
				}
				lo := binary.LittleEndian.Uint64(g.campaigns[c][8:])
				rows++
				views += uint64(cnt)
				checksum += lo*31 + uint64(cnt)*7 + uint64(e.MaxEventTime[c]) + uint64(ws)
			}
		}
		assert.Equal(t, tc.windows, windows, "n=%d", tc.n)
		assert.Equal(t, tc.rows, rows, "n=%d", tc.n)
		assert.Equal(t, tc.views, views, "n=%d", tc.n)
		assert.Equal(t, tc.checksum, checksum, "n=%d", tc.n)
	}
}

func TestFillAnyOffset(t *testing.T) {
	for _, cfg := range []GenConfig{
		DefaultGenConfig(),
		{Campaigns: 3, AdsPerCampaign: 7, Seed: 5, StartMs: -12345, TuplesPerMs: 7},
		{Campaigns: 1, AdsPerCampaign: 1, Seed: 0, StartMs: 1 << 40, TuplesPerMs: 1},
	} {
		g := newGen(t, cfg)
		const n = 2000
		all := make([]byte, n*TupleSize)
		g.Fill(all, 0)
		for _, k0 := range []uint64{1, 2, 3, 9, 10, 11, 999, 1000, 1001, 1777} {
			part := make([]byte, (n-k0)*TupleSize)
			for i := range part {
				part[i] = 0xAA // Fill must overwrite everything, padding included
			}
			g.Fill(part, k0)
			require.Equal(t, all[k0*TupleSize:], part, "cfg %+v k0 %d", cfg, k0)
		}
		// Tuple k from the definition, at a large k where counters wrap differently.
		k := uint64(1)<<50 + 12345
		one := make([]byte, TupleSize)
		g.Fill(one, k)
		le := binary.LittleEndian
		nAds := uint64(cfg.Campaigns * cfg.AdsPerCampaign)
		assert.Equal(t, cfg.StartMs+int64(k/uint64(cfg.TuplesPerMs)), int64(le.Uint64(one[OffEventTime:])))
		assert.Equal(t, g.ads[k%nAds], UUID(one[OffAdID:OffAdID+16]))
		assert.Equal(t, uint32(k%5), le.Uint32(one[OffAdType:]))
		assert.Equal(t, uint32(k%3), le.Uint32(one[OffEventType:]))
		assert.Equal(t, uint32(k), le.Uint32(one[OffIP:]))
	}
}

func TestFillPanicsOnPartialTuple(t *testing.T) {
	g := newGen(t, DefaultGenConfig())
	assert.PanicsWithValue(t, "ysb: Fill: len(dst) = 129 is not a multiple of 128", func() { g.Fill(make([]byte, 129), 0) })
	assert.NotPanics(t, func() { g.Fill(nil, 0) })
}

func TestGenConfigValidate(t *testing.T) {
	require.NoError(t, DefaultGenConfig().Validate())
	assert.Equal(t, GenConfig{Campaigns: 100, AdsPerCampaign: 10, Seed: 42, TuplesPerMs: 10}, DefaultGenConfig())

	err := GenConfig{Campaigns: 0, AdsPerCampaign: -1, TuplesPerMs: 0}.Validate()
	require.Error(t, err)
	assert.Equal(t, "campaigns 0: need at least 1; ads per campaign -1: need at least 1; tuples per millisecond 0: need at least 1", err.Error())

	err = GenConfig{Campaigns: 1 << 20, AdsPerCampaign: 1 << 20, TuplesPerMs: 1}.Validate()
	assert.EqualError(t, err, "1048576 campaigns of 1048576 ads: more than the 16777216 ads a generated table may hold")

	_, err = NewGenerator(GenConfig{Campaigns: 1, AdsPerCampaign: 1})
	assert.EqualError(t, err, "tuples per millisecond 0: need at least 1")
}

func TestGeneratorCampaigns(t *testing.T) {
	cfg := GenConfig{Campaigns: 4, AdsPerCampaign: 3, Seed: 42, TuplesPerMs: 2}
	g := newGen(t, cfg)
	assert.Equal(t, cfg, g.Config())
	c := g.Campaigns()
	require.Len(t, c.AdIDs, 12)
	require.Len(t, c.CampaignIDs, 12)
	_, err := c.check()
	require.NoError(t, err, "generated ad ids are distinct")
	for a := range c.AdIDs {
		assert.Equal(t, g.campaigns[a/3], c.CampaignIDs[a])
	}
	// Same seed, same ids: the first campaign id does not depend on the shape.
	assert.Equal(t, goldenCampaign0, c.CampaignIDs[0].String())
	// A copy: mutating it leaves the generator alone.
	c.AdIDs[0] = UUID{}
	assert.NotEqual(t, UUID{}, g.Campaigns().AdIDs[0])
	// Another seed gives other ids.
	cfg.Seed = 43
	assert.NotEqual(t, c.CampaignIDs[0], newGen(t, cfg).Campaigns().CampaignIDs[0])
}

func BenchmarkFill(b *testing.B) {
	g := newGen(b, DefaultGenConfig())
	buf := make([]byte, 1<<20)
	b.SetBytes(int64(len(buf)))
	for i := 0; b.Loop(); i++ {
		g.Fill(buf, uint64(i)*uint64(len(buf)/TupleSize))
	}
}
