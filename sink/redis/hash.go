// Package redissink writes a run's result rows to Redis, in one pipeline
// round trip per flush: Hash, one hash per row under a key built from the
// row's columns, and YSB, the layout of the original Yahoo Streaming
// Benchmark (campaign hashes, window lists and per-window hashes), which
// its checker reads.
//
// Both buffer what they are given (Add) and write it when flushed
// (Flush), which the caller does on its own schedule or through Run,
// every interval until its context ends. Rows are written as absolute
// values (HSET), so writing a row again (a retry, a restart) leaves
// the same data.
//
// A flush that fails on the connection (the server refused, reset or
// timed out: down, restarting) is retried with backoff, for up to the
// config's RetryTimeout, the rows held meanwhile; the outage is reported
// to the Logger when it begins, every 10 s while it lasts and when it
// ends. A reply error (WRONGTYPE...) fails the flush at once.
//
// The connection may authenticate (a password, an ACL user) and use TLS
// (the config's Server, a security.Redis). A server that refuses it (a
// wrong password, NOAUTH, NOPERM, a certificate not trusted, TLS on one
// side only) fails the sink's creation, or the flush, at once with a
// *security.Error naming the server: that is no outage, and is never
// retried.
package redissink

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/saber-hx/saber-hx/internal/security"
)

// Row is one result row as the sink reads it: AppendColumn appends the
// text of column col (an index into the Columns the sink was built with)
// to dst and returns it. The engine's output tuples are fed through it
// without a string per value.
type Row interface {
	AppendColumn(dst []byte, col int) []byte
}

// HashConfig configures a Hash sink.
type HashConfig struct {
	// Addr is the server's host:port, where Server.Addr is empty;
	// ignored when Client is set.
	Addr string
	// Server is the server and how to connect to it: its address,
	// password or ACL user, TLS (ignored when Client is set).
	Server security.Redis
	// Client, when set, is used instead of a client of its own (to
	// share one, or to add hooks); Close does not close it.
	Client *redis.Client
	// KeyTemplate builds each row's key: text with {column} placeholders,
	// such as "cm1:{window_start}:{cat}"; "{{" and "}}" are a literal
	// brace ("{{lit}}:{k}" is "{lit}:" and column k's text), as in the
	// SQL key option.
	KeyTemplate string
	// Columns names the row's columns, by index (Row.AppendColumn's col).
	Columns []string
	// Fields are the columns written as the hash's fields, each under
	// its own name; nil writes every column.
	Fields []string
	// RetryTimeout is how long a flush that fails on the connection is
	// retried (0: not at all); DefaultRetryTimeout suits a long run.
	RetryTimeout time.Duration
	// Logger receives the reports of an outage (nil: none).
	Logger func(format string, args ...any)
}

// Hash writes one hash per row: HSET key field value ..., key from the
// template. Add and Flush may be called from different goroutines.
type Hash struct {
	client    *redis.Client
	own       bool
	addr      string
	key       []keyPart
	fieldCols []int
	fieldKeys []string

	mu      sync.Mutex
	arena   []byte // buffered rows: key then field values, back to back
	ends    []int  // end offset in arena of each key and value
	flushMu sync.Mutex
	spare   []byte
	spareE  []int
	retry   retrier
}

// keyPart is a literal (col < 0) or a column's text.
type keyPart struct {
	lit string
	col int
}

// NewHash checks the template and the fields against the columns and
// connects (a PING): an unreachable server is an error naming Addr.
func NewHash(ctx context.Context, cfg HashConfig) (*Hash, error) {
	index := make(map[string]int, len(cfg.Columns))
	for i, c := range cfg.Columns {
		if c == "" {
			return nil, fmt.Errorf("redis hash sink: column %d has no name", i)
		}
		if _, dup := index[c]; dup {
			return nil, fmt.Errorf("redis hash sink: column %q named twice", c)
		}
		index[c] = i
	}
	key, err := parseTemplate(cfg.KeyTemplate, index, cfg.Columns)
	if err != nil {
		return nil, err
	}
	h := &Hash{key: key}
	fields := cfg.Fields
	if fields == nil {
		fields = cfg.Columns
	}
	if len(fields) == 0 {
		return nil, errors.New("redis hash sink: no fields to write")
	}
	for _, f := range fields {
		i, ok := index[f]
		if !ok {
			return nil, fmt.Errorf("redis hash sink: field %q is not a column (columns: %s)", f, strings.Join(cfg.Columns, ", "))
		}
		h.fieldCols = append(h.fieldCols, i)
		h.fieldKeys = append(h.fieldKeys, f)
	}
	h.client, h.own, h.addr, err = connect(ctx, server(cfg.Addr, cfg.Server), cfg.Client)
	if err != nil {
		return nil, err
	}
	h.retry = newRetrier(h.addr, cfg.RetryTimeout, cfg.Logger)
	return h, nil
}

// parseTemplate cuts a key template into literals and columns: a
// column's name in braces, "{{" and "}}" a literal brace (package sql's
// templateColumns reads the key option so).
func parseTemplate(t string, index map[string]int, cols []string) ([]keyPart, error) {
	if t == "" {
		return nil, errors.New("redis hash sink: empty key template")
	}
	var parts []keyPart
	var lit strings.Builder
	for i := 0; i < len(t); i++ {
		switch c := t[i]; {
		case (c == '{' || c == '}') && i+1 < len(t) && t[i+1] == c:
			lit.WriteByte(c) // {{ or }}
			i++
		case c == '}':
			return nil, fmt.Errorf("redis hash sink: key template %q: '}' without '{' at byte %d (write }} for a literal brace)", t, i)
		case c == '{':
			end := strings.IndexAny(t[i+1:], "{}")
			if end < 0 || t[i+1+end] == '{' {
				return nil, fmt.Errorf("redis hash sink: key template %q: '{' at byte %d is not closed (write {{ for a literal brace)", t, i)
			}
			name := t[i+1 : i+1+end]
			col, ok := index[name]
			if !ok {
				return nil, fmt.Errorf("redis hash sink: key template %q: unknown column %q (columns: %s)", t, name, strings.Join(cols, ", "))
			}
			if lit.Len() > 0 {
				parts = append(parts, keyPart{lit: lit.String(), col: -1})
				lit.Reset()
			}
			parts = append(parts, keyPart{col: col})
			i += end + 1
		default:
			lit.WriteByte(c)
		}
	}
	if lit.Len() > 0 {
		parts = append(parts, keyPart{lit: lit.String(), col: -1})
	}
	return parts, nil
}

// server is srv, at addr where it names no address.
func server(addr string, srv security.Redis) security.Redis {
	if srv.Addr == "" {
		srv.Addr = addr
	}
	return srv
}

// connect returns the client to use (c, or one of srv) and whether it
// is ours, after a PING: a server that refuses the connection is a
// *security.Error, one that does not answer "redis ADDR: ping: ...".
func connect(ctx context.Context, srv security.Redis, c *redis.Client) (*redis.Client, bool, string, error) {
	if c == nil {
		if srv.Addr == "" {
			return nil, false, "", errors.New("redis sink: no server address")
		}
		c, err := srv.Connect(ctx)
		if err != nil {
			return nil, false, "", err
		}
		return c, true, srv.Addr, nil
	}
	addr := c.Options().Addr
	if err := c.Ping(ctx).Err(); err != nil {
		return nil, false, "", fmt.Errorf("redis %s: ping: %w", addr, security.Classify("redis "+addr, err))
	}
	return c, false, addr, nil
}

// Add buffers row r (its key and field values are copied).
func (h *Hash) Add(r Row) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range h.key {
		if p.col < 0 {
			h.arena = append(h.arena, p.lit...)
		} else {
			h.arena = r.AppendColumn(h.arena, p.col)
		}
	}
	h.ends = append(h.ends, len(h.arena))
	for _, c := range h.fieldCols {
		h.arena = r.AppendColumn(h.arena, c)
		h.ends = append(h.ends, len(h.arena))
	}
}

// Buffered is the number of rows added since the last flush.
func (h *Hash) Buffered() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.ends) / (1 + len(h.fieldCols))
}

// Flush writes every buffered row in one pipeline, retried through an
// outage of up to RetryTimeout. On an error the rows stay buffered (ahead
// of those added since), for the next Flush.
func (h *Hash) Flush(ctx context.Context) error {
	h.flushMu.Lock()
	defer h.flushMu.Unlock()
	h.mu.Lock()
	arena, ends := h.arena, h.ends
	h.arena, h.ends = h.spare[:0], h.spareE[:0]
	h.mu.Unlock()
	if len(ends) == 0 {
		h.spare, h.spareE = arena, ends
		return nil
	}
	err := h.retry.do(ctx, func(ctx context.Context) error { return h.write(ctx, arena, ends) })
	if err != nil {
		// The failed rows go back in front of those added since.
		h.mu.Lock()
		base := len(arena)
		arena = append(arena, h.arena...)
		for _, e := range h.ends {
			ends = append(ends, base+e)
		}
		h.arena, h.ends = arena, ends
		h.mu.Unlock()
		return err
	}
	h.spare, h.spareE = arena[:0], ends[:0]
	return nil
}

func (h *Hash) write(ctx context.Context, arena []byte, ends []int) error {
	per := 1 + len(h.fieldCols)
	pipe := h.client.Pipeline()
	start := 0
	args := make([]any, 0, 2*len(h.fieldCols))
	for r := 0; r < len(ends); r += per {
		key := string(arena[start:ends[r]])
		start = ends[r]
		args = args[:0]
		for i := range h.fieldCols {
			args = append(args, h.fieldKeys[i], string(arena[start:ends[r+1+i]]))
			start = ends[r+1+i]
		}
		pipe.HSet(ctx, key, args...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("redis %s: write %d rows: %w", h.addr, len(ends)/per, err)
	}
	return nil
}

// Retries is the number of flush attempts made again after a connection
// error.
func (h *Hash) Retries() uint64 { return h.retry.outage.Retries() }

// Down says whether the server is unreachable now: the last flush
// failed on the connection and is being retried.
func (h *Hash) Down() bool { return h.retry.outage.Down() }

// Run flushes every interval until ctx ends, then returns ctx's error;
// a failed flush is returned at once. The caller flushes once more after
// the last Add.
func (h *Hash) Run(ctx context.Context, every time.Duration) error {
	return RunFunc(ctx, every, h.Flush)
}

// RunFunc calls flush every interval until ctx ends, then returns ctx's
// error; a failed flush is returned at once. It is Run for a flush that
// does more than a sink's (a source's commit after it).
func RunFunc(ctx context.Context, every time.Duration, flush func(context.Context) error) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			if err := flush(ctx); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return err
			}
		}
	}
}

// Close closes the sink's own client (not one given in the config).
// Rows not flushed are dropped.
func (h *Hash) Close() error {
	if h.own {
		return h.client.Close()
	}
	return nil
}
