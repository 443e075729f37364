package ysb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/saber-hx/saber-hx/engine"
	redissink "github.com/saber-hx/saber-hx/sink/redis"
	"github.com/saber-hx/saber-hx/source"
	"github.com/saber-hx/saber-hx/source/kafka"
)

// KafkaRunConfig configures RunKafka: the original benchmark's pipeline,
// events as JSON from Kafka, campaigns from Redis, windows to Redis.
type KafkaRunConfig struct {
	Brokers []string
	Topic   string
	// Group is the consumer group whose offsets are committed once the
	// windows of their events are in Redis; "" commits nothing.
	Group string
	// Redis is the server's host:port.
	Redis string
	// DelayMs is the watermark delay (query.Window.Delay), ms.
	DelayMs int64
	// Duration ends the run (0: until ctx ends or, with StopAtEnd, the
	// end of the topic).
	Duration time.Duration
	// StopAtEnd reads each partition up to the end it had at the start,
	// then drains and ends (a bounded run over events already produced).
	StopAtEnd bool
	// FlushEvery is how often the windows emitted are written to Redis
	// (0: every second, as the original).
	FlushEvery time.Duration
	// IdleTimeout is the Kafka source's (0: its default).
	IdleTimeout time.Duration
	// Logger receives the source's warnings and the Redis output's
	// outage reports (nil: none).
	Logger func(format string, args ...any)
	// RetryTimeout is how long a write to Redis that fails on the
	// connection is retried (redissink.YSBConfig.RetryTimeout; 0: none,
	// the run fails at once).
	RetryTimeout time.Duration
	// Started, when set, is called once the campaigns are loaded and the
	// source is open, before the first event is read.
	Started func(campaigns, ads int)
	// Opened, when set, is called with the Kafka source once it is open
	// (to watch its counters: a metrics server).
	Opened func(*kafka.Source)
	// SinkOpened, when set, is called with the Redis output once it is
	// open (to watch its outages: a metrics server).
	SinkOpened func(*redissink.YSB)
	// Flushed, when set, is called after each write to Redis with the
	// stream's counters (of the tuples merged so far).
	Flushed func(engine.Stats)
}

// KafkaLinger is how long tuples may wait in a partial task (the Kafka
// source's Linger).
const KafkaLinger = kafka.Linger

// KafkaRunResult summarises a RunKafka run.
type KafkaRunResult struct {
	Stats     engine.Stats
	Source    kafka.Stats
	Campaigns int   // campaigns read from Redis
	Ads       int   // ads read from Redis
	Windows   int64 // window rows written to Redis (a row per campaign per window)
	Flushes   int64
	Seconds   float64
	// Interrupted: ctx ended the run (a signal). The engine was drained
	// and every window it emitted written to Redis all the same.
	Interrupted bool
}

// RunKafka runs YSB over the JSON events of a Kafka topic. It loads the
// campaigns from Redis (LoadCampaignsRedis: the whole table, before the
// run), consumes the topic with package source/kafka (the stream order
// documented there), runs Query with the watermark delay, and writes each
// window's per-campaign counts to Redis in the original layout
// (redissink.YSB) every FlushEvery. It ends when ctx ends, after
// Duration, or with StopAtEnd at the topic's end; then it stops reading,
// drains the engine (which emits every open window) and writes the last
// windows, so that every counted event is in its window's seen_count
// before it returns.
//
// A window is emitted when the task that carries the watermark past it
// is merged: tasks are dispatched when full (cfg.TaskSize) or when the
// topic has had nothing new for KafkaLinger.
func RunKafka(ctx context.Context, cfg engine.Config, kc KafkaRunConfig) (KafkaRunResult, error) {
	var res KafkaRunResult
	if kc.DelayMs < 0 {
		return res, fmt.Errorf("ysb kafka: watermark delay %d ms: must not be negative", kc.DelayMs)
	}
	every := kc.FlushEvery
	if every <= 0 {
		every = time.Second
	}
	rcl := redis.NewClient(&redis.Options{Addr: kc.Redis})
	defer rcl.Close()
	if err := rcl.Ping(ctx).Err(); err != nil {
		return res, fmt.Errorf("redis %s: ping: %w", kc.Redis, err)
	}
	camps, ids, err := LoadCampaignsRedis(ctx, rcl)
	if err != nil {
		return res, err
	}
	if len(camps.AdIDs) == 0 {
		return res, fmt.Errorf("redis %s: no ads of the campaigns set (run saber-hx ysb setup first)", kc.Redis)
	}
	res.Campaigns, res.Ads = len(ids), len(camps.AdIDs)
	out, err := redissink.NewYSB(ctx, redissink.YSBConfig{Client: rcl, RetryTimeout: kc.RetryTimeout, Logger: kc.Logger})
	if err != nil {
		return res, err
	}
	defer out.Close()
	if kc.SinkOpened != nil {
		kc.SinkOpened(out)
	}

	dec, err := source.NewJSONDecoder(JSONLayout(), source.JSONOptions{Options: source.Options{Input: kc.Topic, OnError: source.Skip}})
	if err != nil {
		return res, err
	}
	src, err := kafka.Open(ctx, kafka.Config{Brokers: kc.Brokers, Topic: kc.Topic, Group: kc.Group, Decoder: dec,
		TimeOffset: OffEventTime, StopAtEnd: kc.StopAtEnd, IdleTimeout: kc.IdleTimeout, Logger: kc.Logger})
	if err != nil {
		return res, err
	}
	closeSrc := sync.OnceValue(src.Close)
	defer closeSrc()
	if kc.Opened != nil {
		kc.Opened(src)
	}

	var rows atomic.Int64
	emit := func(w *engine.Window) error {
		for i := range w.Rows() {
			var id [16]byte
			copy(id[:], w.Key(i))
			out.Add(id, w.Start, w.Agg(i, AggCount))
		}
		rows.Add(int64(w.Rows()))
		return nil
	}
	q := Query(camps, WindowMs)
	q.Window.Delay = kc.DelayMs
	eng, err := engine.Start(cfg, []engine.Spec{{Query: q, Windows: emit}})
	if err != nil {
		return res, err
	}
	stream := eng.Stream(0)
	if kc.Started != nil {
		kc.Started(res.Campaigns, res.Ads)
	}

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	if kc.Duration > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(runCtx, kc.Duration)
		defer cancel()
	}
	// flush writes the windows emitted so far, then lets the source commit
	// the records whose windows are written: the progress read before the
	// flush, so that what it covers is in the flushed windows.
	var flushes atomic.Int64
	// One write may take 30 s; an outage is retried for RetryTimeout more.
	flushBound := 30*time.Second + max(kc.RetryTimeout, 0)
	flush := func(c context.Context) error {
		p := stream.Progress()
		// Bounded: a Redis gone away for longer than the retry budget
		// fails the run rather than hang it.
		c, cancel := context.WithTimeout(c, flushBound)
		defer cancel()
		if err := out.Flush(c); err != nil {
			return err
		}
		flushes.Add(1)
		src.Done(p.Merged, p.Complete)
		if kc.Flushed != nil {
			kc.Flushed(stream.Stats())
		}
		return nil
	}
	flushErr := make(chan error, 1)
	flushCtx, stopFlush := context.WithCancel(context.Background())
	go func() {
		err := redissink.RunFunc(flushCtx, every, flush)
		if errors.Is(err, context.Canceled) {
			err = nil
		}
		if err != nil {
			stop() // nowhere to write: end the feed, drain, fail
		}
		flushErr <- err
	}()

	start := time.Now()
	var interrupted bool
	perr := <-eng.Produce(func() error {
		lastFlush := time.Now()
		for {
			// A steady trickle never leaves FillSome waiting KafkaLinger:
			// hand on the partial task at least every KafkaLinger anyway.
			if now := time.Now(); now.Sub(lastFlush) >= KafkaLinger {
				lastFlush = now
				if err := stream.Flush(); err != nil {
					return err
				}
			}
			b, err := stream.Buffer()
			if err != nil {
				return err
			}
			lctx, cancel := context.WithTimeout(runCtx, KafkaLinger)
			n, err := src.FillSome(lctx, b)
			cancel()
			if n > 0 {
				if cerr := stream.Commit(n); cerr != nil {
					return cerr
				}
			}
			switch {
			case err == nil:
			case errors.Is(err, io.EOF):
				return nil
			case runCtx.Err() != nil:
				interrupted = ctx.Err() != nil
				return nil
			case lctx.Err() != nil:
				// Nothing new for KafkaLinger: hand on the partial task.
				lastFlush = time.Now()
				if err := stream.Flush(); err != nil {
					return err
				}
			default:
				return err
			}
		}
	})
	stats, cerr := eng.CloseAll()
	stopFlush()
	ferr := <-flushErr
	res.Stats, res.Seconds, res.Interrupted = stats[0], time.Since(start).Seconds(), interrupted
	if err := errors.Join(perr, cerr); err != nil {
		return res, err
	}
	if ferr != nil {
		return res, ferr
	}
	// The drained windows: written with a context of their own, so that an
	// interrupted run still writes what it counted.
	lastCtx, cancel := context.WithTimeout(context.Background(), flushBound)
	defer cancel()
	if err := flush(lastCtx); err != nil {
		return res, err
	}
	res.Windows, res.Flushes = rows.Load(), flushes.Load()
	// Closing commits the last offsets; the stats count that commit.
	err = closeSrc()
	res.Source = src.Stats()
	if err != nil {
		return res, err
	}
	return res, nil
}
