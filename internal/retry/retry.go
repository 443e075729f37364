// Package retry carries a sink's writes through an outage of the server
// it writes to: a write that fails on a connection error is tried again
// with capped exponential backoff until it succeeds or a time budget is
// spent, and the outage is reported once when it begins, then every so
// often while it lasts, then when it ends, instead of once per attempt.
package retry

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/saber-hx/saber-hx/internal/security"
)

// Defaults of Policy's durations.
const (
	DefaultMin   = 100 * time.Millisecond
	DefaultMax   = 5 * time.Second
	DefaultEvery = 10 * time.Second
)

// Policy says how a write is retried.
type Policy struct {
	// Timeout is how long retries go on after a write first fails; 0 (or
	// less): none, the first error is returned.
	Timeout time.Duration
	// Min is the first backoff, doubled after each failure up to Max,
	// each wait drawn between half of it and all of it (0: DefaultMin,
	// DefaultMax).
	Min, Max time.Duration
	// Every is how often an outage that goes on is reported again (0:
	// DefaultEvery).
	Every time.Duration
}

// Outage reports one client's outages and counts its retries. Its
// methods may be called from several goroutines.
type Outage struct {
	what  string               // the client, e.g. "redis 127.0.0.1:6379"
	logf  func(string, ...any) // nil: no reports
	every time.Duration        // 0: DefaultEvery
	now   func() time.Time     // the clock (tests)

	retries atomic.Uint64

	mu       sync.Mutex
	since    time.Time // when the outage began; zero: none
	reported time.Time // when it was last reported
	attempts int       // failed attempts in the outage
}

// NewOutage is what's reporter: logf (nil: none) receives a line when an
// outage begins, every so often while it lasts and when it ends.
func NewOutage(what string, logf func(string, ...any), every time.Duration) *Outage {
	if every <= 0 {
		every = DefaultEvery
	}
	return &Outage{what: what, logf: logf, every: every, now: time.Now}
}

// Retries is the number of failed attempts made again (or to be).
func (o *Outage) Retries() uint64 { return o.retries.Load() }

// Down is whether an outage is going on.
func (o *Outage) Down() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return !o.since.IsZero()
}

// Failed notes a failed attempt, which will be retried (within budget,
// said in the first report: 0 says nothing of it).
func (o *Outage) Failed(err error, budget time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.now()
	o.attempts++
	o.retries.Add(1)
	switch {
	case o.since.IsZero():
		o.since, o.reported = now, now
		if budget > 0 {
			o.report("%s; retrying for up to %v", o.named(err), budget)
		} else {
			o.report("%s; retrying", o.named(err))
		}
	case now.Sub(o.reported) >= o.every:
		o.reported = now
		o.report("%s: still failing after %v (%s): %v", o.what, round(now.Sub(o.since)), attempts(o.attempts), err)
	}
}

// Recovered ends the outage, if one is going on, and reports how long it
// lasted.
func (o *Outage) Recovered() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.since.IsZero() {
		return
	}
	o.report("%s: recovered after %v (%s failed)", o.what, round(o.now().Sub(o.since)), attempts(o.attempts))
	o.since, o.attempts = time.Time{}, 0
}

// named is err's text, preceded by the client's name unless it starts
// with it already.
func (o *Outage) named(err error) string {
	msg := err.Error()
	if o.what == "" || strings.HasPrefix(msg, o.what) {
		return msg
	}
	return o.what + ": " + msg
}

func attempts(n int) string {
	if n == 1 {
		return "1 attempt"
	}
	return strconv.Itoa(n) + " attempts"
}

func (o *Outage) report(format string, args ...any) {
	if o.logf != nil {
		o.logf(format, args...)
	}
}

func round(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

// Do calls write until it returns nil, an error transient says is not a
// connection failure, a connection the server refused (security.Failed:
// returned at once as a *security.Error naming o's client, whatever
// transient says), the policy's budget is spent since the first
// failure, or ctx ends; the outage (o, which may be nil) is reported and
// each new attempt counted. The error returned is write's last, wrapped
// with why retrying stopped where it was retried.
func Do(ctx context.Context, p Policy, o *Outage, transient func(error) bool, write func(context.Context) error) error {
	if o == nil {
		o = NewOutage("", nil, 0)
	}
	lo, hi := p.Min, p.Max
	if lo <= 0 {
		lo = DefaultMin
	}
	if hi <= 0 {
		hi = DefaultMax
	}
	hi = max(hi, lo)
	backoff := lo
	var start time.Time
	var last error // the last attempt's error that was retried
	for attempt := 1; ; attempt++ {
		// A retry ends with the budget, even in the middle of an
		// attempt (a dial that hangs).
		actx, cancel := ctx, context.CancelFunc(func() {})
		if !start.IsZero() {
			actx, cancel = context.WithDeadline(ctx, start.Add(p.Timeout))
		}
		err := write(actx)
		budgetSpent := actx.Err() != nil && ctx.Err() == nil
		cancel()
		if err == nil {
			o.Recovered()
			return nil
		}
		if security.Failed(err) {
			// Refused (credentials, certificates): every attempt would
			// be, and it is no outage.
			err = security.Classify(o.what, err)
			if attempt > 1 {
				return fmt.Errorf("%w (after %d attempts)", err, attempt)
			}
			return err
		}
		if budgetSpent {
			if errors.Is(err, context.DeadlineExceeded) && last != nil {
				err = last // cut by the budget: the failure it retried says more
			}
			return fmt.Errorf("%w (gave up after retrying for %v, %d attempts)", err, round(time.Since(start)), attempt)
		}
		if p.Timeout <= 0 || !transient(err) {
			if attempt > 1 {
				return fmt.Errorf("%w (after %d attempts)", err, attempt)
			}
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w (retrying stopped after %d attempts: %w)", err, attempt, ctx.Err())
		}
		if start.IsZero() {
			start = time.Now()
		}
		left := p.Timeout - time.Since(start)
		if left <= 0 {
			return fmt.Errorf("%w (gave up after retrying for %v, %d attempts)", err, round(time.Since(start)), attempt)
		}
		o.Failed(err, p.Timeout)
		last = err
		wait := backoff/2 + rand.N(backoff/2+1)
		wait = min(wait, left)
		backoff = min(2*backoff, hi)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (retrying stopped after %d attempts: %w)", err, attempt, ctx.Err())
		case <-t.C:
		}
	}
}
