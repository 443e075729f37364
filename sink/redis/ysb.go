package redissink

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/saber-hx/saber-hx/internal/security"
)

// YSBConfig configures a YSB sink.
type YSBConfig struct {
	// Addr and Server: as HashConfig's.
	Addr   string
	Server security.Redis
	// Client, when set, is used instead of a client of its own; Close
	// does not close it.
	Client *redis.Client
	// Now is the clock of time_updated; nil is time.Now.
	Now func() time.Time
	// RetryTimeout and Logger: as HashConfig's.
	RetryTimeout time.Duration
	Logger       func(format string, args ...any)
}

// YSB writes windows in the layout of the original benchmark, for
// campaign c (its lowercase UUID text) and window start w (epoch ms, in
// decimal):
//
//	HSET c w <window id>          a new UUID the first time (c, w) is written
//	HSET c windows <list id>      a new UUID the first time c is written
//	LPUSH <list id> w             once per (c, w)
//	HSET <window id> seen_count <count> time_updated <now ms>
//
// The ids are remembered; one not in memory is first looked up (HGET c w,
// HGET c windows), so that a sink started again over the same server
// reuses the ids already there and pushes no window twice. seen_count is
// the absolute count, not an increment: writing a window again leaves the
// same data.
//
// Flush writes in one pipeline round trip, preceded by one of lookups when
// it holds windows or campaigns not seen before. Add and Flush may be
// called from different goroutines.
type YSB struct {
	client *redis.Client
	own    bool
	addr   string
	now    func() time.Time

	mu      sync.Mutex
	pending map[windowKey]int64 // count per window added since the last flush

	flushMu sync.Mutex
	windows map[windowKey]string // window id of each window written
	lists   map[[16]byte]string  // list id of each campaign written
	retry   retrier
}

type windowKey struct {
	campaign [16]byte
	start    int64
}

// NewYSB connects (a PING): an unreachable server is an error naming Addr.
func NewYSB(ctx context.Context, cfg YSBConfig) (*YSB, error) {
	c, own, addr, err := connect(ctx, server(cfg.Addr, cfg.Server), cfg.Client)
	if err != nil {
		return nil, err
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &YSB{client: c, own: own, addr: addr, now: now, retry: newRetrier(addr, cfg.RetryTimeout, cfg.Logger),
		pending: make(map[windowKey]int64), windows: make(map[windowKey]string), lists: make(map[[16]byte]string)}, nil
}

// Add buffers the count of campaign's window starting at windowStart (ms);
// a later Add of the same window before the flush replaces it.
func (y *YSB) Add(campaign [16]byte, windowStart int64, count int64) {
	y.mu.Lock()
	y.pending[windowKey{campaign, windowStart}] = count
	y.mu.Unlock()
}

// Buffered is the number of windows added since the last flush.
func (y *YSB) Buffered() int {
	y.mu.Lock()
	defer y.mu.Unlock()
	return len(y.pending)
}

// Flush writes every buffered window, retried through an outage of up to
// RetryTimeout (each attempt looks up again the ids it has not written).
// On an error the windows stay buffered (a count added since wins), for
// the next Flush.
func (y *YSB) Flush(ctx context.Context) error {
	y.flushMu.Lock()
	defer y.flushMu.Unlock()
	y.mu.Lock()
	batch := y.pending
	if len(batch) == 0 {
		y.mu.Unlock()
		return nil
	}
	y.pending = make(map[windowKey]int64, len(batch))
	y.mu.Unlock()
	if err := y.retry.do(ctx, func(ctx context.Context) error { return y.write(ctx, batch) }); err != nil {
		y.mu.Lock()
		for k, v := range batch {
			if _, newer := y.pending[k]; !newer {
				y.pending[k] = v
			}
		}
		y.mu.Unlock()
		return err
	}
	return nil
}

func (y *YSB) write(ctx context.Context, batch map[windowKey]int64) error {
	// Look up the ids not in memory.
	var lookWin []windowKey
	var lookList [][16]byte
	var winCmds, listCmds []*redis.StringCmd
	seenList := make(map[[16]byte]bool)
	for k := range batch {
		if _, ok := y.windows[k]; !ok {
			lookWin = append(lookWin, k)
		}
		if _, ok := y.lists[k.campaign]; !ok && !seenList[k.campaign] {
			seenList[k.campaign] = true
			lookList = append(lookList, k.campaign)
		}
	}
	if len(lookWin)+len(lookList) > 0 {
		pipe := y.client.Pipeline()
		for _, k := range lookWin {
			winCmds = append(winCmds, pipe.HGet(ctx, uuidText(k.campaign), strconv.FormatInt(k.start, 10)))
		}
		for _, c := range lookList {
			listCmds = append(listCmds, pipe.HGet(ctx, uuidText(c), "windows"))
		}
		// redis.Nil (a missing field) is reported per command, not as a failure.
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return fmt.Errorf("redis %s: look up %d window and %d campaign ids: %w", y.addr, len(lookWin), len(lookList), err)
		}
	}

	// One transaction (MULTI/EXEC, still one round trip): a window's HSET
	// and its LPUSH land together or not at all, so that a flush cut by a
	// dropped connection cannot leave a window its list does not name
	// (the retry would find the id and push nothing).
	pipe := y.client.TxPipeline()
	newLists := make(map[[16]byte]string)
	for i, c := range lookList {
		id, err := listCmds[i].Result()
		switch {
		case errors.Is(err, redis.Nil):
			id = newUUID()
			pipe.HSet(ctx, uuidText(c), "windows", id)
		case err != nil:
			return fmt.Errorf("redis %s: HGET %s windows: %w", y.addr, uuidText(c), err)
		}
		newLists[c] = id
	}
	listOf := func(c [16]byte) string {
		if id, ok := y.lists[c]; ok {
			return id
		}
		return newLists[c]
	}
	newWins := make(map[windowKey]string, len(lookWin))
	for i, k := range lookWin {
		id, err := winCmds[i].Result()
		w := strconv.FormatInt(k.start, 10)
		switch {
		case errors.Is(err, redis.Nil):
			id = newUUID()
			pipe.HSet(ctx, uuidText(k.campaign), w, id)
			pipe.LPush(ctx, listOf(k.campaign), w)
		case err != nil:
			return fmt.Errorf("redis %s: HGET %s %s: %w", y.addr, uuidText(k.campaign), w, err)
		}
		newWins[k] = id
	}
	now := strconv.FormatInt(y.now().UnixMilli(), 10)
	for k, count := range batch {
		id, ok := y.windows[k]
		if !ok {
			id = newWins[k]
		}
		pipe.HSet(ctx, id, "seen_count", strconv.FormatInt(count, 10), "time_updated", now)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("redis %s: write %d windows: %w", y.addr, len(batch), err)
	}
	// Remember the ids only once written, so a failed flush looks them up again.
	for c, id := range newLists {
		y.lists[c] = id
	}
	for k, id := range newWins {
		y.windows[k] = id
	}
	return nil
}

// Retries is the number of flush attempts made again after a connection
// error.
func (y *YSB) Retries() uint64 { return y.retry.outage.Retries() }

// Down says whether the server is unreachable now: the last flush
// failed on the connection and is being retried.
func (y *YSB) Down() bool { return y.retry.outage.Down() }

// Run flushes every interval until ctx ends, then returns ctx's error;
// a failed flush is returned at once. The caller flushes once more after
// the last Add.
func (y *YSB) Run(ctx context.Context, every time.Duration) error {
	return RunFunc(ctx, every, y.Flush)
}

// Close closes the sink's own client (not one given in the config).
// Windows not flushed are dropped.
func (y *YSB) Close() error {
	if y.own {
		return y.client.Close()
	}
	return nil
}

const hexDigits = "0123456789abcdef"

// uuidText is the lowercase canonical 8-4-4-4-12 form of u.
func uuidText(u [16]byte) string {
	var b [36]byte
	j := 0
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b[j] = '-'
			j++
		}
		b[j], b[j+1] = hexDigits[c>>4], hexDigits[c&15]
		j += 2
	}
	return string(b[:])
}

// newUUID is a random (version 4) UUID's text.
func newUUID() string {
	var u [16]byte
	_, _ = rand.Read(u[:]) // crypto/rand.Read never fails
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return uuidText(u)
}
