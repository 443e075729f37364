package ysb

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
)

// Row is one output row: a campaign's aggregate in one window.
type Row struct {
	WindowStart  int64
	CampaignID   UUID
	Count        int64
	MaxEventTime int64
}

// Counts classifies every input tuple exactly once:
// Tuples = Filtered + Unmatched + Late + Counted.
type Counts struct {
	Tuples    uint64 // all tuples read
	Filtered  uint64 // event_type != view
	Unmatched uint64 // views whose ad_id is not in the campaigns table
	Late      uint64 // matched views whose window had closed on arrival
	Counted   uint64 // matched views aggregated into a row
}

// Reference is the plain single-threaded oracle of the YSB query; the engine
// must reproduce its output exactly. It is written for clarity, not speed.
//
// events must be a whole number of TupleSize-byte tuples. Tuples are taken in
// order, with a watermark W = the maximum event_time of all previous tuples
// (no watermark before the first tuple). For each tuple with time ts:
//
//   - event_type != EventView: Filtered;
//   - else ad_id not in c: Unmatched;
//   - else its window is [start, end) with start = floor(ts/windowMs)*windowMs
//     (floor, so negative times fall in the window below zero) and
//     end = start+windowMs; if a watermark exists and W >= end the window has
//     closed: Late;
//   - else Counted: for (start, campaign of the ad), count++ and
//     max_event_time = max(max_event_time, ts).
//
// Then W = max(W, ts): every tuple advances the watermark, filtered and
// unmatched ones too. A tuple out of order but within a still-open window is
// counted. The output has one row per (window, campaign) with count > 0,
// sorted by WindowStart then CampaignID bytes (equal to the order of their
// lowercase text form).
//
// Errors: a trailing partial tuple, windowMs <= 0, a nil or malformed table
// (mismatched lengths, duplicate ad id), and a matched view whose window would
// start below math.MinInt64 (ts within windowMs of it: unrepresentable).
func Reference(events []byte, c *Campaigns, windowMs int64) ([]Row, Counts, error) {
	return ReferenceDelay(events, c, windowMs, 0)
}

// ReferenceDelay is Reference with a watermark delay of delayMs >= 0
// (query.Window.Delay): a window [start, end) has closed, and a matched
// view in it is Late, when W - delayMs >= end, W the watermark before the
// tuple. Delay 0 is Reference.
func ReferenceDelay(events []byte, c *Campaigns, windowMs, delayMs int64) ([]Row, Counts, error) {
	var counts Counts
	if delayMs < 0 {
		return nil, counts, fmt.Errorf("ysb: reference: watermark delay %d ms, want >= 0", delayMs)
	}
	if rem := len(events) % TupleSize; rem != 0 {
		return nil, counts, fmt.Errorf("ysb: reference: %d bytes of events is not a whole number of %d-byte tuples (%d trailing bytes)", len(events), TupleSize, rem)
	}
	if windowMs <= 0 {
		return nil, counts, fmt.Errorf("ysb: reference: windowMs = %d, want > 0", windowMs)
	}
	campaignOf, err := c.check()
	if err != nil {
		return nil, counts, fmt.Errorf("ysb: reference: %w", err)
	}

	type key struct {
		start    int64
		campaign UUID
	}
	type agg struct{ count, maxTs int64 }
	aggs := make(map[key]agg)

	var w int64
	haveW := false
	le := binary.LittleEndian
	for off := 0; off < len(events); off += TupleSize {
		p := events[off : off+TupleSize]
		counts.Tuples++
		ts := int64(le.Uint64(p[OffEventTime:]))
		switch {
		case int32(le.Uint32(p[OffEventType:])) != EventView:
			counts.Filtered++
		default:
			camp, ok := campaignOf[UUID(p[OffAdID:OffAdID+16])]
			if !ok {
				counts.Unmatched++
				break
			}
			start, ok := windowStart(ts, windowMs)
			if !ok {
				return nil, counts, fmt.Errorf("ysb: reference: tuple %d (byte offset %d): event_time %d lies in a window starting below the int64 range", off/TupleSize, off, ts)
			}
			// start+windowMs may exceed MaxInt64 only for the topmost window,
			// which no watermark can have passed: treat its end as +inf.
			// w-end, with w >= end, is exact as a uint64 (no overflow of end+delay).
			if haveW && start <= maxInt64-windowMs && w >= start+windowMs && uint64(w-(start+windowMs)) >= uint64(delayMs) {
				counts.Late++
				break
			}
			counts.Counted++
			k := key{start, camp}
			a := aggs[k]
			if a.count == 0 || ts > a.maxTs {
				a.maxTs = ts
			}
			a.count++
			aggs[k] = a
		}
		if !haveW || ts > w {
			w, haveW = ts, true
		}
	}

	rows := make([]Row, 0, len(aggs))
	for k, a := range aggs {
		rows = append(rows, Row{WindowStart: k.start, CampaignID: k.campaign, Count: a.count, MaxEventTime: a.maxTs})
	}
	SortRows(rows)
	return rows, counts, nil
}

const maxInt64 = 1<<63 - 1

// SortRows sorts rows into output order: WindowStart, then CampaignID bytes.
func SortRows(rows []Row) {
	slices.SortFunc(rows, func(a, b Row) int {
		if c := cmp.Compare(a.WindowStart, b.WindowStart); c != 0 {
			return c
		}
		return bytes.Compare(a.CampaignID[:], b.CampaignID[:])
	})
}

// windowStart returns floor(ts/windowMs)*windowMs for windowMs > 0. Go's %
// truncates toward zero, which would put ts = -1 in the window starting at 0
// instead of -windowMs. ok is false when the start is below math.MinInt64
// (only for ts within windowMs of it).
func windowStart(ts, windowMs int64) (start int64, ok bool) {
	m := ts % windowMs
	if m < 0 {
		m += windowMs
	}
	start = ts - m
	return start, start <= ts // ts - m wrapped around iff it came out above ts
}
