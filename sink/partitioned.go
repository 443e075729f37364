package sink

// # Partitioned outputs
//
// Partitioned writes the rows of a table PARTITIONED BY (a, b) under a
// directory D as Flink's filesystem connector does (Hive's layout):
// each row in D/a=<value>/b=<value>/, the value's text escaped as a path
// (EscapePartitionValue), a NULL or empty value as the default name
// (Flink's __DEFAULT_PARTITION__). The files of a partition hold its
// rows, without the partition columns, and no header, so that "cat
// D/a=x/b=y/data*" is the partition's rows.
//
// Without checkpoints each partition is one file, "data", written to a
// hidden temporary file beside it and renamed at the end of a run that
// succeeds (File); a failed or interrupted run leaves no data file. Only
// the partitions written most recently keep their file open (attach). With
// checkpoints each partition is written as Parts ("data.part-E", one per
// epoch in which it had rows): pre-committed before a checkpoint,
// committed once it is durable, settled on a restart (Recover).
//
// A partition is committed (the success-file policy writes an empty
// file, SuccessFile, "_SUCCESS" by default, in its directory) when the
// watermark is past its time plus the commit delay (Flink's
// partition-time trigger: watermark > time + delay), and only once its
// files are committed: under checkpoints at the commit of the first
// checkpoint whose watermark (as the checkpoint was taken) is past it;
// without checkpoints at the end of the run. At the end of a run every
// partition is committed, as Flink commits every partition at the end
// of a bounded input. A partition whose time cannot be read from its
// values (the default partition, a value that is no date) is committed
// only at the end of a run.
//
// The watermark is what the caller says with each row: its event time.
// The sink's watermark is the largest event time written less the
// source's watermark delay (PartitionConfig.WatermarkDelay), so that it
// depends on the rows alone (the same files whatever the number of
// workers or the timing), is never ahead of the engine's watermark (the
// rows are the source's tuples, filtered, in the order of the input),
// and lags it only where a filter drops rows.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// PartitionConfig is a partitioned output's layout and commit rule.
type PartitionConfig struct {
	Dir     string   // the table's directory (path)
	Columns []string // the partition columns, in PARTITIONED BY's order
	// Pattern is the partition's time as text, $col standing for a
	// partition column's value ("$dt $hm:00"), read as "yyyy-MM-dd
	// HH:mm:ss" or "yyyy-MM-dd" as Flink's default extractor reads them
	// (parsePartitionTime); "": the first column's value. Trigger
	// false: partitions are not committed (no policy).
	Trigger bool
	Pattern string
	Delay   time.Duration // sink.partition-commit.delay
	// SuccessFile is the file the success-file policy writes ("": none).
	SuccessFile string
	// WatermarkDelay is the source's watermark delay, and Unit the unit
	// of the event times (and of the delay).
	WatermarkDelay int64
	Unit           time.Duration
	// Checkpointed: parts per epoch (Parts), else a file per partition.
	Checkpointed bool
	// Inputs are files the output must not be (CreateParts' inputs).
	Inputs []string
}

// dataName is the base name of a partition's files.
const dataName = "data"

// Partitioned is a partitioned output. WriteRow, WriteRecords,
// GiveRecords, PreCommit, Commit and Finish are for one goroutine at a
// time; Abort may be called from any.
//
// The rows are routed to their partitions and written by a goroutine of
// the output's own (run), so that a caller in a pipeline's ordered stage
// only copies them (WriteRecords), or gives its buffer of them
// (GiveRecords): what needs them on disk, or the partitions they
// made, waits for it first (drain), so that the files are those that
// writing each row at once would make.
type Partitioned struct {
	cfg PartitionConfig
	// mu is the routing state's, held by the writer while it writes a
	// batch.
	mu     sync.Mutex
	parts  map[string]*partition // by directory relative to cfg.Dir
	order  []*partition          // by first appearance
	recent *partition            // the last row's: rows come in runs of one partition
	held   []*partition          // those with a buffer (partition.w), in the order they took it
	maxTs  int64
	seen   bool
	epoch  uint64 // under checkpoints: the epoch being written
	// wmAt is the watermark as epoch's PreCommit saw it (seen false: none).
	wmAt    map[uint64]int64
	aborted bool

	// hmu is the hand-over's: the records given and not yet taken by
	// the writer, and the writer's state. Never held with mu.
	hmu  sync.Mutex
	work sync.Cond // the writer waits on it for records or its stop
	idle sync.Cond // callers wait on it for the writer to catch up
	// pending are the records handed over by copy; batches the batches
	// handed over, in order, each a run of pending or a buffer given
	// (GiveRecords), so that bytes past a batch's last whole record are
	// skipped, as WriteRecords skips them, not read with the next
	// batch's; queued the bytes of both. spare and spareBatches are the
	// writer's last, given back to be filled again, and free the given
	// buffers it has written, for GiveRecords to give back (freeCap
	// their capacity), so that a steady stream of batches allocates
	// nothing.
	pending, spare        []byte
	batches, spareBatches []batch
	queued                int
	free                  [][]byte
	freeCap               int
	handed, written       uint64        // batches handed over, and written (or dropped)
	waiting               bool          // the writer waits on work
	stop, closed          bool          // the writer ends once idle; Abort: drops what is pending
	werr                  error         // the writer's first error: nothing is written after it
	done                  chan struct{} // the running writer's (nil: none), closed as it ends
}

// maxPending bounds the records handed over and not yet taken by the
// writer: past it the caller waits for the writer, which keeps what is
// buffered bounded where the disk is slower than the rows.
const maxPending = 4 << 20

// batch is a batch of records handed over: own, where given
// (GiveRecords, never empty), else pending's bytes up to end, from the
// previous copied batch's end.
type batch struct {
	end int
	own []byte
}

// maxFree and maxFreeCap bound the buffers written that the output keeps
// for GiveRecords to give back: enough for the batches of a writer's
// round, which it frees together (up to maxPending, and the last one
// past it, each buffer with its slack), so that the caller finds one in
// steady state, whose next encoding would otherwise allocate (and grow)
// a buffer of the batch's size; and, like the copied batches' pending
// and spare buffers together, about twice maxPending at most.
const (
	maxFree    = 64
	maxFreeCap = 2 * maxPending
)

type partition struct {
	rel       string // "a=x/b=y"
	dir       string
	time      int64 // ms since the epoch, UTC; valid where timed
	timed     bool
	committed bool   // its success file written, and no row since
	last      uint64 // under checkpoints: the last epoch it had rows in
	file      *File
	parts     *Parts
	// w buffers the partition's rows while it is among the output's held
	// partitions (Partitioned.held); nil otherwise, its file open or not.
	w *bufio.Writer
}

// A partition's buffer: large, so that its file's writes are few (the
// write system calls were a tenth of q10's time with 16 KiB); held by a
// few partitions at a time, the most recently written, so that an output
// of many partitions keeps little memory: rows come in runs of one
// partition, and a partition that gets its rows back gets a buffer back.
const (
	partitionBuffer = 128 << 10
	maxHeld         = 8
)

// CreatePartitioned readies the output: its directory is created where
// missing (a path that exists and is no directory is refused). Under
// checkpoints call Recover before writing.
func CreatePartitioned(cfg PartitionConfig) (*Partitioned, error) {
	if cfg.Dir == "" {
		return nil, usagef("output directory is empty")
	}
	if fi, err := os.Stat(cfg.Dir); err == nil && !fi.IsDir() {
		return nil, usagef("%s: a partitioned table's path is a directory, and this is a %v", cfg.Dir, fi.Mode().Type())
	}
	if err := os.MkdirAll(cfg.Dir, 0o777); err != nil {
		return nil, classify(fmt.Errorf("create the directory of a partitioned output: %w", err))
	}
	for _, in := range cfg.Inputs {
		if in == "" {
			continue
		}
		if abs, err := filepath.Abs(in); err == nil {
			if d, err := filepath.Abs(cfg.Dir); err == nil && strings.HasPrefix(abs, d+string(filepath.Separator)) {
				return nil, usageError{fmt.Errorf("%w: input %s lies in the partitioned output's directory %s, which the run writes", ErrSameFile, in, cfg.Dir)}
			}
		}
	}
	if cfg.Unit <= 0 {
		cfg.Unit = time.Millisecond
	}
	p := &Partitioned{cfg: cfg, parts: map[string]*partition{}, epoch: 1, wmAt: map[uint64]int64{}}
	p.work.L, p.idle.L = &p.hmu, &p.hmu
	return p, nil
}

// Dir is the output's directory.
func (p *Partitioned) Dir() string { return p.cfg.Dir }

// Partitions lists the partitions written or found, by first appearance.
func (p *Partitioned) Partitions() []string {
	_ = p.drain() // the partitions of the rows it wrote, whatever its error
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, len(p.order))
	for i, pt := range p.order {
		out[i] = pt.rel
	}
	return out
}

// watermark is the sink's watermark in milliseconds; ok false before
// the first row.
func (p *Partitioned) watermark() (int64, bool) {
	if !p.seen {
		return 0, false
	}
	return (p.maxTs - p.cfg.WatermarkDelay) * int64(p.cfg.Unit) / int64(time.Millisecond), true
}

// WriteRow appends line (whole lines, one or more) to the partition rel
// ("a=x/b=y", AppendPartitionDir's), rows whose largest event time is
// ts, as WriteRecords does a record: rel and line are not kept, and an
// error of the rows' write is that of a later call.
func (p *Partitioned) WriteRow(ts int64, rel, line []byte) error {
	if len(rel) > math.MaxUint16 || int64(len(line)) > math.MaxUint32 {
		return fmt.Errorf("write %s: bad partition: a directory of %d bytes, a line of %d", p.cfg.Dir, len(rel), len(line))
	}
	return p.handOver(RecordHeader+len(rel)+len(line), func(dst []byte) []byte {
		n := len(dst)
		dst = append(dst, make([]byte, RecordHeader)...)
		PutRecordHeader(dst[n:], ts, len(rel), len(line))
		dst = append(dst, rel...)
		return append(dst, line...)
	})
}

// RecordHeader is the bytes before a record's directory and lines in
// what WriteRecords reads: the rows' largest event time (8), the length
// of their directory (2) and of their lines (4), little-endian
// (PutRecordHeader). A record holds a row, or a run of rows of one
// partition, which the writer writes with one copy.
const RecordHeader = 14

// PutRecordHeader writes a record's header at the start of b: its rows'
// largest event time ts, the lengths of their directory and lines after
// it.
func PutRecordHeader(b []byte, ts int64, rel, line int) {
	binary.LittleEndian.PutUint64(b, uint64(ts))
	binary.LittleEndian.PutUint16(b[8:], uint16(rel))
	binary.LittleEndian.PutUint32(b[10:], uint32(line))
}

// WriteRecords appends the records of enc, in order, as WriteRow does
// each: each a header (PutRecordHeader), then the row's directory and
// its line. enc is copied, not kept; the rows are written by the
// output's writer, and an error of theirs is that of a later call (of
// WriteRecords, GiveRecords, Flush, PreCommit, Commit or Finish).
func (p *Partitioned) WriteRecords(enc []byte) error {
	return p.handOver(len(enc), func(dst []byte) []byte { return append(dst, enc...) })
}

// GiveRecords is WriteRecords without the copy: the output keeps enc,
// which the caller gives up (it must neither read nor write it again),
// until the writer has written its records, and returns spare in its
// place: an empty buffer that the writer has finished with (a buffer
// given before), or nil where none is free, which is the caller's to
// fill and give again. The same bound on the bytes pending holds (the
// caller waits for the writer past it), with the same errors, and
// Flush, PreCommit, Commit, Finish and Abort treat a given batch as a
// written one. On an error the output keeps nothing: spare is enc.
func (p *Partitioned) GiveRecords(enc []byte) (spare []byte, err error) {
	p.hmu.Lock()
	defer p.hmu.Unlock()
	if err := p.room(len(enc)); err != nil {
		return enc, err
	}
	if len(enc) == 0 {
		return enc, nil // no records: nothing to write
	}
	p.queue(batch{own: enc}, len(enc))
	if n := len(p.free); n > 0 {
		spare, p.free[n-1] = p.free[n-1], nil
		p.free = p.free[:n-1]
		p.freeCap -= cap(spare)
	}
	return spare, nil
}

// handOver appends a batch of n bytes (add appends them) to the records
// pending for the writer, as room and queue have it.
func (p *Partitioned) handOver(n int, add func([]byte) []byte) error {
	p.hmu.Lock()
	defer p.hmu.Unlock()
	if err := p.room(n); err != nil {
		return err
	}
	p.pending = add(p.pending)
	p.queue(batch{end: len(p.pending)}, n)
	return nil
}

// room waits, under hmu, for the writer where as much as maxPending is
// pending already, and says why no batch of n bytes may be handed over:
// an Abort, or the writer's error.
func (p *Partitioned) room(n int) error {
	for p.queued > 0 && p.queued+n > maxPending && p.werr == nil && !p.closed {
		p.idle.Wait()
	}
	if p.closed {
		return fmt.Errorf("write %s: aborted", p.cfg.Dir)
	}
	return p.werr
}

// queue adds batch b, of n bytes, to those pending for the writer,
// started where none runs, and wakes it, under hmu.
func (p *Partitioned) queue(b batch, n int) {
	p.batches = append(p.batches, b)
	p.queued += n
	p.handed++
	if p.done == nil {
		p.done = make(chan struct{})
		go p.run(p.done)
		return
	}
	p.wake()
}

// wake signals the writer where it waits for work, under hmu.
func (p *Partitioned) wake() {
	if p.waiting {
		p.waiting = false
		p.work.Signal()
	}
}

// run is the writer: it takes the pending records, all at once, and
// writes them while the next are handed over, until it is stopped
// (stopWriter) and nothing is pending, or Abort drops what is pending.
// After an error it writes nothing more, and drops what is handed over.
func (p *Partitioned) run(done chan struct{}) {
	p.hmu.Lock()
	defer p.hmu.Unlock()
	for {
		if p.werr != nil || p.closed {
			clear(p.batches) // the given buffers dropped
			p.pending, p.batches, p.queued, p.written = p.pending[:0], p.batches[:0], 0, p.handed
			p.idle.Broadcast()
		}
		if len(p.batches) == 0 {
			if p.stop || p.closed {
				break
			}
			p.waiting = true
			p.work.Wait()
			continue
		}
		copied, batches, upto := p.pending, p.batches, p.handed
		p.pending, p.batches, p.queued = p.spare[:0], p.spareBatches[:0], 0
		p.hmu.Unlock()
		p.mu.Lock()
		err := p.writeBatches(copied, batches)
		p.mu.Unlock()
		p.hmu.Lock()
		for _, b := range batches {
			if b.own != nil {
				p.release(b.own)
			}
		}
		clear(batches)
		p.spare, p.spareBatches = copied[:0], batches[:0]
		p.written = max(p.written, upto)
		if err != nil && p.werr == nil {
			p.werr = err
		}
		p.idle.Broadcast()
	}
	p.done, p.stop, p.waiting = nil, false, false
	close(done)
}

// drain waits until every record handed over is written (or dropped, by
// an error or Abort), and returns the writer's error.
func (p *Partitioned) drain() error {
	p.hmu.Lock()
	defer p.hmu.Unlock()
	for upto := p.handed; p.written < upto && p.werr == nil && !p.closed; {
		p.idle.Wait()
	}
	return p.werr
}

// stopWriter ends the writer once it has written what is pending (Abort
// having set closed: at once), and returns its error.
func (p *Partitioned) stopWriter() error {
	p.hmu.Lock()
	done := p.done
	if done != nil {
		p.stop = true
		p.wake()
	}
	p.hmu.Unlock()
	if done != nil {
		<-done
	}
	p.hmu.Lock()
	defer p.hmu.Unlock()
	return p.werr
}

// release keeps a given buffer, written, for GiveRecords to give back,
// under hmu: where fewer than maxFree are kept and their capacity stays
// within maxFreeCap, and only where the buffer is not much larger than
// the batch it held (one grown for a larger batch than those that
// follow would keep its memory for nothing).
func (p *Partitioned) release(b []byte) {
	c := cap(b)
	if len(p.free) >= maxFree || p.freeCap+c > maxFreeCap || c > 64<<10 && c > 4*len(b) {
		return
	}
	p.free = append(p.free, b[:0])
	p.freeCap += c
}

// writeBatches writes the batches of records, each a buffer given or a
// run of copied, under mu.
func (p *Partitioned) writeBatches(copied []byte, batches []batch) error {
	start := 0
	for _, b := range batches {
		enc := b.own
		if enc == nil {
			enc, start = copied[start:b.end], b.end
		}
		for len(enc) >= RecordHeader {
			ts := int64(binary.LittleEndian.Uint64(enc))
			rel := int(binary.LittleEndian.Uint16(enc[8:]))
			line := int(binary.LittleEndian.Uint32(enc[10:]))
			enc = enc[RecordHeader:]
			if rel+line > len(enc) {
				return fmt.Errorf("write %s: a record of %d bytes where %d are left", p.cfg.Dir, rel+line, len(enc))
			}
			if err := p.writeRow(ts, enc[:rel], enc[rel:rel+line]); err != nil {
				return err
			}
			enc = enc[rel+line:]
		}
	}
	return nil
}

// writeRow writes a row under mu.
func (p *Partitioned) writeRow(ts int64, rel, line []byte) error {
	if p.aborted {
		return fmt.Errorf("write %s: aborted", p.cfg.Dir)
	}
	if !p.seen || ts > p.maxTs {
		p.maxTs, p.seen = ts, true
	}
	pt := p.recent
	if pt == nil || string(rel) != pt.rel {
		if pt = p.parts[string(rel)]; pt == nil {
			var err error
			if pt, err = p.add(string(rel)); err != nil {
				return err
			}
		}
		p.recent = pt
	}
	if pt.w == nil {
		if err := p.attach(pt); err != nil {
			return err
		}
	}
	pt.committed, pt.last = false, p.epoch
	if _, err := pt.w.Write(line); err != nil {
		return fmt.Errorf("write %s: %w", pt.dir, err)
	}
	return nil
}

// add makes partition rel known, its directory created.
func (p *Partitioned) add(rel string) (*partition, error) {
	if rel == "" || strings.HasPrefix(rel, "/") || slices.Contains(strings.Split(rel, "/"), "..") {
		return nil, fmt.Errorf("write %s: bad partition %q", p.cfg.Dir, rel)
	}
	pt := &partition{rel: rel, dir: filepath.Join(p.cfg.Dir, rel)}
	pt.time, pt.timed = p.partitionTime(rel)
	if err := os.MkdirAll(pt.dir, 0o777); err != nil {
		return nil, classify(fmt.Errorf("create partition %s of %s: %w", rel, p.cfg.Dir, err))
	}
	p.parts[rel] = pt
	p.order = append(p.order, pt)
	return pt, nil
}

// attach gives partition pt a buffer over its file, the file opened
// where it is not: a new buffer while fewer than maxHeld partitions hold
// one, else the buffer of the partition that took one first, flushed (and,
// without checkpoints, its file suspended).
func (p *Partitioned) attach(pt *partition) error {
	var out io.Writer
	switch {
	case p.cfg.Checkpointed && pt.parts != nil:
		out = pt.parts
	case !p.cfg.Checkpointed && pt.file != nil:
		out = pt.file
	default:
		var err error
		if out, err = p.open(pt); err != nil {
			return err
		}
	}
	var w *bufio.Writer
	if len(p.held) < maxHeld {
		w = bufio.NewWriterSize(out, partitionBuffer)
	} else {
		first := p.held[0]
		if err := first.w.Flush(); err != nil {
			return fmt.Errorf("write %s: %w", first.dir, err)
		}
		if first.file != nil {
			// its file closed too, until it gets rows again: a run's
			// partitions keep few descriptors open however many there
			// are (under checkpoints each epoch's parts are closed at its
			// pre-commit)
			if err := first.file.Suspend(); err != nil {
				return err
			}
		}
		w, first.w = first.w, nil
		p.held = append(p.held[:0], p.held[1:]...)
		w.Reset(out)
	}
	pt.w = w
	p.held = append(p.held, pt)
	return nil
}

// open opens a partition's file for the rows to come, and returns it.
func (p *Partitioned) open(pt *partition) (io.Writer, error) {
	if p.cfg.Checkpointed {
		ps, err := CreateParts(filepath.Join(pt.dir, dataName), p.cfg.Inputs...)
		if err != nil {
			return nil, err
		}
		if err := ps.Recover(0, p.epoch, nil); err != nil {
			return nil, err
		}
		pt.parts = ps
		return ps, nil
	}
	f, err := Create(filepath.Join(pt.dir, dataName), p.cfg.Inputs...)
	if err != nil {
		return nil, err
	}
	pt.file = f
	return f, nil
}

// partitionTime is the time of partition rel: the pattern with each
// $column replaced by the column's value (unescaped), read as
// "yyyy-MM-dd HH:mm:ss" or "yyyy-MM-dd", in UTC.
func (p *Partitioned) partitionTime(rel string) (int64, bool) {
	vals := strings.Split(rel, "/")
	if len(vals) != len(p.cfg.Columns) {
		return 0, false
	}
	values := make(map[string]string, len(vals))
	for i, v := range vals {
		_, val, ok := strings.Cut(v, "=")
		if !ok {
			return 0, false
		}
		values[p.cfg.Columns[i]] = UnescapePartitionValue(val)
	}
	text := values[p.cfg.Columns[0]]
	if p.cfg.Pattern != "" {
		var b strings.Builder
		pat := p.cfg.Pattern
		for i := 0; i < len(pat); i++ {
			if pat[i] == '$' {
				best := ""
				for _, c := range p.cfg.Columns {
					if strings.HasPrefix(pat[i+1:], c) && len(c) > len(best) {
						best = c
					}
				}
				if best != "" {
					b.WriteString(values[best])
					i += len(best)
					continue
				}
			}
			b.WriteByte(pat[i])
		}
		text = b.String()
	}
	return parsePartitionTime(text)
}

// parsePartitionTime reads text as Flink's DefaultPartTimeExtractor does
// (its TIMESTAMP_FORMATTER, lenient): a year of 1-10 digits, '-', a month
// and a day of 1-2 digits each, then optionally ' ' and an hour, minute
// and second of 1-2 digits each separated by ':', optionally a fraction
// of the second ('.' and 1-9 digits); a field out of its range carries
// over (hour 24 is the next day's midnight), in UTC. ok false: not such
// a time.
func parsePartitionTime(text string) (ms int64, ok bool) {
	num := func(minDigits, maxDigits int) (int, bool) {
		n, i := 0, 0
		for ; i < len(text) && i < maxDigits && text[i] >= '0' && text[i] <= '9'; i++ {
			n = n*10 + int(text[i]-'0')
		}
		if i < minDigits {
			return 0, false
		}
		text = text[i:]
		return n, true
	}
	lit := func(c byte) bool {
		if len(text) == 0 || text[0] != c {
			return false
		}
		text = text[1:]
		return true
	}
	var f [6]int
	var nanos int
	y, ok := num(1, 10)
	f[0] = y
	for i, sep := range []byte{'-', '-'} {
		if !ok || !lit(sep) {
			return 0, false
		}
		f[i+1], ok = num(1, 2)
	}
	if !ok {
		return 0, false
	}
	if lit(' ') {
		for i, sep := range []byte{0, ':', ':'} {
			if sep != 0 && !lit(sep) {
				return 0, false
			}
			if f[i+3], ok = num(1, 2); !ok {
				return 0, false
			}
		}
		if lit('.') {
			digits := len(text)
			frac, ok := num(1, 9)
			if !ok {
				return 0, false
			}
			for digits -= len(text); digits < 9; digits++ {
				frac *= 10
			}
			nanos = frac
		}
	}
	if text != "" {
		return 0, false
	}
	return time.Date(f[0], time.Month(f[1]), f[2], f[3], f[4], f[5], nanos, time.UTC).UnixMilli(), true
}

// due reports whether pt may be committed at watermark wm.
func (p *Partitioned) due(pt *partition, wm int64, ok bool) bool {
	return ok && pt.timed && wm > pt.time+p.cfg.Delay.Milliseconds()
}

// success commits a partition: its success file written (where the
// policy writes one) and synced.
func (p *Partitioned) success(pt *partition) error {
	pt.committed = true
	if p.cfg.SuccessFile == "" {
		return nil
	}
	name := filepath.Join(pt.dir, p.cfg.SuccessFile)
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
	if err != nil {
		return classify(fmt.Errorf("commit partition %s of %s: %w", pt.rel, p.cfg.Dir, err))
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncDir(pt.dir)
	}
	if err != nil {
		return fmt.Errorf("commit partition %s of %s: %w", pt.rel, p.cfg.Dir, err)
	}
	return nil
}

// Flush writes what the partitions buffer to their files.
func (p *Partitioned) Flush() error {
	if err := p.drain(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.flush()
}

func (p *Partitioned) flush() error {
	for _, pt := range p.order {
		if pt.w != nil {
			if err := pt.w.Flush(); err != nil {
				return fmt.Errorf("write %s: %w", pt.dir, err)
			}
		}
	}
	return nil
}

// Epoch is the epoch being written (under checkpoints). It waits for no
// writer: only PreCommit and Recover change it, each after a drain.
func (p *Partitioned) Epoch() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.epoch
}

// PreCommit ends epoch under checkpoints: every partition's part of it
// written, synced and pre-committed (Parts.PreCommit), and the
// watermark noted, which the epoch's Commit commits partitions by.
func (p *Partitioned) PreCommit(epoch uint64) error {
	// the epoch's rows all routed: the watermark and each partition's
	// last epoch are theirs
	if err := p.drain(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.aborted {
		return fmt.Errorf("pre-commit %s: aborted", p.cfg.Dir)
	}
	if epoch != p.epoch {
		return fmt.Errorf("pre-commit %s: epoch %d, but epoch %d is being written", p.cfg.Dir, epoch, p.epoch)
	}
	if err := p.flush(); err != nil {
		return err
	}
	for _, pt := range p.order {
		if pt.parts != nil {
			if err := pt.parts.PreCommit(epoch); err != nil {
				return err
			}
		}
	}
	if wm, ok := p.watermark(); ok {
		p.wmAt[epoch] = wm
	}
	p.epoch = epoch + 1
	return nil
}

// Commit publishes epoch, its checkpoint durable: every partition's part
// committed, then each partition that the watermark at the epoch's
// PreCommit had passed committed (its success file written).
func (p *Partitioned) Commit(epoch uint64) error {
	// a partition with rows handed over since the pre-commit is not
	// committed by it, as though they were written at once
	if err := p.drain(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pt := range p.order {
		if pt.parts != nil {
			if err := pt.parts.Commit(epoch); err != nil {
				return err
			}
		}
	}
	wm, ok := p.wmAt[epoch]
	for e := range p.wmAt {
		if e <= epoch {
			delete(p.wmAt, e)
		}
	}
	if !p.cfg.Trigger {
		return nil
	}
	for _, pt := range p.order {
		// a partition with rows of a later epoch (written after the
		// pre-commit) waits for their commit: its success file only once
		// every file of it is committed
		if !pt.committed && pt.last <= epoch && p.due(pt, wm, ok) {
			if err := p.success(pt); err != nil {
				return err
			}
		}
	}
	return nil
}

// Finish ends a run that succeeded: the rows written since the last
// checkpoint committed in a part of the next epoch (under checkpoints;
// a run resumed from that checkpoint removes it and writes its rows
// again), else each partition's file renamed into place; then every
// partition committed, as at the end of a bounded input.
func (p *Partitioned) Finish() error {
	// a write after Finish starts another writer; Abort (Job.Close)
	// ends that one
	if err := p.stopWriter(); err != nil {
		return err
	}
	if p.cfg.Checkpointed {
		e := p.Epoch()
		if err := p.PreCommit(e); err != nil {
			return err
		}
		if err := p.Commit(e); err != nil {
			return err
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.cfg.Checkpointed {
		if err := p.flush(); err != nil {
			return err
		}
		for _, pt := range p.order {
			if pt.file != nil {
				if err := pt.file.Commit(); err != nil {
					return err
				}
				pt.file, pt.w = nil, nil
			}
		}
		p.held = p.held[:0] // flushed, and their files committed
	}
	if !p.cfg.Trigger {
		return nil
	}
	for _, pt := range p.order {
		if !pt.committed {
			if err := p.success(pt); err != nil {
				return err
			}
		}
	}
	return nil
}

// Abort gives up what is not committed: the temporary files (without
// checkpoints) and the in-progress parts of the epoch being written.
// Idempotent, safe from any goroutine.
func (p *Partitioned) Abort() error {
	p.hmu.Lock()
	p.closed = true
	p.idle.Broadcast() // a caller waiting for the writer returns
	p.hmu.Unlock()
	_ = p.stopWriter() // what it dropped was to be aborted
	p.mu.Lock()
	defer p.mu.Unlock()
	p.aborted = true
	var first error
	for _, pt := range p.order {
		var err error
		if pt.file != nil {
			err = pt.file.Abort()
		}
		if pt.parts != nil {
			err = pt.parts.Abort()
		}
		if err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Recover settles the directory on a restart from the checkpoint of
// epoch (0: none) under checkpoints: each partition found (a directory
// col=value/... as deep as the columns) has its parts settled as
// Parts.Recover does, and where parts of later epochs were removed, its
// success file too (its rows are written again, and it is committed
// again when the watermark passes it). The partitions found are pending
// until the watermark passes them, or committed where their success file
// stayed. The next epoch written is next. note (nil: none) is told of
// each change.
func (p *Partitioned) Recover(epoch, next uint64, note func(format string, args ...any)) error {
	if err := p.drain(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if note == nil {
		note = func(string, ...any) {}
	}
	var rels []string
	var walk func(dir, rel string, depth int) error
	walk = func(dir, rel string, depth int) error {
		if depth == len(p.cfg.Columns) {
			rels = append(rels, rel)
			return nil
		}
		ents, err := os.ReadDir(dir)
		if err != nil {
			return classify(fmt.Errorf("list the partitions of %s: %w", p.cfg.Dir, err))
		}
		for _, e := range ents {
			// the column's name is escaped in the path, as its value
			if e.IsDir() && strings.HasPrefix(e.Name(), string(AppendPartitionValue(nil, p.cfg.Columns[depth]))+"=") {
				r := e.Name()
				if rel != "" {
					r = rel + "/" + r
				}
				if err := walk(filepath.Join(dir, e.Name()), r, depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(p.cfg.Dir, "", 0); err != nil {
		return err
	}
	sort.Strings(rels)
	for _, rel := range rels {
		pt := p.parts[rel]
		if pt == nil {
			pt = &partition{rel: rel, dir: filepath.Join(p.cfg.Dir, rel)}
			pt.time, pt.timed = p.partitionTime(rel)
			p.parts[rel] = pt
			p.order = append(p.order, pt)
		}
		ps, err := CreateParts(filepath.Join(pt.dir, dataName), p.cfg.Inputs...)
		if err != nil {
			return err
		}
		before, err := ps.Committed()
		if err != nil {
			return err
		}
		removed := slices.ContainsFunc(before, func(c Part) bool { return c.Epoch > epoch })
		if err := ps.Recover(epoch, next, note); err != nil {
			return err
		}
		pt.parts = ps
		if p.cfg.SuccessFile != "" {
			name := filepath.Join(pt.dir, p.cfg.SuccessFile)
			_, serr := os.Lstat(name)
			switch {
			case serr == nil && removed:
				if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return fmt.Errorf("recover %s: %w", p.cfg.Dir, err)
				}
				note("%s: removed (the partition's rows after checkpoint %d are written again; it is committed again when the watermark passes it)", name, epoch)
			case serr == nil:
				pt.committed = true
			}
		}
	}
	p.epoch = next
	return nil
}

// ExistingPartitions lists the committed data files under dir (tests,
// validation): every regular file that is not hidden and not named
// success, by partition directory relative to dir.
func ExistingPartitions(dir, success string) (map[string][]string, error) {
	out := map[string][]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || strings.HasPrefix(d.Name(), ".") || d.Name() == success {
			return nil
		}
		rel, err := filepath.Rel(dir, filepath.Dir(path))
		if err != nil {
			return err
		}
		out[rel] = append(out[rel], path)
		return nil
	})
	return out, err
}

// AppendPartitionSegment appends one level of a partition's directory,
// "name=value" (the caller joins the levels with '/'), name and value
// escaped (AppendPartitionValue), a NULL, empty or blank value (null
// true, or value only whitespace: Flink's isNullOrWhitespaceOnly) the
// default name.
func AppendPartitionSegment[S ~string | ~[]byte](dst []byte, name string, value S, null bool, defaultName string) []byte {
	dst = AppendPartitionValue(dst, name)
	dst = append(dst, '=')
	blank := true
	for i := 0; i < len(value) && blank; i++ {
		c := value[i] // Java's Character.isWhitespace, as Flink reads blank
		if c < 0x80 {
			blank = c == ' ' || c >= '\t' && c <= '\r' || c >= 0x1c && c <= 0x1f
			continue
		}
		// past ASCII: the space, line and paragraph separators but the
		// no-break spaces (U+00A0, U+2007, U+202F), all of three bytes
		// in UTF-8: U+1680, U+2000-U+2006, U+2008-U+200A, U+2028,
		// U+2029, U+205F, U+3000
		blank = false
		if i+2 < len(value) {
			b1, b2 := value[i+1], value[i+2]
			switch c {
			case 0xe1:
				blank = b1 == 0x9a && b2 == 0x80
			case 0xe2:
				blank = b1 == 0x80 && (b2 >= 0x80 && b2 <= 0x8a && b2 != 0x87 || b2 == 0xa8 || b2 == 0xa9) || b1 == 0x81 && b2 == 0x9f
			case 0xe3:
				blank = b1 == 0x80 && b2 == 0x80
			}
			i += 2
		}
	}
	if null || blank {
		return AppendPartitionValue(dst, defaultName)
	}
	return AppendPartitionValue(dst, value)
}

// escapeChars are the characters a partition value escapes as %XX in a
// path, as Flink's PartitionPathUtils (Hive's FileUtils) does: the
// control characters, DEL, and " # % ' * / : = ? \ { [ ] ^.
var escapeChars = func() (t [256]bool) {
	for c := 1; c < 0x20; c++ {
		t[c] = true
	}
	t[0x7f] = true
	for _, c := range "\"#%'*/:=?\\{[]^" {
		t[c] = true
	}
	return t
}()

// AppendPartitionValue appends value escaped as a path's partition value.
// Bytes from 0x80 up (UTF-8 sequences) are kept, as Flink keeps the
// characters past ASCII.
func AppendPartitionValue[S ~string | ~[]byte](dst []byte, value S) []byte {
	const hexDigits = "0123456789ABCDEF"
	for i := 0; i < len(value); i++ {
		c := value[i]
		if escapeChars[c] {
			dst = append(dst, '%', hexDigits[c>>4], hexDigits[c&0xF])
			continue
		}
		dst = append(dst, c)
	}
	return dst
}

// UnescapePartitionValue is the value an escaped partition value names.
func UnescapePartitionValue(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if v, ok := unhex(s[i+1], s[i+2]); ok {
				b.WriteByte(v)
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func unhex(a, b byte) (byte, bool) {
	h := func(c byte) (byte, bool) {
		switch {
		case c >= '0' && c <= '9':
			return c - '0', true
		case c >= 'a' && c <= 'f':
			return c - 'a' + 10, true
		case c >= 'A' && c <= 'F':
			return c - 'A' + 10, true
		}
		return 0, false
	}
	x, ok1 := h(a)
	y, ok2 := h(b)
	return x<<4 | y, ok1 && ok2
}
