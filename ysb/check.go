package ysb

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/saber-hx/saber-hx/internal/security"
	"github.com/saber-hx/saber-hx/source"
)

// EventLog is what Produce logged, decoded: the tuples of each partition,
// in offset order.
type EventLog struct {
	Partitions map[int32][]byte
	Events     int64
}

// ReadEventLog reads a produce log (ProduceConfig.Log's format: a
// partition number, a tab, the event's JSON, per line). Errors name the
// input and the line.
func ReadEventLog(r io.Reader, name string) (*EventLog, error) {
	dec, err := source.NewJSONDecoder(JSONLayout(), source.JSONOptions{Options: source.Options{Input: "event"}})
	if err != nil {
		return nil, err
	}
	log := &EventLog{Partitions: make(map[int32][]byte)}
	lr := newLineReader(r, name)
	var tuple [TupleSize]byte
	for {
		line, ok, err := lr.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return log, nil
		}
		ptext, js, found := bytes.Cut([]byte(line), []byte{'\t'})
		if !found {
			return nil, lr.errorf("want a partition, a tab and an event's JSON")
		}
		p, err := strconv.ParseInt(string(ptext), 10, 32)
		if err != nil || p < 0 {
			return nil, lr.errorf("bad partition %s", quoteTrunc(string(ptext)))
		}
		n, _, err := dec.Decode(tuple[:], js, true)
		if err != nil {
			return nil, lr.errorf("after the tab: %w", err)
		}
		if n != 1 {
			return nil, lr.errorf("no event after the partition")
		}
		log.Partitions[int32(p)] = append(log.Partitions[int32(p)], tuple[:]...)
		log.Events++
	}
}

// ReadEventLogFile is ReadEventLog of the file at path; a file that
// cannot be opened is an error "events: open ...".
func ReadEventLogFile(path string) (*EventLog, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	defer f.Close()
	return ReadEventLog(f, path)
}

// KafkaOrder is the stream order of package source/kafka's source over
// these partitions when no partition goes idle: each partition's tuples
// in offset order, merged by the smallest head event time, ties by the
// lowest partition number; a partition read to its end leaves the merge.
func KafkaOrder(parts map[int32][]byte) []byte {
	ids := make([]int32, 0, len(parts))
	total := 0
	for id, b := range parts {
		ids = append(ids, id)
		total += len(b)
	}
	slices.Sort(ids)
	pos := make([]int, len(ids))
	out := make([]byte, 0, total)
	le := binary.LittleEndian
	for len(out) < total {
		best := -1
		var bestT int64
		for i, id := range ids {
			b := parts[id]
			if pos[i] >= len(b) {
				continue
			}
			ts := int64(le.Uint64(b[pos[i]+OffEventTime:]))
			if best < 0 || ts < bestT {
				best, bestT = i, ts
			}
		}
		b := parts[ids[best]]
		out = append(out, b[pos[best]:pos[best]+TupleSize]...)
		pos[best] += TupleSize
	}
	return out
}

// RedisWindow is one window as the original layout holds it.
type RedisWindow struct {
	Campaign    UUID
	Start       int64
	Count       int64
	TimeUpdated int64
}

// ReadRedisWindows reads every window of the given campaigns as the
// original checker does: HGET c windows, the list's window starts
// (LRANGE), each one's id (HGET c w) and hash (seen_count, time_updated).
func ReadRedisWindows(ctx context.Context, cl *redis.Client, campaigns []UUID) ([]RedisWindow, error) {
	addr := cl.Options().Addr
	var out []RedisWindow
	for _, c := range campaigns {
		list, err := cl.HGet(ctx, c.String(), "windows").Result()
		if errors.Is(err, redis.Nil) {
			continue // no window written
		}
		if err != nil {
			return nil, fmt.Errorf("redis %s: HGET %s windows: %w", addr, c, err)
		}
		starts, err := cl.LRange(ctx, list, 0, -1).Result()
		if err != nil {
			return nil, fmt.Errorf("redis %s: LRANGE %s: %w", addr, list, err)
		}
		pipe := cl.Pipeline()
		ids := make([]*redis.StringCmd, len(starts))
		for i, w := range starts {
			ids[i] = pipe.HGet(ctx, c.String(), w)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, fmt.Errorf("redis %s: window ids of %s: %w", addr, c, err)
		}
		pipe = cl.Pipeline()
		hashes := make([]*redis.MapStringStringCmd, len(starts))
		for i := range starts {
			hashes[i] = pipe.HGetAll(ctx, ids[i].Val())
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, fmt.Errorf("redis %s: windows of %s: %w", addr, c, err)
		}
		for i, w := range starts {
			start, err := strconv.ParseInt(w, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("redis %s: list %s of campaign %s: window %q: %w", addr, list, c, w, err)
			}
			h := hashes[i].Val()
			count, err1 := strconv.ParseInt(h["seen_count"], 10, 64)
			upd, err2 := strconv.ParseInt(h["time_updated"], 10, 64)
			if err := errors.Join(err1, err2); err != nil {
				return nil, fmt.Errorf("redis %s: window %s of campaign %s (hash %s): %w", addr, w, c, ids[i].Val(), err)
			}
			out = append(out, RedisWindow{Campaign: c, Start: start, Count: count, TimeUpdated: upd})
		}
	}
	slices.SortFunc(out, func(a, b RedisWindow) int {
		if a.Start != b.Start {
			if a.Start < b.Start {
				return -1
			}
			return 1
		}
		return compareUUID(a.Campaign, b.Campaign)
	})
	return out, nil
}

// Mismatch is a window whose count in Redis is not the oracle's.
type Mismatch struct {
	Campaign UUID
	Start    int64
	Expected int64 // 0: Redis has a window the oracle does not
	Got      int64 // -1: missing in Redis
}

// Latency are the original benchmark's latency figures: per window,
// time_updated - window_start - WindowMs, in ms (JSON: ysb check's
// latency_ms).
type Latency struct {
	Windows int   `json:"windows"`
	Min     int64 `json:"min"`
	P50     int64 `json:"p50"`
	P90     int64 `json:"p90"`
	P99     int64 `json:"p99"`
	Max     int64 `json:"max"`
}

// CheckResult is the outcome of Check.
type CheckResult struct {
	Events     int64  // events in the log
	DelayMs    int64  // the watermark delay of the engine's rule
	Campaigns  int    // campaigns in Redis (the set campaigns)
	Ads        int    // ads of those campaigns in Redis: the join table
	Counts     Counts // the oracle's classification of them
	Windows    int    // windows the oracle expects
	Redis      int    // windows in Redis
	Mismatches []Mismatch
	YSB        YSBCounts
	// Problems say why the check fails although no window differs: a
	// comparison that would pass with nothing compared (no campaigns or ads
	// in Redis, none of the log's views joining one, no window at all).
	Problems []string
	Latency  Latency
}

// YSBCounts compare Redis with the original YSB's counts: every view that
// joins an ad counted into its 10 s window, none dropped as late. The
// engine's rule, which Check holds Redis to, drops a view whose window the
// watermark less the delay has passed. ysb produce --skew S offsets each
// event's time by up to S either way, so two events sent together differ
// by up to 2S: a watermark delay of at least 2S drops none of them, and
// then the two agree; --late-fraction's events (10 to 20 s back) need a
// delay of 20 s more.
// JSON: ysb check's "ysb".
type YSBCounts struct {
	Windows      int    `json:"windows"`       // windows YSB counts
	Views        uint64 `json:"views"`         // views YSB counts: every one that joins an ad
	Late         uint64 `json:"late_views"`    // of those, the ones the engine's rule drops as late
	ShortWindows int    `json:"short_windows"` // windows whose count in Redis is below YSB's, or missing
	ShortViews   int64  `json:"short_views"`   // the sum of what they lack
}

// Check recomputes every window's count from the log, in the Kafka
// source's stream order (KafkaOrder) with the oracle (ReferenceDelay,
// delayMs), over the campaigns in Redis, and compares them with the
// windows in Redis. It presumes that the run read the whole log. It also
// counts the log as the original YSB does (YSBCounts), and lists the
// Problems that leave nothing to compare.
func Check(ctx context.Context, cl *redis.Client, log *EventLog, delayMs int64) (CheckResult, error) {
	res := CheckResult{Events: log.Events, DelayMs: delayMs}
	c, camps, err := LoadCampaignsRedis(ctx, cl)
	if err != nil {
		return res, err
	}
	res.Campaigns, res.Ads = len(camps), len(c.AdIDs)
	ordered := KafkaOrder(log.Partitions)
	rows, counts, err := ReferenceDelay(ordered, c, WindowMs, delayMs)
	if err != nil {
		return res, err
	}
	res.Counts, res.Windows = counts, len(rows)
	// No lateness: a view is late only 2^63 ms after its window.
	ysbRows, ysbCounts, err := ReferenceDelay(ordered, c, WindowMs, math.MaxInt64)
	if err != nil {
		return res, err
	}
	got, err := ReadRedisWindows(ctx, cl, camps)
	if err != nil {
		return res, err
	}
	res.Redis = len(got)
	res.Mismatches = compareWindows(rows, got)
	res.YSB = YSBCounts{Windows: len(ysbRows), Views: ysbCounts.Counted, Late: counts.Late}
	res.YSB.ShortWindows, res.YSB.ShortViews = shortOf(ysbRows, got)
	res.Problems = problems(res, cl.Options().Addr)
	res.Latency = latencyOf(got)
	return res, nil
}

// problems are the reasons a check with no mismatch compared nothing.
func problems(r CheckResult, addr string) []string {
	views := r.Counts.Tuples - r.Counts.Filtered
	var out []string
	switch {
	case r.Events == 0:
		out = append(out, "the event log has no events: nothing to check")
	case r.Campaigns == 0:
		out = append(out, fmt.Sprintf("redis %s has no campaigns (the set %s is empty): run ysb setup there with the producer's generator flags", addr, CampaignsKey))
	case r.Ads == 0:
		out = append(out, fmt.Sprintf("redis %s has no ads of its %d campaigns (no SET <ad_id> <campaign_id>): run ysb setup there", addr, r.Campaigns))
	case views > 0 && r.Counts.Unmatched == views:
		out = append(out, fmt.Sprintf("none of the log's %d views joins one of the %d ads in redis %s: it holds other campaigns than the producer's (ysb setup with another --seed or --num-campaigns, or another database?)",
			views, r.Ads, addr))
	case r.Windows == 0:
		out = append(out, fmt.Sprintf("the log's %d events (%d views) give no window to check", r.Events, views))
	}
	if r.Events > 0 && r.Redis == 0 && r.Windows > 0 {
		out = append(out, fmt.Sprintf("redis %s holds no window of its %d campaigns: did the run write to this database?", addr, r.Campaigns))
	}
	return out
}

// shortOf counts the windows whose count in got is below want's (a window
// missing in got counts 0), and the sum of what they lack.
func shortOf(want []Row, got []RedisWindow) (windows int, views int64) {
	type key struct {
		c UUID
		w int64
	}
	have := make(map[key]int64, len(got))
	for _, g := range got {
		have[key{g.Campaign, g.Start}] = g.Count
	}
	for _, r := range want {
		if n := have[key{r.CampaignID, r.WindowStart}]; n < r.Count {
			windows++
			views += r.Count - n
		}
	}
	return windows, views
}

// TupleCounts classify a query's input tuples (they add up to its
// tuples), as the command line's summaries give them.
type TupleCounts struct {
	Filtered  uint64 `json:"filtered_tuples"`
	Unmatched uint64 `json:"unmatched_tuples"`
	Late      uint64 `json:"late_tuples"`
	Counted   uint64 `json:"counted_tuples"`
}

// CheckSummary is a check's outcome as ysb check reports it (its --json
// object): the figures, the problems, and the first mismatches.
type CheckSummary struct {
	Events     int64           `json:"events"`
	DelayMs    int64           `json:"watermark_delay_ms"`
	Campaigns  int             `json:"campaigns"`
	Ads        int             `json:"ads"`
	Windows    int             `json:"windows"`
	Redis      int             `json:"redis_windows"`
	Mismatches int             `json:"mismatches"`
	OK         bool            `json:"ok"`
	Problems   []string        `json:"problems,omitempty"`
	Counts     TupleCounts     `json:"counts"`
	YSB        YSBCounts       `json:"ysb"`
	Latency    Latency         `json:"latency_ms"`
	First      []CheckMismatch `json:"first_mismatches,omitempty"`
}

// CheckMismatch is a Mismatch in CheckSummary.
type CheckMismatch struct {
	Campaign string `json:"campaign"`
	Window   int64  `json:"window"`
	Expected int64  `json:"expected"`
	Got      int64  `json:"got"` // -1: missing
}

// Summary is r's summary, with its first mismatches (at most first). It is
// OK when no window differs and there is no problem.
func (r CheckResult) Summary(first int) CheckSummary {
	s := CheckSummary{Events: r.Events, DelayMs: r.DelayMs, Campaigns: r.Campaigns, Ads: r.Ads, Windows: r.Windows, Redis: r.Redis,
		Mismatches: len(r.Mismatches), OK: len(r.Mismatches) == 0 && len(r.Problems) == 0, Problems: r.Problems,
		Counts:  TupleCounts{Filtered: r.Counts.Filtered, Unmatched: r.Counts.Unmatched, Late: r.Counts.Late, Counted: r.Counts.Counted},
		YSB:     r.YSB,
		Latency: r.Latency}
	for _, m := range r.Mismatches[:min(first, len(r.Mismatches))] {
		s.First = append(s.First, CheckMismatch{m.Campaign.String(), m.Start, m.Expected, m.Got})
	}
	return s
}

// RequireYSBCounts makes s fail (ysb check --ysb-counts) where Redis is
// short of YSB's counts, as the original benchmark's checker would find.
func (s *CheckSummary) RequireYSBCounts() {
	if y := s.YSB; y.ShortViews > 0 {
		s.OK = false
		s.Problems = append(s.Problems, fmt.Sprintf("redis is short of YSB's counts by %d views in %d windows (%d views late by the watermark delay of %d ms: "+
			"none with a delay of at least twice the producer's --skew and no --late-fraction)", y.ShortViews, y.ShortWindows, y.Late, s.DelayMs))
	}
}

// Err is nil where s is OK, else the error that says why it failed.
func (s CheckSummary) Err() error {
	if s.OK {
		return nil
	}
	why := slices.Clone(s.Problems)
	if s.Mismatches > 0 {
		why = append(why, fmt.Sprintf("%d windows in redis differ from the oracle over the log", s.Mismatches))
	}
	return fmt.Errorf("check failed: %s", strings.Join(why, "; "))
}

// WriteText writes s as ysb check prints it without --json.
func (s CheckSummary) WriteText(w io.Writer) {
	fmt.Fprintf(w, "ysb check: %d events, %d windows expected, %d in redis, %d mismatches\n", s.Events, s.Windows, s.Redis, s.Mismatches)
	fmt.Fprintf(w, "  counted %d, late %d, filtered %d, unmatched %d (redis: %d campaigns, %d ads)\n",
		s.Counts.Counted, s.Counts.Late, s.Counts.Filtered, s.Counts.Unmatched, s.Campaigns, s.Ads)
	y := s.YSB
	fmt.Fprintf(w, "  YSB's counts (every view in its window, none late): %d windows, %d views; redis short by %d views in %d windows, "+
		"%d views late by the watermark delay of %d ms (none with a delay of at least twice the producer's --skew and no --late-fraction)\n",
		y.Windows, y.Views, y.ShortViews, y.ShortWindows, y.Late, s.DelayMs)
	for _, m := range s.First {
		got := fmt.Sprint(m.Got)
		if m.Got < 0 {
			got = "missing"
		}
		fmt.Fprintf(w, "  mismatch: campaign %s window %d: expected %d, got %s\n", m.Campaign, m.Window, m.Expected, got)
	}
	for _, p := range s.Problems {
		fmt.Fprintf(w, "  fail: %s\n", p)
	}
	l := s.Latency
	fmt.Fprintf(w, "latency (time_updated - window_start - %d ms) over %d windows, ms:\n", WindowMs, l.Windows)
	fmt.Fprintf(w, "  %8s %8s %8s %8s %8s\n", "min", "p50", "p90", "p99", "max")
	fmt.Fprintf(w, "  %8d %8d %8d %8d %8d\n", l.Min, l.P50, l.P90, l.P99, l.Max)
}

// CheckServer is Check over a connection to server that server.Connect
// makes (a refused password or certificate: a *security.Error).
func CheckServer(ctx context.Context, server security.Redis, log *EventLog, delayMs int64) (CheckResult, error) {
	cl, err := server.Connect(ctx)
	if err != nil {
		return CheckResult{}, err
	}
	defer cl.Close()
	return Check(ctx, cl, log, delayMs)
}

func compareWindows(want []Row, got []RedisWindow) []Mismatch {
	type key struct {
		c UUID
		w int64
	}
	have := make(map[key]int64, len(got))
	for _, g := range got {
		have[key{g.Campaign, g.Start}] = g.Count
	}
	var out []Mismatch
	for _, r := range want {
		k := key{r.CampaignID, r.WindowStart}
		n, ok := have[k]
		delete(have, k)
		if !ok {
			n = -1
		}
		if n != r.Count {
			out = append(out, Mismatch{Campaign: r.CampaignID, Start: r.WindowStart, Expected: r.Count, Got: n})
		}
	}
	for _, g := range got {
		if n, extra := have[key{g.Campaign, g.Start}]; extra && n != 0 {
			out = append(out, Mismatch{Campaign: g.Campaign, Start: g.Start, Got: n})
		}
	}
	return out
}

// latencyOf computes the percentiles (nearest rank) over the windows.
func latencyOf(ws []RedisWindow) Latency {
	if len(ws) == 0 {
		return Latency{}
	}
	lat := make([]int64, len(ws))
	for i, w := range ws {
		lat[i] = w.TimeUpdated - w.Start - WindowMs
	}
	slices.Sort(lat)
	rank := func(p float64) int64 {
		i := int(math.Ceil(p*float64(len(lat)))) - 1
		return lat[max(0, min(i, len(lat)-1))]
	}
	return Latency{Windows: len(lat), Min: lat[0], P50: rank(0.5), P90: rank(0.9), P99: rank(0.99), Max: lat[len(lat)-1]}
}
