// Package kafkasink writes a query's result rows to a Kafka topic through
// franz-go (kgo): the caller encodes each row (CSV or JSON text, and the
// key column's text as the record key), Appends it, and Flushes at the end
// of each emitted batch of windows; Flush returns once the broker has
// acknowledged every record appended before it.
//
// Records are buffered in the Sink (copies of the caller's bytes, in one
// arena reused from batch to batch) until Flush, which hands them to kgo
// and waits for the acknowledgements. Retries, with backoff, are kgo's
// (idempotent: a record retried is written once), for as long as Flush's
// context allows: through a broker's restart a Flush waits, and the
// outage is reported to the Logger when it begins, every 10 s while it
// lasts and when it ends. The first record that still fails is Flush's
// error; where the context ends first the client is closed (kgo would
// wait on), and the Sink fails every later Flush.
//
// The connections are secured as SinkConfig.Security says (TLS, SASL).
// Brokers that refuse it (a wrong password, a certificate not trusted)
// fail NewSink, or the Flush in progress, at once with a
// *security.Error: that is no outage, and is not waited out.
package kafkasink

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/saber-hx/saber-hx/internal/retry"
	"github.com/saber-hx/saber-hx/internal/security"
)

// SinkConfig is where a Sink writes.
type SinkConfig struct {
	Brokers []string
	Topic   string
	// Security secures the connections (the zero value is PLAINTEXT).
	Security security.Kafka
	Logger   func(string, ...any) // warnings and outages (nil: none)

	// Tests add these to the client's options (a shorter metadata age
	// than kgo's 5 s, so that a broker back from an outage is used soon).
	clientOpts []kgo.Opt
}

// Sink produces rows to a topic.
type Sink struct {
	cfg   SinkConfig
	where string
	cl    *kgo.Client
	// outage reports the brokers unreachable while kgo retries.
	outage *retry.Outage
	// guard fails a flush where the brokers refuse the connection.
	guard *security.Guard

	arena []byte       // the keys and values of the records appended
	spans []span       // each record's key and value in arena
	recs  []kgo.Record // reused between Flushes
	ptrs  []*kgo.Record
	// failed is the error of a Flush that outlived its context: its
	// client closed (retry.ProduceSync), every later Flush fails so.
	failed error

	closeOnce sync.Once
}

type span struct{ k0, k1, v1 int } // key arena[k0:k1], value arena[k1:v1]; no key when k0 == k1

// NewSink connects to the brokers (lazily: kgo dials on the first
// produce) and checks the configuration.
func NewSink(ctx context.Context, cfg SinkConfig) (*Sink, error) {
	if len(cfg.Brokers) == 0 {
		return nil, errors.New("kafka sink: no brokers")
	}
	where := fmt.Sprintf("kafka sink %s (brokers %s)", cfg.Topic, strings.Join(cfg.Brokers, ","))
	if cfg.Topic == "" {
		return nil, fmt.Errorf("%s: no topic", where)
	}
	outage := retry.NewOutage(where, cfg.Logger, 0)
	secure, err := cfg.Security.Opts()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	guard := security.NewGuard(cfg.Security, cfg.Brokers)
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.WithHooks(retry.BrokerHook{O: outage}),
		guard.Opt(),
		kgo.DefaultProduceTopic(cfg.Topic),
		kgo.AllowAutoTopicCreation(),
		kgo.ProducerLinger(0),
		kgo.RequiredAcks(kgo.AllISRAcks()),
	}, secure...)
	cl, err := kgo.NewClient(append(opts, cfg.clientOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	// nil, the brokers' refusal (*security.Error), or unreachable.
	if err := guard.Ping(pctx, cl); err != nil {
		cl.Close()
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	return &Sink{cfg: cfg, where: where, cl: cl, outage: outage, guard: guard}, nil
}

// Append buffers one record (nil or empty key: none); the bytes are
// copied.
func (s *Sink) Append(key, value []byte) {
	k0 := len(s.arena)
	s.arena = append(s.arena, key...)
	k1 := len(s.arena)
	s.arena = append(s.arena, value...)
	s.spans = append(s.spans, span{k0, k1, len(s.arena)})
}

// Buffered is the number of records appended since the last Flush.
func (s *Sink) Buffered() int { return len(s.spans) }

// Flush produces every record appended and waits until each is
// acknowledged (or has failed for good); the buffer is then empty either
// way.
func (s *Sink) Flush(ctx context.Context) error {
	if s.failed != nil {
		return s.failed
	}
	if len(s.spans) == 0 {
		return nil
	}
	if cap(s.recs) < len(s.spans) {
		s.recs = make([]kgo.Record, len(s.spans))
		s.ptrs = make([]*kgo.Record, len(s.spans))
	}
	s.recs, s.ptrs = s.recs[:len(s.spans)], s.ptrs[:len(s.spans)]
	for i, sp := range s.spans {
		r := &s.recs[i]
		*r = kgo.Record{Topic: s.cfg.Topic, Value: s.arena[sp.k1:sp.v1:sp.v1]}
		if sp.k1 > sp.k0 {
			r.Key = s.arena[sp.k0:sp.k1:sp.k1]
		}
		s.ptrs[i] = r
	}
	if s.cfg.Security.Secured() {
		// Only secured connections can be refused: kgo's retries of
		// those end at the guard's failure.
		var unbind context.CancelFunc
		ctx, unbind = s.guard.Bind(ctx)
		defer unbind()
	}
	err := retry.ProduceSync(ctx, s.cl, s.ptrs...)
	clear(s.ptrs)
	s.arena, s.spans = s.arena[:0], s.spans[:0]
	if err != nil {
		err = fmt.Errorf("%s: produce: %w", s.where, s.guard.Err(err))
		if ctx.Err() != nil {
			s.failed = err
		}
		return err
	}
	return nil
}

// Retries is the number of failed connections to the brokers, each
// retried by kgo.
func (s *Sink) Retries() uint64 { return s.outage.Retries() }

// Down says whether the brokers are unreachable now (a connection failed
// and none has succeeded since).
func (s *Sink) Down() bool { return s.outage.Down() }

// Close drops what was not flushed and closes the client.
func (s *Sink) Close() error {
	s.closeOnce.Do(func() {
		if n := len(s.spans); n > 0 && s.cfg.Logger != nil {
			s.cfg.Logger("%s: closed with %d records not flushed", s.where, n)
		}
		s.cl.Close()
	})
	return nil
}
