package pipeline

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/internal/security"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/sink"
	kafkasink "github.com/saber-hx/saber-hx/sink/kafka"
	redissink "github.com/saber-hx/saber-hx/sink/redis"
	"github.com/saber-hx/saber-hx/sql"
	"github.com/saber-hx/saber-hx/strview"
	"github.com/saber-hx/saber-hx/temporal"
	"github.com/saber-hx/saber-hx/ysb"
)

// rowSink writes one query's output rows, as CSV with a header of the
// select list's names or as JSON (an object a line), to stdout or to a
// file (package sink: committed only when the run succeeds; under
// checkpoints a part per checkpoint, committed with it). It reads the
// engine's output tuples (for an aggregation one tuple per row, the window
// start first), so that every query shape goes one way: a file's or
// stdout's lines are formatted by the workers (Spec.Encoded: lines) and
// written in order (write); the other outputs take the tuples in order
// (Spec.Tuples: tuples).
//
// Rows may instead go to a Kafka topic (one record a row, its key the text
// of the key column) or to Redis (a hash a row, or YSB's layout). The
// merging worker writes rows and the run's flusher flushes from another
// goroutine: mu serialises them, per batch of tuples, not per row.
type rowSink struct {
	q      *sql.Query
	format string // "csv" or "json"
	where  string // the file, "stdout", "kafka topic T" or "redis ADDR"
	file   *sink.File
	parts  *sink.Parts // a file under --checkpoint-dir: a part per epoch
	part   *partitionedSink
	w      *bufio.Writer // nil for kafka and redis
	cols   []sinkColumn
	size   int // output tuple size
	line   []byte

	mu     sync.Mutex
	fn     RowsFunc // OnRows: the rows go to the caller
	batch  Rows
	kafka  *kafkasink.Sink
	txn    *txnSink // kafka with --checkpoint-dir: transactions per checkpoint
	keyCol int      // kafka: the column whose text is the key; -1: none
	key    []byte
	hash   *redissink.Hash
	view   rowView // hash: the row being added
	ysbOut *redissink.YSB
	// ysb: the columns of the campaign, the window start and the count.
	campaign, start, count int
	// failed is the first flush's error: every later flush returns it.
	// A flush drops the rows it failed on (a Kafka transaction's, a
	// producer's), and a checkpoint after it, its flush passing, counted
	// them out: committed, they were lost.
	failed error
	// held: a checkpointed run took its last checkpoint, and a Redis
	// output drops the rows emitted after it (the drain's windows, as
	// they stand), which the run that resumes emits complete: Redis keeps
	// what is written, and a partial row that the complete one would not
	// overwrite (a HAVING it fails, a key from an aggregate) stayed.
	held bool
	// bound bounds a flush or an epoch's commit (0: flushTimeout): the
	// retry budget (--sink-retry-timeout) plus one write's time, so that
	// a server gone away for longer fails the run instead of hanging it.
	bound time.Duration
}

// rowView is a row as redissink reads it.
type rowView struct {
	s *rowSink
	t []byte
}

func (v *rowView) AppendColumn(dst []byte, col int) []byte { return v.s.text(dst, v.s.cols[col], v.t) }

// sinkColumn is one output column: where its value is in the tuple and
// how it is written.
type sinkColumn struct {
	name   string
	attr   query.Attribute
	uuid   bool
	labels []string
	// end: the window's end, the start (attribute 0) plus span, saturated
	// at math.MaxInt64 (a window that ends past it).
	end  bool
	span int64
}

// newRowSink: w nil for a sink that is not a stream of lines (kafka,
// redis), which the caller then sets up.
func newRowSink(q *sql.Query, format, where string, w io.Writer, f *sink.File) (*rowSink, error) {
	s := &rowSink{q: q, format: format, where: where, file: f, size: q.Output.TupleSize, keyCol: -1}
	s.view.s = s
	if w != nil {
		s.w = bufio.NewWriterSize(w, 64<<10)
	}
	for _, c := range q.Columns {
		sc := sinkColumn{name: c.Name, uuid: c.Type == "UUID", labels: c.Labels}
		if c.Kind == sql.WindowEnd {
			if q.Spec.Query == nil {
				return nil, fmt.Errorf("query %s: window_end without a window", q.Name)
			}
			sc.end, sc.span, sc.attr = true, q.Spec.Query.Window.Size, q.Output.Attrs[0]
		} else {
			if c.Attr < 0 || c.Attr >= len(q.Output.Attrs) {
				return nil, fmt.Errorf("query %s: column %s has no place in the output tuple", q.Name, c.Name)
			}
			sc.attr = q.Output.Attrs[c.Attr]
		}
		s.cols = append(s.cols, sc)
	}
	if format == "csv" && s.w != nil {
		for i, c := range s.cols {
			if i > 0 {
				s.line = append(s.line, ',')
			}
			s.line = appendCSVField(s.line, c.name)
		}
		s.line = append(s.line, '\n')
		if _, err := s.w.Write(s.line); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// tuples is the Spec.Tuples of a Go callback's, Kafka's or Redis' sink: b
// holds whole output tuples.
func (s *rowSink) tuples(b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fn != nil {
		s.batch = Rows{s: s, b: b[:len(b)/s.size*s.size]}
		err := s.fn(&s.batch)
		s.batch.b = nil
		return err
	}
	for off := 0; off+s.size <= len(b); off += s.size {
		t := b[off : off+s.size]
		switch {
		case s.kafka != nil || s.txn != nil:
			s.line = s.row(s.line[:0], t)
			var key []byte
			if s.keyCol >= 0 {
				s.key = s.text(s.key[:0], s.cols[s.keyCol], t)
				key = s.key
			}
			if s.txn != nil {
				s.txn.Append(key, s.line[:len(s.line)-1])
			} else {
				s.kafka.Append(key, s.line[:len(s.line)-1]) // a record, not a line
			}
		case s.held && s.hash != nil:
			return nil
		case s.hash != nil:
			s.view.t = t
			s.hash.Add(&s.view)
		case s.ysbOut != nil:
			var campaign [16]byte
			copy(campaign[:], s.bytes(s.cols[s.campaign], t))
			s.ysbOut.Add(campaign, s.int(s.cols[s.start], t), s.int(s.cols[s.count], t))
		default:
			// A file's or stdout's lines go through lines and write.
			panic(fmt.Sprintf("pipeline: query %s: rows of a sink of lines given as tuples", s.q.Name))
		}
	}
	return nil
}

// lines is the Spec.Encoded's Encode of a sink of lines (a file or
// stdout): tuples as CSV or JSON lines, appended to dst. It reads only its
// arguments and the sink's columns, which do not change: any worker runs
// it, any number at once.
func (s *rowSink) lines(dst, tuples []byte) []byte {
	for off := 0; off+s.size <= len(tuples); off += s.size {
		dst = s.row(dst, tuples[off:off+s.size])
	}
	return dst
}

// write is the Spec.Encoded's Write of a sink of lines: lines made by
// lines, in output order.
func (s *rowSink) write(lines []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.w.Write(lines); err != nil {
		return fmt.Errorf("write %s: %w", s.where, err)
	}
	return nil
}

// flush writes what the sink buffers: to the file or stdout, the broker
// (acknowledged) or Redis.
func (s *rowSink) flush(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed != nil {
		return s.failed
	}
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	var err error
	switch {
	case s.fn != nil:
	case s.txn != nil:
		err = s.txn.Flush(ctx)
	case s.kafka != nil:
		err = s.kafka.Flush(ctx)
	case s.hash != nil:
		err = s.hash.Flush(ctx)
	case s.ysbOut != nil:
		err = s.ysbOut.Flush(ctx)
	case s.part != nil:
		err = s.part.part.Flush()
	default:
		err = s.w.Flush()
	}
	if err != nil {
		s.failed = fmt.Errorf("write %s: %w", s.where, err)
		return s.failed
	}
	return nil
}

// bounded is ctx bounded by the sink's bound. A flush waits for the
// broker's acknowledgements or Redis' replies, holding the sink (and so
// the merging worker that writes to it): through an outage it waits, the
// engine held back, for up to the retry budget, and no longer.
func (s *rowSink) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	d := s.bound
	if d <= 0 {
		d = flushTimeout
	}
	return context.WithTimeout(ctx, d)
}

// close closes a kafka or redis sink's client.
func (s *rowSink) close() error {
	switch {
	case s.txn != nil:
		return s.txn.Close()
	case s.kafka != nil:
		return s.kafka.Close()
	case s.hash != nil:
		return s.hash.Close()
	case s.ysbOut != nil:
		return s.ysbOut.Close()
	}
	return nil
}

func (s *rowSink) bytes(c sinkColumn, t []byte) []byte {
	return t[c.attr.Offset : c.attr.Offset+c.attr.Size]
}

// int is an integer column's value (window_end's too).
func (s *rowSink) int(c sinkColumn, t []byte) int64 {
	b := s.bytes(c, t)
	var v int64
	if c.attr.Type == query.Int32 {
		v = int64(int32(binary.LittleEndian.Uint32(b)))
	} else {
		v = int64(binary.LittleEndian.Uint64(b))
	}
	if c.end {
		if v > math.MaxInt64-c.span {
			return math.MaxInt64
		}
		v += c.span
	}
	return v
}

// text appends column c of tuple t as plain text (no CSV quoting, no
// JSON string): a Kafka key, a Redis field.
func (s *rowSink) text(dst []byte, c sinkColumn, t []byte) []byte {
	return s.appendValue(dst, c, t, "text")
}

// row appends one tuple as a CSV or JSON line.
func (s *rowSink) row(dst, t []byte) []byte { return s.rowAs(dst, t, s.format) }

// rowAs appends one tuple as a line in format csv or json.
func (s *rowSink) rowAs(dst, t []byte, format string) []byte {
	json := format == "json"
	if json {
		dst = append(dst, '{')
	}
	for i, c := range s.cols {
		if i > 0 {
			dst = append(dst, ',')
		}
		if json {
			dst = appendJSONString(dst, c.name)
			dst = append(dst, ':')
		}
		dst = s.appendValue(dst, c, t, format)
	}
	if json {
		dst = append(dst, '}')
	}
	return append(dst, '\n')
}

// appendValue is value in format csv, json or text (as it is).
func (s *rowSink) appendValue(dst []byte, c sinkColumn, t []byte, format string) []byte {
	json := format == "json"
	if c.attr.IsNull(t) {
		// NULL: an empty CSV field, JSON's null, no text.
		if json {
			return append(dst, "null"...)
		}
		return dst
	}
	b := s.bytes(c, t)
	switch c.attr.Type {
	case query.Int32, query.Int64:
		v := s.int(c, t)
		switch {
		case c.labels != nil:
			if v >= 0 && v < int64(len(c.labels)) {
				return appendText(dst, c.labels[v], format)
			}
			return appendText(dst, strconv.FormatInt(v, 10), format) // a code no label has: its number
		case c.attr.Logical == query.Time:
			if json {
				dst = append(dst, '"')
				dst = temporal.AppendTimestamp(dst, v)
				return append(dst, '"')
			}
			return temporal.AppendTimestamp(dst, v)
		case c.attr.Logical == query.Boolean:
			if v != 0 {
				return append(dst, "true"...)
			}
			return append(dst, "false"...)
		}
		return strconv.AppendInt(dst, v, 10)
	case query.Float32, query.Float64:
		var f float64
		bits := 64
		switch {
		case c.attr.Type == query.Float32:
			f, bits = float64(math.Float32frombits(binary.LittleEndian.Uint32(b))), 32
		case c.attr.Logical == query.Real: // a REAL's value as a float64: printed as the float32
			f, bits = math.Float64frombits(binary.LittleEndian.Uint64(b)), 32
		default:
			f = math.Float64frombits(binary.LittleEndian.Uint64(b))
		}
		if json && (math.IsNaN(f) || math.IsInf(f, 0)) {
			dst = append(dst, '"')
			return append(query.AppendFloat(dst, f, bits), '"')
		}
		return query.AppendFloat(dst, f, bits)
	case query.String:
		return appendTextBytes(dst, strview.Bytes(b), format)
	}
	if c.uuid && len(b) == len(ysb.UUID{}) {
		var u [36]byte
		return appendTextBytes(dst, ysb.UUID(b).AppendCanonical(u[:0]), format)
	}
	return appendText(dst, `\x`+hex.EncodeToString(b), format)
}

// appendText appends a text value: quoted in JSON, a field in CSV.
func appendText(dst []byte, text, format string) []byte {
	switch format {
	case "json":
		return appendJSONString(dst, text)
	case "csv":
		return appendCSVField(dst, text)
	}
	return append(dst, text...)
}

// appendTextBytes is appendText of bytes.
func appendTextBytes(dst, text []byte, format string) []byte {
	switch format {
	case "json":
		return appendJSONString(dst, text)
	case "csv":
		return appendCSVField(dst, text)
	}
	return append(dst, text...)
}

// appendJSONString appends s as a JSON string: " and \ escaped, control
// characters as \n, \t, ... or \u00XX, every other byte as it is but an
// invalid UTF-8 sequence, which JSON cannot hold: U+FFFD.
func appendJSONString[S ~string | ~[]byte](dst []byte, s S) []byte {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			dst = append(dst, c)
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			var r rune
			var w int
			switch v := any(s).(type) {
			case string:
				r, w = utf8.DecodeRuneInString(v[i:])
			case []byte:
				r, w = utf8.DecodeRune(v[i:])
			}
			if r == utf8.RuneError && w == 1 {
				dst = append(dst, "\\ufffd"...)
			} else {
				dst = append(dst, s[i:i+w]...)
			}
			i += w
			continue
		}
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
		i++
	}
	return append(dst, '"')
}

// appendCSVField appends s, quoted where it holds a comma, a quote, a
// line break, or is empty (RFC 4180; "" doubled inside). An empty text is
// "": a NULL, which is no text, is the empty field, so that the two read
// back apart, and a row of one empty string is not an empty line, which
// CSV readers skip.
func appendCSVField[S ~string | ~[]byte](dst []byte, s S) []byte {
	quote := len(s) == 0
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == ',' || c == '"' || c == '\n' || c == '\r' {
			quote = true
			break
		}
	}
	if !quote {
		return append(dst, s...)
	}
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			dst = append(dst, '"')
		}
		dst = append(dst, s[i])
	}
	return append(dst, '"')
}

// openSinks opens every query's output: a RowsFunc attached (OnRows), a
// CREATE SINK's file, topic or Redis server, or Options.Stdout (or
// Options.Output) for a plain SELECT or a print table; a view without
// either, or a blackhole table, writes nowhere. At most one query may write to Options.Stdout.
func (j *Job) openSinks() error {
	retry := j.sinkRetry()
	j.specs = j.prog.Specs()
	j.sinks = make([]*rowSink, len(j.prog.Queries))
	toOutput := false // a query writes to Options.Output
	for i, q := range j.prog.Queries {
		if fn := j.p.rows[q.Name]; fn != nil {
			s, err := newRowSink(q, "csv", "a Go callback", nil, nil)
			if err != nil {
				return err
			}
			s.fn = fn
			j.sinks[i] = s
			j.specs[i].Tuples = s.tuples
			continue
		}
		if q.Sink == nil {
			continue
		}
		if q.Sink.Connector == "blackhole" {
			// Flink's blackhole: the rows are made, counted and dropped.
			j.specs[i].Tuples = func([]byte) error { return nil }
			continue
		}
		path, format := q.Sink.Path, q.Sink.Format
		if q.Sink.Connector == "stdout" || q.Sink.Connector == "print" {
			path = j.opts.Output
			toOutput = true
		}
		if format == "" {
			format = "csv"
		}
		service := q.Sink.Connector == "kafka" || q.Sink.Connector == "redis"
		if !service {
			if err := j.claimFile(q, path); err != nil {
				return err
			}
		}
		var s *rowSink
		var err error
		switch {
		case service:
			var g *txnGroup
			if g, err = j.txnGroupOf(q, retry); err != nil {
				return err
			}
			s, err = openServiceSink(q, g, retry)
			if g != nil && err == nil {
				g.outs = append(g.outs, s)
			}
		case q.Sink.Partition != nil:
			s, err = j.openPartitionedSink(q, path, format)
		case path == "-":
			s, err = newRowSink(q, format, "stdout", sink.StdoutWriter(j.opts.Stdout), nil)
		case j.ckpt != nil:
			s, err = j.openPartsSink(q, path, format)
		default:
			var f *sink.File
			if f, err = sink.Create(path, j.inputs()...); err != nil {
				return fmt.Errorf("query %s: %w", q.Name, err)
			}
			j.sinks[i] = &rowSink{file: f} // aborted on failure
			s, err = newRowSink(q, format, path, f, f)
		}
		if err != nil {
			return err
		}
		s.bound = retry.flushBound()
		j.sinks[i] = s
		if s.part != nil {
			// The workers format the rows and their partitions, the
			// ordered stage hands their buffer to the output, which
			// routes them and places their copies to the files, and the
			// workers run the copies after their tasks.
			j.specs[i].Encoded = &engine.TupleEncoder{Encode: s.partLines, Write: s.partWrite, Take: s.partTake, Copy: s.part.part.Copy}
		} else if s.w != nil {
			// Lines of text: the workers format them, the ordered stage
			// writes them.
			j.specs[i].Encoded = &engine.TupleEncoder{Encode: s.lines, Write: s.write}
		} else {
			j.specs[i].Tuples = s.tuples
		}
	}
	if !toOutput && j.opts.Output != "-" {
		return usagef("output %s: no query writes there (each has a sink of its own)", j.opts.Output)
	}
	return nil
}

// ErrStdoutClosed marks a run that failed because the reader of its rows
// on standard output went away (sink.ErrStdoutClosed).
var ErrStdoutClosed = sink.ErrStdoutClosed

// fileOutput is a query's output to a file, or to Options.Stdout ("-").
type fileOutput struct{ query, path string }

// claimFile refuses q's output to path where an earlier query writes to
// the same destination (sink.SameOutput): their lines would splice, or
// the output committed last would replace the other's. "-" is
// Options.Stdout: the process's standard output where that is os.Stdout.
func (j *Job) claimFile(q *sql.Query, path string) error {
	name := func(p string) string {
		if p == "-" && sink.IsStdoutWriter(j.opts.Stdout) {
			return "/dev/stdout"
		}
		return p
	}
	for _, o := range j.outFiles {
		a, b := name(o.path), name(path)
		same := a == b
		if !same && a != "-" && b != "-" {
			var err error
			if same, err = sink.SameOutput(a, b); err != nil {
				return fmt.Errorf("query %s: output %s: %w", q.Name, path, err)
			}
		}
		switch {
		case same && path == "-" && o.path == "-":
			return usagef("queries %s and %s both write to stdout: give one a CREATE SINK ... WITH (connector = 'file', ...)", o.query, q.Name)
		case same:
			return usagef("queries %s and %s both write to %s: give each its own output", o.query, q.Name, describeOutput(path))
		}
	}
	j.outFiles = append(j.outFiles, fileOutput{q.Name, path})
	return nil
}

// describeOutput names an output path for a message: "-" is stdout.
func describeOutput(path string) string {
	if path == "-" {
		return "stdout"
	}
	return path
}

// openServiceSink opens a kafka or redis sink, its client connected.
// txn, where not nil, makes a Kafka sink transactional, an output of that
// group's producer (txnSink). retry says how a Redis sink's flush is
// retried through an outage, and where a sink reports one.
func openServiceSink(q *sql.Query, txn *txnGroup, retry sinkRetry) (*rowSink, error) {
	k := q.Sink
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	col := func(name string) int {
		for i, c := range q.Columns {
			if c.Name == name {
				return i
			}
		}
		return -1
	}
	if k.Connector == "kafka" {
		format := k.Format
		if format == "" {
			format = "json"
		}
		s, err := newRowSink(q, format, "kafka topic "+k.Topic, nil, nil)
		if err != nil {
			return nil, err
		}
		if k.Key != "" {
			s.keyCol = col(k.Key)
		}
		if txn != nil {
			s.txn = txn.p.sink(k.Topic)
			return s, nil
		}
		if s.kafka, err = kafkasink.NewSink(ctx, kafkasink.SinkConfig{Brokers: k.Brokers, Topic: k.Topic, Security: k.KafkaSecurity, Logger: retry.logf}); err != nil {
			return nil, fmt.Errorf("query %s: %w", q.Name, err)
		}
		return s, nil
	}
	s, err := newRowSink(q, "text", "redis "+k.Addr, nil, nil)
	if err != nil {
		return nil, err
	}
	if k.Layout == "ysb" {
		s.campaign, s.start = col("campaign_id"), col("window_start")
		if len(k.Fields) > 0 {
			s.count = col(k.Fields[0])
		}
		if s.campaign < 0 || s.start < 0 || len(k.Fields) == 0 || s.count < 0 {
			return nil, fmt.Errorf("query %s: the ysb layout needs the columns campaign_id, window_start and a count", q.Name)
		}
		if s.ysbOut, err = redissink.NewYSB(ctx, redissink.YSBConfig{Server: redisServer(k), RetryTimeout: retry.timeout, Logger: retry.logf}); err != nil {
			return nil, fmt.Errorf("query %s: %w", q.Name, err)
		}
		return s, nil
	}
	names := make([]string, len(q.Columns))
	for i, c := range q.Columns {
		names[i] = c.Name
	}
	if s.hash, err = redissink.NewHash(ctx, redissink.HashConfig{Server: redisServer(k), KeyTemplate: k.KeyTemplate, Columns: names, Fields: k.Fields,
		RetryTimeout: retry.timeout, Logger: retry.logf}); err != nil {
		return nil, fmt.Errorf("query %s: %w", q.Name, err)
	}
	return s, nil
}

// commitSinks flushes every output and, with files true, commits the
// files (an interrupted run commits none: they are aborted, and keep what
// they held; what went to stdout, a topic or Redis is flushed either way).
// Under checkpoints a file's parts up to the last checkpoint are committed
// already; with files true the rows after it go to a last part.
func (j *Job) commitSinks(files bool) error {
	ctx := context.Background() // each sink bounds its own flush
	for _, s := range j.sinks {
		if s == nil || ((s.file != nil || s.parts != nil || s.part != nil) && !files) {
			continue
		}
		if s.txn != nil {
			continue // abortTxns, below
		}
		if err := s.flush(ctx); err != nil {
			return err
		}
		if s.file != nil {
			if err := s.file.Commit(); err != nil {
				return err
			}
		}
		if s.parts != nil {
			if err := j.commitLastPart(s); err != nil {
				return err
			}
		}
		if s.part != nil {
			if err := j.finishPartitioned(s); err != nil {
				return err
			}
		}
	}
	// What the drain emitted to the transactional Kafka outputs after the
	// last checkpoint: emitted again, complete, by the run that resumes
	// from it.
	return j.abortTxns(ctx)
}

// holdRedis makes the Redis outputs of rows drop the rows emitted from
// now on: the drain's, after the last checkpoint (rowSink.held). (YSB's
// output, a window's count under the campaign and the window, is
// overwritten by the complete count, whatever it was.)
func (j *Job) holdRedis() {
	for _, s := range j.sinks {
		if s != nil && s.hash != nil {
			s.mu.Lock()
			s.held = true
			s.mu.Unlock()
		}
	}
}

// files reports whether a query writes to a file.
func (j *Job) files() bool {
	for _, s := range j.sinks {
		if s != nil && (s.file != nil || s.parts != nil || s.part != nil) {
			return true
		}
	}
	return false
}

// abortSinks removes the temporary files of what was not committed and
// closes the clients of topics and Redis.
func (j *Job) abortSinks() {
	for _, s := range j.sinks {
		if s == nil {
			continue
		}
		if s.file != nil {
			_ = s.file.Abort()
		}
		if s.parts != nil {
			if err := s.parts.Abort(); err != nil {
				fmt.Fprintf(j.log, "saber-hx: warning: %v\n", err)
			}
		}
		if s.part != nil {
			if err := s.part.part.Abort(); err != nil {
				fmt.Fprintf(j.log, "saber-hx: warning: %v\n", err)
			}
		}
		if err := s.close(); err != nil {
			fmt.Fprintf(j.log, "saber-hx: warning: %s: %v\n", s.where, err)
		}
	}
	for _, g := range j.txns {
		_ = g.p.Close() // one whose outputs did not all open (closed once)
	}
}

// redisServer is a redis sink's server and how to reach it: its settings
// (a url, a password, TLS), with its addr.
func redisServer(k *sql.Sink) security.Redis {
	r := k.Redis
	if r.Addr == "" {
		r.Addr = k.Addr
	}
	return r
}
