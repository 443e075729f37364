package ysb

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/saber-hx/saber-hx/internal/security"
	"github.com/saber-hx/saber-hx/sink"
	"github.com/saber-hx/saber-hx/source/kafka"
)

// ProduceConfig configures Produce.
type ProduceConfig struct {
	Brokers []string
	Topic   string
	// Security secures the connections to the brokers (TLS, SASL; the
	// zero value is PLAINTEXT). Brokers that refuse it end Produce at
	// once with a *security.Error.
	Security security.Kafka
	// Gen is the generator of the events (its campaigns are the ads that
	// setup wrote); its StartMs and TuplesPerMs are not used: an event's
	// time is the wall clock.
	Gen GenConfig
	// Rate is the events per second, paced per batch of PaceEvery.
	Rate int
	// Duration ends the run (0: until ctx ends).
	Duration time.Duration
	// SkewMs: each event's time is the wall clock at send plus a uniform
	// offset in [-SkewMs, +SkewMs] (the original generator's -w).
	SkewMs int64
	// LateFraction of the events (0 to 1) are late: their time is a
	// window (WindowMs) or up to two in the past.
	LateFraction float64
	// Partitions: the records go round robin over partitions 0..P-1 of
	// the topic; 0 is every partition it has. A missing topic is created
	// with P partitions (1 for 0).
	Partitions int
	// Log, when set, receives every event acknowledged, one line each:
	// the partition in decimal, a tab, the event's JSON (AppendEventJSON),
	// "\n". Per partition the lines are in offset order (ReadEventLog).
	Log io.Writer
	// LogFile, when set, is a file that receives the log in place of
	// Log, replaced only once Produce ends without an error (an
	// interrupted run's too: it holds every event the brokers
	// acknowledged, which is what a run may have read).
	LogFile string
	// Seed seeds the skew and lateness draws (0: 1).
	Seed uint64
	// Progress, when set, is called about once a second.
	Progress func(ProduceProgress)
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// PaceEvery is the pacing interval: each batch sends the events due since
// the last one, so that the rate is steady without a timer per event.
const PaceEvery = 5 * time.Millisecond

// ProduceProgress is a progress report.
type ProduceProgress struct {
	Elapsed time.Duration
	Sent    int64 // events handed to the client
	Acked   int64 // events the brokers acknowledged
	Rate    float64
}

// ProduceResult summarises a Produce run.
type ProduceResult struct {
	Events       int64   // events acknowledged
	Late         int64   // events sent made late on purpose (LateFraction)
	Failed       int64   // events the client could not produce
	Seconds      float64 // from the first event to the last acknowledgement
	Rate         float64 // achieved: Events / Seconds
	PerPartition []int64 // events acknowledged per partition
	Interrupted  bool    // ctx ended before Duration
}

// Produce sends generated events as the original benchmark's JSON to a
// Kafka topic at a steady rate, until Duration or ctx ends (then it waits
// for what is in flight). Records have no key: the partition is chosen
// here, round robin, so that a log line can name it.
func Produce(ctx context.Context, cfg ProduceConfig) (ProduceResult, error) {
	if cfg.LogFile == "" {
		return produceEvents(ctx, cfg)
	}
	f, err := sink.Create(cfg.LogFile)
	if err != nil {
		return ProduceResult{}, err
	}
	defer f.Abort()
	cfg.Log = f
	res, err := produceEvents(ctx, cfg)
	if err != nil {
		return res, err
	}
	return res, f.Commit()
}

func produceEvents(ctx context.Context, cfg ProduceConfig) (ProduceResult, error) {
	var res ProduceResult
	if cfg.Rate <= 0 {
		return res, fmt.Errorf("produce: rate %d events/s: must be positive", cfg.Rate)
	}
	if cfg.LateFraction < 0 || cfg.LateFraction > 1 {
		return res, fmt.Errorf("produce: late fraction %v: want 0 to 1", cfg.LateFraction)
	}
	if cfg.SkewMs < 0 {
		return res, fmt.Errorf("produce: skew %d ms: must not be negative", cfg.SkewMs)
	}
	g, err := NewGenerator(cfg.Gen)
	if err != nil {
		return res, fmt.Errorf("produce: %w", err)
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	where := fmt.Sprintf("kafka %s (brokers %v)", cfg.Topic, cfg.Brokers)
	cl, guard, err := cfg.Security.Connect(ctx, cfg.Brokers, kgo.DefaultProduceTopic(cfg.Topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(time.Millisecond))
	if err != nil {
		return res, fmt.Errorf("%s: %w", where, err)
	}
	defer cl.Close()
	tctx, unbind := guard.Bind(ctx)
	nParts, err := ensureTopic(tctx, cl, cfg.Topic, cfg.Partitions)
	unbind()
	if err != nil {
		return res, fmt.Errorf("%s: %w", where, guard.Err(err))
	}
	res.PerPartition = make([]int64, nParts)

	var (
		mu       sync.Mutex // the log, the counts and the first error
		logw     *bufio.Writer
		firstErr error
		acked    int64
		lastAck  time.Time
	)
	if cfg.Log != nil {
		logw = bufio.NewWriterSize(cfg.Log, 1<<16)
	}
	var logLine []byte
	done := func(r *kgo.Record, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			res.Failed++
			if firstErr == nil {
				firstErr = fmt.Errorf("%s: produce to partition %d: %w", where, r.Partition, err)
			}
			return
		}
		acked++
		res.PerPartition[r.Partition]++
		lastAck = now()
		if logw != nil && firstErr == nil {
			logLine = strconv.AppendInt(logLine[:0], int64(r.Partition), 10)
			logLine = append(logLine, '\t')
			logLine = append(logLine, r.Value...)
			logLine = append(logLine, '\n')
			if _, err := logw.Write(logLine); err != nil {
				firstErr = fmt.Errorf("produce: write log: %w", err)
			}
		}
	}

	seed := cfg.Seed
	if seed == 0 {
		seed = 1
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var late int64
	start := now()
	var stop <-chan time.Time
	if cfg.Duration > 0 {
		tm := time.NewTimer(cfg.Duration)
		defer tm.Stop()
		stop = tm.C
	}
	tick := time.NewTicker(PaceEvery)
	defer tick.Stop()
	nextReport := time.Second
	var sent int64
	var tuple [TupleSize]byte
	part := int32(0)
	var lastSent int64
	var lastT time.Duration
loop:
	for {
		el := now().Sub(start)
		if cfg.Duration > 0 && el > cfg.Duration {
			el = cfg.Duration
		}
		due := int64(el.Seconds()*float64(cfg.Rate)) + 1 // the first event at once
		if cfg.Duration > 0 {
			due = min(due, int64(cfg.Duration.Seconds()*float64(cfg.Rate)))
		}
		if n := due - sent; n > 0 {
			// One arena and one slice of records per batch, not per event.
			arena := make([]byte, 0, int(n)*EventJSONMaxLen)
			recs := make([]kgo.Record, n)
			ms := now().UnixMilli()
			for i := range recs {
				g.Fill(tuple[:], uint64(sent))
				ts := ms
				if cfg.SkewMs > 0 {
					ts += rng.Int64N(2*cfg.SkewMs+1) - cfg.SkewMs
				}
				r := &recs[i]
				if cfg.LateFraction > 0 && rng.Float64() < cfg.LateFraction {
					ts = ms - WindowMs - rng.Int64N(WindowMs)
					late++
				}
				binary.LittleEndian.PutUint64(tuple[OffEventTime:], uint64(ts))
				off := len(arena)
				arena = AppendEventJSON(arena, tuple[:])
				r.Value = arena[off:len(arena):len(arena)]
				r.Partition = part
				if part++; int(part) == nParts {
					part = 0
				}
				// Not ctx: an interrupt stops the sending, and what was
				// handed to the client is still delivered (and logged).
				cl.Produce(context.Background(), r, done)
				sent++
			}
		}
		if cfg.Progress != nil && el >= nextReport {
			mu.Lock()
			a := acked
			mu.Unlock()
			cfg.Progress(ProduceProgress{Elapsed: el, Sent: sent, Acked: a, Rate: float64(sent-lastSent) / (el - lastT).Seconds()})
			lastSent, lastT = sent, el
			nextReport += time.Second
		}
		select {
		case <-ctx.Done():
			res.Interrupted = true
			break loop
		case <-stop:
			break loop
		case <-guard.Done(): // the brokers refused a connection
			break loop
		case <-tick.C:
		}
	}
	// What is in flight is waited for even on an interrupt, so that the log
	// holds every event the brokers have.
	flushCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	flushCtx, unbind = guard.Bind(flushCtx)
	defer unbind()
	ferr := cl.Flush(flushCtx)
	mu.Lock()
	defer mu.Unlock()
	res.Events, res.Late = acked, late
	if acked > 0 {
		res.Seconds = lastAck.Sub(start).Seconds()
		if res.Seconds > 0 {
			res.Rate = float64(acked) / res.Seconds
		}
	}
	if logw != nil {
		if err := logw.Flush(); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("produce: write log: %w", err)
		}
	}
	if f := guard.Failure(); f != nil {
		return res, fmt.Errorf("%s: %w", where, f)
	}
	if firstErr != nil {
		return res, firstErr
	}
	if ferr != nil {
		return res, fmt.Errorf("%s: flush: %w", where, ferr)
	}
	return res, nil
}

// ensureTopic returns the partitions to spread over: want (0: all the
// topic has), creating a missing topic with max(want, 1).
func ensureTopic(ctx context.Context, cl *kgo.Client, topic string, want int) (int, error) {
	adm := kadm.NewClient(cl)
	td, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("list topics: %w", err)
	}
	d, ok := td[topic]
	if !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
		n := max(want, 1)
		resp, err := adm.CreateTopic(ctx, int32(n), -1, nil, topic)
		if err == nil {
			err = resp.Err
		}
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return 0, fmt.Errorf("create topic with %d partitions: %w", n, err)
		}
		if err == nil {
			return n, nil
		}
		// Created meanwhile by another client (a consumer's
		// auto-creation): its metadata may lag behind.
		if d, _, err = kafka.WaitTopic(ctx, cl, adm, topic); err != nil {
			return 0, err
		}
	}
	if d.Err != nil {
		return 0, fmt.Errorf("topic metadata: %w", d.Err)
	}
	have := len(d.Partitions)
	if want == 0 {
		return have, nil
	}
	if want > have {
		return 0, fmt.Errorf("the topic has %d partitions, fewer than the %d asked for", have, want)
	}
	return want, nil
}
