package pipeline

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/metrics"
	"github.com/saber-hx/saber-hx/sink"
	"github.com/saber-hx/saber-hx/source"
	"github.com/saber-hx/saber-hx/source/kafka"
	"github.com/saber-hx/saber-hx/sql"
	"github.com/saber-hx/saber-hx/strview"
	"github.com/saber-hx/saber-hx/workloads"
)

// sqlSource is one CREATE SOURCE being read: a file or standard input
// (binary tuples, or CSV or JSON records decoded by package source), a
// workload's generator, a Kafka topic, or what the embedding program
// attached (a SourceFunc, or a reader of records). Its tuples go to every
// stream that reads it.
type sqlSource struct {
	src     *sql.Source
	name    string           // the input in messages: its path, or "standard input"
	file    *os.File         // a file source's
	r       io.Reader        // the bytes: the file, a pollable standard input, an attached reader
	live    bool             // r delivers records as they come (standard input): hand on what came
	restore func()           // undoes Pollable
	records *source.Reader   // csv, json
	pool    *parallelDecoder // csv, json from a file or a reader, with more than one worker
	kafka   *kafka.Source    // connector = 'kafka'
	gen     workloads.Generator
	nex     *nexmarkFeed // connector = 'nexmark'
	val     *validator   // Options.Validate: keeps what is fed
	// proc is the offset of the processing-time column (PROCTIME()), -1
	// for none; lastProc the last time stamped, which the next does not
	// go below (a wall clock stepped back).
	proc     int
	lastProc int64
	fn       SourceFunc      // attached by AttachSource
	failed   <-chan struct{} // the engine's Failed, set before the feed starts
	deadline time.Duration   // a generator's or a Kafka source's; 0: none
	ended    bool            // feedAll: the input ended (not a stop: a duration, a signal)
	tuples   uint64          // tuples fed
	fed      atomic.Uint64   // tuples, for Job.Fed from other goroutines
	// dicts are the source's dictionary-encoded columns
	// (sql.Source.DictNumbers; nil: none) and their dictionary, the
	// queries' too; dictCache is encodeDicts', for tuples no decoder made.
	dicts     *kernels.DictColumns
	dictCache *strview.DictCache
	// first is the stream the records are decoded into, set before the
	// first read: its string heap holds their long strings (heapStrings).
	first *engine.Stream
	ckpt  *checkpointer // Options.CheckpointDir: takes checkpoints between reads
	// closer is the reader given to AttachReader where it is an
	// io.Closer: closing it ends a blocked Read of a reader without read
	// deadlines (interrupt).
	closer io.Closer
}

// kafkaShare is what of a topic a Kafka source reads: the partitions p
// with p mod instances = instance, from a checkpoint's positions where
// resume is non-nil (then the assignment is static).
type kafkaShare struct {
	instance, instances int
	resume              map[int32]kafka.Position
}

// readDictColumns makes the queries that read a source's tuples as its
// decoders write them group by the numbers of its dictionary-encoded
// columns (sql.Source.DictQuery, engine.Spec.DictColumns).
func (j *Job) readDictColumns() {
	for i, q := range j.prog.Queries {
		for _, ss := range j.sources {
			if ss.dicts != nil && ss.src.DictQuery(q) {
				j.specs[i].DictColumns = ss.dicts
			}
		}
	}
}

// dict is the dictionary of the source's encoded columns (nil: none).
func (s *sqlSource) dict() *strview.Dict {
	if s.dicts == nil {
		return nil
	}
	return s.dicts.Dict
}

// openSources opens every source before anything runs, so that a missing
// file is reported first.
func (j *Job) openSources() error {
	stdin := ""
	for _, s := range j.prog.Sources {
		attached := j.p.feeds[s.Name] != nil || j.p.reads[s.Name] != nil
		if !attached && (s.Connector == "stdin" || s.Connector == "file" && sink.IsStdin(s.Path)) {
			if stdin != "" {
				// Each would read an arbitrary share of its records.
				return usagef("sources %s and %s both read standard input: one source may", stdin, s.Name)
			}
			stdin = s.Name
		}
		ss := &sqlSource{src: s, name: s.Path, restore: func() {}, deadline: j.opts.Duration, proc: -1}
		if len(s.DictNumbers) > 0 {
			// One dictionary for the run, which the source's decoders and
			// the queries that group by its columns share.
			ss.dicts = &kernels.DictColumns{Dict: strview.NewDict(), Numbers: s.DictNumbers}
		}
		if s.ProcTime != "" {
			a, err := s.Schema.Lookup(s.ProcTime)
			if err != nil {
				return fmt.Errorf("source %s: the processing time %s: %w", s.Name, s.ProcTime, err)
			}
			ss.proc = a.Offset
		}
		j.sources = append(j.sources, ss)
		if fn := j.p.feeds[s.Name]; fn != nil {
			ss.name, ss.fn = "source "+s.Name, fn
			continue
		}
		switch r := j.p.reads[s.Name]; {
		case r != nil:
			ss.name, ss.r = "the reader of source "+s.Name, r
			ss.closer, _ = r.(io.Closer)
		case s.Connector == "generator":
			w, err := workloads.Lookup(s.Workload)
			if err != nil {
				return usagef("source %s: %v", s.Name, err)
			}
			p := workloads.DefaultParams()
			p.TuplesPerMs = s.TuplesPerMs
			if s.SeedSet {
				p.Seed = s.Seed
			}
			if ss.gen, err = w.NewGenerator(p); err != nil {
				return usagef("source %s: %v", s.Name, err)
			}
			if ss.deadline == 0 {
				ss.deadline = DefaultGeneratorDuration
			}
			continue
		case s.Connector == "stdin":
			ss.name, ss.live = "standard input", true
			ss.r, ss.restore = source.Pollable(os.Stdin)
		case s.Connector == "file":
			f, err := os.Open(s.Path)
			if err != nil {
				return usagef("source %s: %v", s.Name, err)
			}
			ss.file, ss.r = f, f
		case s.Connector == "kafka":
			if err := ss.openKafka(j.log, j.share, j.opts.StopAtEnd); err != nil {
				return err
			}
			continue
		case s.Connector == "nexmark":
			f, err := newNexmarkFeed(s.Nexmark, s.NexmarkTable, s.Schema.TupleSize, j.opts.NexmarkBundle)
			if err != nil {
				return usagef("source %s: %v", s.Name, err)
			}
			ss.nex, ss.name = f, "nexmark table "+s.NexmarkTable.String()
			if ss.deadline == 0 && (s.Nexmark.Events == 0 || f.bundle != nil) {
				ss.deadline = DefaultGeneratorDuration
			}
			continue
		default:
			return usagef("source %s: connector %q has no input: attach one (AttachSource, AttachReader)", s.Name, s.Connector)
		}
		if s.Format == "csv" || s.Format == "json" {
			if !ss.live && j.opts.Engine.Workers > 1 {
				// Decoding grows with the cores: one decoder per worker.
				p, err := newParallelDecoder(s, ss.name, ss.dict(), ss.r, j.opts.Engine.Workers, decodeBlockSize)
				if err != nil {
					return usagef("source %s: %v", s.Name, err)
				}
				ss.pool = p
				continue
			}
			d, err := newDecoder(s, ss.name, decoderMemory{dict: ss.dict(), strings: ss.heapStrings})
			if err != nil {
				return usagef("source %s: %v", s.Name, err)
			}
			ss.records = source.NewReader(ss.r, d, 0)
		}
	}
	return nil
}

// decoderMemory is where a decoder's strings go: its dictionary-encoded
// columns into dict (through caches where set: source.Options.DictCaches),
// the long strings of its other VARCHAR columns into the memory strings
// gives, or, with refInput, those that need no unescaping nowhere: their
// views point into the input (source.Options.RefInput).
type decoderMemory struct {
	dict     *strview.Dict
	caches   source.DictCaches
	strings  func(n int) ([]byte, error)
	refInput bool
	// continues: the decoder's text does not start the input (a pool's
	// block after the first, without a header before it).
	continues bool
}

// newDecoder is the record decoder of a csv or json source: its columns
// where the compiler laid them out, its strings where m says.
func newDecoder(s *sql.Source, input string, m decoderMemory) (source.Decoder, error) {
	l, err := s.Layout(m.dict)
	if err != nil {
		return nil, err
	}
	onErr, err := source.ParseOnError(s.OnError)
	if err != nil {
		return nil, err
	}
	o := source.Options{Input: input, OnError: onErr, Strings: m.strings, DictCaches: m.caches, RefInput: m.refInput, Continues: m.continues}
	if s.Format == "csv" {
		return source.NewCSVDecoder(l, source.CSVOptions{Options: o, Header: s.Header})
	}
	return source.NewJSONDecoder(l, source.JSONOptions{Options: o})
}

// openKafka opens a kafka source: its records decoded as the source's
// format (binary: the record is the tuple), the event time at offset 0 as
// every source's. With stopAtEnd it reads each partition to the end it had
// at the start (ysb --source kafka --stop-at-end).
func (s *sqlSource) openKafka(stderr io.Writer, share kafkaShare, stopAtEnd bool) error {
	src := s.src
	s.name = "kafka topic " + src.Topic
	start := kafka.Earliest
	if src.Start == "latest" {
		start = kafka.Latest
	}
	cfg := kafka.Config{Brokers: src.Brokers, Topic: src.Topic, Group: src.Group, Start: start, IdleTimeout: src.IdleTimeout, Fetchers: src.Fetchers, Security: src.KafkaSecurity,
		ReadUncommitted: src.IsolationLevel == "read_uncommitted",
		TupleSize:       src.Schema.TupleSize, Logger: func(format string, args ...any) {
			fmt.Fprintf(stderr, "saber-hx: warning: source %s: %s\n", src.Name, fmt.Sprintf(format, args...))
		},
		Instance: share.instance, Instances: share.instances, Resume: share.resume, StopAtEnd: stopAtEnd}
	switch src.KafkaCommitted() {
	case "ignore":
		cfg.Committed = kafka.IgnoreCommitted
	case "require":
		cfg.Committed = kafka.RequireCommitted
	}
	if src.Format == "binary" {
		onErr, err := source.ParseOnError(src.OnError)
		if err != nil {
			return usagef("source %s: %v", src.Name, err)
		}
		cfg.Binary, cfg.OnError = true, onErr
	} else {
		// The fetchers decode records too, each with a decoder of its
		// own over the same dictionary; those with long strings are left
		// to FillSome's, whose strings wait in the source's memory (each
		// partition's) until the next FillSome: feedAll copies them into
		// the streams' heaps as it commits (CommitCopy).
		cfg.NewDecoder = func(strings func(int) ([]byte, error)) (source.Decoder, error) {
			return newDecoder(src, s.name, decoderMemory{dict: s.dict(), strings: strings})
		}
		d, err := cfg.NewDecoder(func(n int) ([]byte, error) { return s.kafka.Strings(n) })
		if err != nil {
			return usagef("source %s: %v", src.Name, err)
		}
		cfg.Decoder = d
	}
	// Open only checks the brokers and the topic: give it a bound.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	k, err := kafka.Open(ctx, cfg)
	if err != nil {
		return fmt.Errorf("source %s: %w", src.Name, err)
	}
	s.kafka = k
	return nil
}

// stampProcTime writes the processing time, the wall clock's milliseconds
// since the epoch (UTC), into the PROCTIME() column of tuples: one reading
// of the clock for a read's tuples, never below the last, so that
// processing-time windows see their times in order.
func (s *sqlSource) stampProcTime(tuples []byte) {
	if s.proc < 0 {
		return
	}
	now := max(time.Now().UnixMilli(), s.lastProc)
	s.lastProc = now
	ts := s.src.Schema.TupleSize
	for o := s.proc; o+8 <= len(tuples); o += ts {
		binary.LittleEndian.PutUint64(tuples[o:], uint64(now))
	}
}

// heapStrings is a file's or standard input's Options.Strings: the records
// are decoded straight into the first stream's ring (feedAll), so their
// long strings go to that stream's heap, freed with the task that carries
// them; Write copies them into the other streams' heaps.
func (s *sqlSource) heapStrings(n int) ([]byte, error) {
	if s.first == nil {
		return nil, fmt.Errorf("source %s: strings decoded before the source has a stream", s.src.Name)
	}
	b, err := s.first.Strings(n)
	if errors.Is(err, engine.ErrStringsFull) {
		// The tuples decoded so far hold the heap: feedAll commits them.
		err = fmt.Errorf("%w: %w", source.ErrStringsLater, err)
	}
	return b, err
}

// kafkaCounts are a Kafka source's counters as the metrics server reads
// them: records, bytes and malformed, and each partition's lag.
func kafkaCounts(k *kafka.Source) metrics.SourceStats {
	return metrics.SourceFunc(func() metrics.SourceCounts {
		st := k.Stats()
		c := metrics.SourceCounts{Records: uint64(st.Records), Bytes: uint64(st.Bytes), Malformed: uint64(st.Malformed)}
		for _, p := range st.Partitions {
			if p.High >= 0 && p.Next >= 0 {
				c.Lag = append(c.Lag, metrics.PartitionLag{Partition: p.Partition, Lag: p.High - p.Next})
			}
		}
		return c
	})
}

func (j *Job) closeSources() {
	for _, s := range j.sources {
		if s.kafka != nil {
			if err := s.kafka.Close(); err != nil {
				fmt.Fprintf(j.log, "saber-hx: warning: source %s: %v\n", s.src.Name, err)
			}
		}
		s.restore()
		if s.nex != nil {
			s.nex.close()
		}
		if s.pool != nil {
			if s.closer != nil && !s.ended {
				// The pool's reading goroutine may wait in a Read of the
				// caller's reader (Close without Run, or a feed that
				// failed): Close waits for it.
				_ = s.closer.Close()
			}
			s.pool.Close()
		}
		if s.file != nil {
			s.file.Close()
		}
	}
}

// malformed is the records a csv or json source skipped (on_error = 'skip').
func (s *sqlSource) malformed() uint64 {
	if s.kafka != nil {
		return uint64(s.kafka.Stats().Malformed)
	}
	if s.pool != nil {
		return uint64(s.pool.Malformed())
	}
	if s.records == nil {
		return 0
	}
	return uint64(s.records.Decoder().Malformed())
}

// feed reads the source a task's worth at a time into every stream, until
// the input ends (a generator, or a Kafka source with a deadline: its
// duration) or ctx is cancelled. A blocked read of standard input (or a
// FIFO) is ended on cancellation through its read deadline.
func (s *sqlSource) feed(ctx context.Context, streams []*engine.Stream, chunk int) error {
	engine.SameProducer(streams...)
	var err error
	if s.fn != nil {
		err = s.fn(ctx, &TupleWriter{s: s, streams: streams, stopped: ctx.Done()})
		switch {
		case err == nil, errors.Is(err, ErrSourceStopped) && ctx.Err() != nil:
			err = s.flushAll(streams)
			s.ended = ctx.Err() == nil // returned of itself, not stopped
		case !isClosed(s.failed):
			// The caller's error, named as the source's. Not where the
			// engine failed: then it is likely the engine's error, which
			// a Write returned, and the run's error (an output's).
			err = s.funcError(err)
		}
	} else {
		err = s.feedAll(ctx, streams, chunk)
	}
	if err == nil && s.ckpt != nil {
		// The run ends (its duration, a signal, the input's end): a last
		// checkpoint of the open windows, before the drain emits them as
		// they stand. Where the input goes on (a stop, not its end: the
		// run that resumes emits them complete) Redis is not written
		// them (Kafka's transaction is aborted, a file's part replaced by
		// the run that resumes).
		if err = s.ckpt.take(streams); err == nil && !s.ended {
			s.ckpt.j.holdRedis()
		}
	}
	if errors.Is(err, errRunFailed) {
		return nil // the engine's error is the run's
	}
	return err
}

// funcError is err, which the source's SourceFunc returned, naming the
// source where its text does not already (the TupleWriter's errors do).
func (s *sqlSource) funcError(err error) error {
	prefix := "source " + s.src.Name + ": "
	if strings.HasPrefix(err.Error(), prefix) {
		return err
	}
	return fmt.Errorf("%s%w", prefix, err)
}

// isClosed says whether c is closed (nil: never).
func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func (s *sqlSource) flushAll(streams []*engine.Stream) error {
	for _, st := range streams {
		if err := st.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// feedAll is the one loop that feeds every kind of source: each read goes
// straight into the first stream's ring (Buffer, then Commit: no copy on
// the way for the usual single reader), and is copied to the other
// streams that read the source.
func (s *sqlSource) feedAll(ctx context.Context, streams []*engine.Stream, chunk int) error {
	if s.deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.deadline)
		defer cancel()
	}
	if s.r != nil {
		stop := context.AfterFunc(ctx, s.interrupt)
		defer stop()
	}
	ts := s.src.Schema.TupleSize
	if s.gen != nil && s.src.Rate > 0 {
		// A chunk of at most a tenth of a second's tuples, so that the
		// pace is even.
		chunk = min(chunk, max(int(s.src.Rate/10), 1)*ts)
	}
	chunk = max(chunk/ts, 1) * ts
	first, rest := streams[0], streams[1:]
	s.first = first
	start := time.Now()
	var offset int64
	lastFlush := start
	// A live input's tuples go out within kafka.Linger of their arrival,
	// as a topic's do: a read that waits longer with tuples committed is
	// ended by its deadline, and the partial task flushed.
	var linger source.ReadDeadliner
	if d, ok := s.r.(source.ReadDeadliner); ok && s.live {
		linger = d
	}
	pending := time.Time{} // when tuples were first committed since the last flush (zero: none)
	for ctx.Err() == nil {
		buf, err := first.Buffer()
		if err != nil {
			return err
		}
		if linger != nil && !pending.IsZero() {
			_ = linger.SetReadDeadline(pending.Add(kafka.Linger))
			if ctx.Err() != nil {
				return nil // interrupt's deadline, which this one replaced
			}
		}
		n, err := s.next(ctx, buf[:min(len(buf), chunk)], offset)
		if linger != nil && errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() == nil {
			err = nil // the linger's: flush below, then read on without a deadline
			if n == 0 {
				if ferr := s.flushAll(streams); ferr != nil {
					return ferr
				}
				pending = time.Time{}
				_ = linger.SetReadDeadline(time.Time{})
				if ctx.Err() != nil {
					return nil
				}
				continue
			}
		}
		if n > 0 {
			// Stamped before the copies: every stream sees the time.
			s.stampProcTime(buf[:n])
			// A replayed bundle's strings stay in the bundle: the streams
			// point at them, as the first does (Commit, not CommitCopy).
			shared := s.nex != nil && !s.nex.copies()
			for _, st := range rest {
				write := st.Write
				if shared {
					write = st.WriteShared
				}
				if werr := write(buf[:n]); werr != nil {
					return werr
				}
			}
			if s.val != nil {
				s.val.fed(s.src, buf[:n])
			}
			commit := first.Commit
			if (s.nex != nil && s.nex.copies()) || s.kafka != nil || s.pool != nil {
				commit = func(n int) error { return first.CommitCopy(buf[:n]) }
			}
			if cerr := commit(n); cerr != nil {
				return cerr
			}
			if s.nex != nil {
				s.nex.committed()
			}
			offset += int64(n)
			s.tuples += uint64(n / ts)
			s.fed.Store(s.tuples)
			if linger != nil && pending.IsZero() {
				pending = time.Now()
			}
		}
		if s.kafka != nil {
			if err == errLinger {
				err = nil
			}
			if s.ckpt != nil && s.ckpt.due() {
				if cerr := s.ckpt.take(streams); cerr != nil {
					return cerr
				}
			}
			// A live topic's records go out within kafka.Linger of their
			// arrival, in tasks as full as the rate makes them.
			if now := time.Now(); now.Sub(lastFlush) >= kafka.Linger {
				lastFlush = now
				if ferr := s.flushAll(streams); ferr != nil {
					return ferr
				}
			}
		}
		if r := s.src.Rate; s.gen != nil && r > 0 {
			// Paced: tuple k goes out no earlier than k/rate after the start.
			due := start.Add(time.Duration(float64(s.tuples) / float64(r) * float64(time.Second)))
			select {
			case <-time.After(time.Until(due)):
			case <-ctx.Done():
			}
		}
		if err == io.EOF || ((s.gen != nil || s.nex != nil) && ctx.Err() != nil) {
			s.ended = err == io.EOF
			return nil
		}
		if s.kafka != nil && ctx.Err() != nil {
			return nil // Options.Duration over, or interrupted
		}
		if errors.Is(err, source.ErrStringsLater) && n > 0 {
			continue // committed: the record is decoded again
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil // the read was ended by the interrupt
			}
			return err
		}
	}
	return nil
}

// interrupt ends a Read of the source's reader that may wait for ever (a
// pipe, a socket, standard input), once the feed's context has ended (a
// cancel, Options.Duration, another feed's or an output's failure): by its
// read deadline where it has one, else, for a reader given to AttachReader,
// by its Close. feedAll takes the read's error for the interruption, as
// the context has ended. A reader with neither is ended by its caller.
func (s *sqlSource) interrupt() {
	if d, ok := s.r.(source.ReadDeadliner); ok {
		if d.SetReadDeadline(time.Now()) == nil || s.closer == nil {
			return
		}
		// An *os.File the runtime does not poll takes no deadline.
	}
	if s.closer != nil {
		_ = s.closer.Close()
	}
}

// errLinger is next's: the Kafka source had nothing for kafka.Linger.
var errLinger = errors.New("linger")

// next fills buf with whole tuples: n bytes, io.EOF at the end.
func (s *sqlSource) next(ctx context.Context, buf []byte, offset int64) (int, error) {
	ts := s.src.Schema.TupleSize
	switch {
	case s.kafka != nil:
		// A topic with nothing new blocks FillSome: end the wait after
		// kafka.Linger, so that feed flushes the partial task.
		lctx, cancel := context.WithTimeout(ctx, kafka.Linger)
		n, err := s.kafka.FillSome(lctx, buf)
		// Read before cancel, which sets it: the end of the topic
		// (StopAtEnd's io.EOF) is not a linger.
		lingered := err != nil && err != io.EOF && ctx.Err() == nil && lctx.Err() != nil
		cancel()
		if lingered {
			return n, errLinger
		}
		var se *source.Error
		if errors.As(err, &se) {
			return n, usageError{err}
		}
		return n, err
	case s.gen != nil:
		s.gen.Fill(buf, uint64(offset)/uint64(ts))
		return len(buf), nil
	case s.nex != nil:
		return s.nex.fill(buf)
	case s.pool != nil:
		n, err := s.pool.Fill(buf)
		var se *source.Error
		if errors.As(err, &se) {
			return n, usageError{err}
		}
		return n, err
	case s.records != nil:
		fill := s.records.Fill
		if s.live {
			// Standard input is live: hand on what has come so far rather
			// than wait for a whole chunk.
			fill = s.records.FillSome
		}
		n, err := fill(buf)
		var se *source.Error
		if errors.As(err, &se) {
			return n, usageError{err}
		}
		return n, err
	}
	n, err := io.ReadFull(s.r, buf)
	if err == io.ErrUnexpectedEOF || (err == io.EOF && n > 0) {
		err = io.EOF
	}
	if rem := n % ts; rem != 0 {
		if err == io.EOF {
			return n - rem, usagef("%s: %d trailing bytes at byte offset %d: not a whole %d-byte tuple", s.name, rem, offset+int64(n-rem), ts)
		}
		return n - rem, err
	}
	if err != nil && err != io.EOF {
		return n, fmt.Errorf("read %s at byte %d: %w", s.name, offset+int64(n), err)
	}
	return n, err
}
