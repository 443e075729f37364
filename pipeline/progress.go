package pipeline

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/scheduler"
)

// StreamProgress is a stream's progress: its tuples per second over the
// last interval, and its windows so far.
type StreamProgress struct {
	Query      string
	TuplesPerS float64
	Windows    uint64
}

// WatchProgress calls report every interval, on a goroutine of its own,
// until stop: with the time since start and the progress of each of
// eng's streams. An interval of 0 or less reports nothing. stop waits for
// a report under way; it may be called more than once.
func WatchProgress(eng *engine.Engine, start time.Time, interval time.Duration, report func(elapsed time.Duration, streams []StreamProgress)) (stop func()) {
	if interval <= 0 {
		return func() {}
	}
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		last := make([]uint64, len(eng.Streams()))
		lastT := time.Duration(0)
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				el := time.Since(start)
				dt := (el - lastT).Seconds()
				lastT = el
				var streams []StreamProgress
				for i, s := range eng.Streams() {
					// This engine's own: a restored one's counters start
					// at the snapshot's.
					st := s.Stats()
					st = st.Since(s.RestoredStats())
					streams = append(streams, StreamProgress{st.Query, float64(st.Tuples-min(st.Tuples, last[i])) / dt, st.Windows})
					last[i] = st.Tuples
				}
				report(el, streams)
			}
		}
	}()
	// Idempotent: a caller may stop it on several paths (a deferred stop
	// besides the one before the summary).
	var once sync.Once
	return func() { once.Do(func() { close(done); <-exited }) }
}

// TaskShares is each processor kind's share of the tasks s counts, in
// percent; nil before the first task.
func TaskShares(s scheduler.Stats) []float64 {
	var total uint64
	per := make([]uint64, len(s.Kinds))
	for k := range s.Tasks {
		for _, n := range s.Tasks[k] {
			per[k] += n
			total += n
		}
	}
	if total == 0 {
		return nil
	}
	shares := make([]float64, len(per))
	for k, n := range per {
		shares[k] = 100 * float64(n) / float64(total)
	}
	return shares
}

// SplitText is the progress line's share of tasks per processor kind
// ("  split cpu 60% gpu 40%"), "" before the first task.
func SplitText(s scheduler.Stats) string {
	shares := TaskShares(s)
	if shares == nil {
		return ""
	}
	parts := make([]string, len(shares))
	for k, pct := range shares {
		parts[k] = fmt.Sprintf("%s %.0f%%", s.Kinds[k], pct)
	}
	return "  split " + strings.Join(parts, " ")
}

// ProgressLine is the line a command prints every --progress-interval
// while a run goes on: label, the time since the start, each stream's
// tuples per second over the last interval and its windows, then
// SplitText of s.
func ProgressLine(label string, elapsed time.Duration, streams []StreamProgress, s scheduler.Stats) string {
	var parts []string
	for _, st := range streams {
		parts = append(parts, fmt.Sprintf("%s %.2f M tuples/s, windows %d", st.Query, st.TuplesPerS/1e6, st.Windows))
	}
	return fmt.Sprintf("%s %6.1fs  %s%s", label, elapsed.Seconds(), strings.Join(parts, "; "), SplitText(s))
}

// YSBProgress returns a ysb.BenchConfig.Progress that writes the YSB
// benchmark's progress line to w: the phase (warm-up or measured), tuples
// and bytes per second since the last line, windows and late tuples.
func YSBProgress(w io.Writer, warmup time.Duration) func(engine.Stats, scheduler.Stats, time.Duration) {
	var last engine.Stats
	var lastT time.Duration
	return func(st engine.Stats, sched scheduler.Stats, el time.Duration) {
		phase := "measured"
		if el < warmup {
			phase = "warm-up "
		}
		dt := (el - lastT).Seconds()
		fmt.Fprintf(w, "ysb %6.1fs %s %8.2f M tuples/s  %8.0f MB/s  windows %d  late %d%s\n", el.Seconds(), phase,
			float64(st.Tuples-last.Tuples)/dt/1e6, float64(st.Bytes-last.Bytes)/dt/1e6, st.Windows, st.Late, SplitText(sched))
		last, lastT = st, el
	}
}
