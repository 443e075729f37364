package ysb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// GenConfig parameterises the deterministic generator. The defaults reproduce
// ysb_cost.c exactly.
type GenConfig struct {
	Campaigns      int    // number of campaigns; default 100
	AdsPerCampaign int    // ads per campaign; default 10
	Seed           uint64 // initial splitmix64 state; default 42 (as ysb_cost)
	StartMs        int64  // event time of tuple 0; default 0
	TuplesPerMs    int    // tuples sharing one event-time millisecond; default 10
}

// MaxAds bounds Campaigns*AdsPerCampaign. The generator keeps the ad table and
// a per-ad campaign index in memory and Expected scans up to 3*ads residues per
// call, so an absurd product is refused up front rather than failing on memory.
const MaxAds = 1 << 24

// DefaultGenConfig returns the configuration of ysb_cost.c.
func DefaultGenConfig() GenConfig {
	return GenConfig{Campaigns: 100, AdsPerCampaign: 10, Seed: 42, StartMs: 0, TuplesPerMs: 10}
}

// Validate reports every invalid setting, in words a user of the command
// line reads (no Go type or field names), joined by "; ".
func (c GenConfig) Validate() error {
	var errs []string
	if c.Campaigns < 1 {
		errs = append(errs, fmt.Sprintf("campaigns %d: need at least 1", c.Campaigns))
	}
	if c.AdsPerCampaign < 1 {
		errs = append(errs, fmt.Sprintf("ads per campaign %d: need at least 1", c.AdsPerCampaign))
	}
	if c.TuplesPerMs < 1 {
		errs = append(errs, fmt.Sprintf("tuples per millisecond %d: need at least 1", c.TuplesPerMs))
	}
	if c.Campaigns >= 1 && c.AdsPerCampaign >= 1 && c.Campaigns > MaxAds/c.AdsPerCampaign {
		errs = append(errs, fmt.Sprintf("%d campaigns of %d ads: more than the %d ads a generated table may hold", c.Campaigns, c.AdsPerCampaign, MaxAds))
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// Generator produces the benchmark stream. Tuple k is a pure function of k, so
// any range can be produced (or its aggregate predicted, see Expected) without
// generating what precedes it. A Generator is immutable after construction and
// safe for concurrent use.
type Generator struct {
	cfg       GenConfig
	campaigns []UUID
	ads       []UUID
	adHi      []uint64 // ads[a] bytes 0..7 as little-endian words: Fill stores two words per tuple
	adLo      []uint64 // ads[a] bytes 8..15
	adCamp    []int32  // campaign index of ad a (a / AdsPerCampaign), a lookup instead of a divide in Expected

	period         uint64  // lcm(3, nAds): the view/ad pattern repeats with it
	viewsPerPeriod []int64 // views per campaign in one period
}

// NewGenerator draws the ids exactly as ysb_cost.c does: from a splitmix64
// stream starting at Seed, (hi, lo) for each campaign, then (hi, lo) for each
// ad; an id's bytes are LittleEndian(hi) then LittleEndian(lo), which is where
// ysb_cost stores them in a tuple (p+40 and p+48).
func NewGenerator(cfg GenConfig) (*Generator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	nAds := cfg.Campaigns * cfg.AdsPerCampaign
	g := &Generator{
		cfg:       cfg,
		campaigns: make([]UUID, cfg.Campaigns),
		ads:       make([]UUID, nAds),
		adHi:      make([]uint64, nAds),
		adLo:      make([]uint64, nAds),
		adCamp:    make([]int32, nAds),
	}
	state := cfg.Seed
	next := func() uint64 {
		state += 0x9E3779B97F4A7C15
		z := state
		z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
		z = (z ^ (z >> 27)) * 0x94D049BB133111EB
		return z ^ (z >> 31)
	}
	draw := func() (uint64, uint64, UUID) {
		hi := next()
		lo := next()
		var u UUID
		binary.LittleEndian.PutUint64(u[0:], hi)
		binary.LittleEndian.PutUint64(u[8:], lo)
		return hi, lo, u
	}
	for c := range g.campaigns {
		_, _, g.campaigns[c] = draw()
	}
	for a := range g.ads {
		g.adHi[a], g.adLo[a], g.ads[a] = draw()
		g.adCamp[a] = int32(a / cfg.AdsPerCampaign)
	}

	g.period = uint64(nAds)
	if nAds%3 != 0 {
		g.period *= 3
	}
	g.viewsPerPeriod = make([]int64, cfg.Campaigns)
	g.countViews(0, g.period, g.viewsPerPeriod)
	return g, nil
}

// Config returns the configuration the generator was built with.
func (g *Generator) Config() GenConfig { return g.cfg }

// Campaigns returns a fresh copy of the join table: ad a belongs to campaign
// a / AdsPerCampaign, in generation order. A copy, so callers may modify it.
func (g *Generator) Campaigns() *Campaigns {
	c := &Campaigns{AdIDs: make([]UUID, len(g.ads)), CampaignIDs: make([]UUID, len(g.ads))}
	copy(c.AdIDs, g.ads)
	for a, ci := range g.adCamp {
		c.CampaignIDs[a] = g.campaigns[ci]
	}
	return c
}

// mix is ysb_cost's mix: the murmur3 64-bit finalizer.
func mix(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	return k ^ (k >> 33)
}

// Fill writes tuples k0, k0+1, ... into dst, exactly as ysb_cost.c's bundle:
// tuple k has event_time = StartMs + k/TuplesPerMs, user_id = LE(mix(k)) then
// 8 zero bytes, page_id = LE(mix(^k)) then 8 zero bytes, ad_id = ad k%nAds,
// ad_type = k%5, event_type = k%3, ip = int32(k), zero padding.
// len(dst) must be a multiple of TupleSize; Fill panics otherwise.
func (g *Generator) Fill(dst []byte, k0 uint64) {
	if len(dst)%TupleSize != 0 {
		panic(fmt.Sprintf("ysb: Fill: len(dst) = %d is not a multiple of %d", len(dst), TupleSize))
	}
	// One memclr for all zero bytes is cheaper than storing them field by field.
	clear(dst)
	tpms := uint64(g.cfg.TuplesPerMs)
	nAds := uint64(len(g.ads))
	// Running residues instead of four divisions per tuple.
	ms := g.cfg.StartMs + int64(k0/tpms)
	sub := k0 % tpms
	ad := int(k0 % nAds)
	at := uint32(k0 % 5)
	et := uint32(k0 % 3)
	k := k0
	le := binary.LittleEndian
	for off := 0; off < len(dst); off += TupleSize {
		p := dst[off : off+TupleSize : off+TupleSize] // one bounds check for the stores below
		le.PutUint64(p[OffEventTime:], uint64(ms))
		le.PutUint64(p[OffUserID:], mix(k))
		le.PutUint64(p[OffPageID:], mix(^k))
		le.PutUint64(p[OffAdID:], g.adHi[ad])
		le.PutUint64(p[OffAdID+8:], g.adLo[ad])
		le.PutUint32(p[OffAdType:], at)
		le.PutUint32(p[OffEventType:], et)
		le.PutUint32(p[OffIP:], uint32(k))

		k++
		if sub++; sub == tpms {
			sub = 0
			ms++
		}
		if ad++; ad == len(g.ads) {
			ad = 0
		}
		if at++; at == 5 {
			at = 0
		}
		if et++; et == 3 {
			et = 0
		}
	}
}
