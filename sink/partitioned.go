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
// the partitions written most recently keep their file open (trim). With
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
	"encoding/binary"
	"errors"
	"fmt"
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
// time; Copy may be called from any number at once, beside them; Abort
// from any.
//
// The hand-over (WriteRecords, GiveRecords) only places the rows: it
// routes each record to its partition and reserves the bytes of the
// batch's lines of each partition at the end of the partition's file,
// in order, and leaves the copies, a write of each partition's lines at
// its place, to Copy, which any goroutine runs (a pipeline's workers,
// after their ordered stage), several at once, each copy to its own
// bytes of a file. So the ordered stage does not wait for the files, and
// what the files take grows with the workers: a writer goroutine of the
// output's own wrote every row, and the workers waited for it. What needs
// the rows on disk, or the partitions they made (Flush, PreCommit,
// Finish, Partitions), first runs the copies still placed and waits for
// those running (drain), so that the files are those that writing each
// row at once would make.
type Partitioned struct {
	cfg PartitionConfig
	// mu guards everything below; the copies run without it.
	mu     sync.Mutex
	parts  map[string]*partition // by directory relative to cfg.Dir
	order  []*partition          // by first appearance
	recent *partition            // the last row's: rows come in runs of one partition
	// open are the partitions whose file is open (without checkpoints),
	// in the order they opened it: the oldest with no copy pending are
	// closed past maxOpen (trim).
	open  []*partition
	maxTs int64
	seen  bool
	epoch uint64 // under checkpoints: the epoch being written
	// wmAt is the watermark as epoch's PreCommit saw it (seen false: none).
	wmAt    map[uint64]int64
	aborted bool
	werr    error // the first error of a hand-over or a copy: nothing is placed or written after it

	// jobs are the copies placed and not started, from head on, in order
	// of placing; running counts those started and not finished, placed
	// the bytes of both; settled is signalled as copies finish. batch is
	// the segment of a batch being placed (one copy per partition it
	// writes), seq its number (partition.seq).
	jobs    []copyJob
	head    int
	running int
	placed  int
	settled sync.Cond
	batch   []copyJob
	seq     uint64
	placing bool // a batch is being placed (trim leaves its partitions)
	// free are buffers whose copies are done, for GiveRecords to give back
	// and WriteRecords to copy into (freeCap their capacity); held are
	// spare holders of a buffer with copies placed in it. So a steady
	// stream of batches allocates nothing.
	free    [][]byte
	freeCap int
	held    []*heldBuf
}

// maxPending bounds the bytes of the copies placed and not finished: past
// it the hand-over runs copies itself, or waits for those running, which
// keeps what is buffered bounded where the disk is slower than the rows,
// or no goroutine calls Copy.
const maxPending = 4 << 20

// maxFree and maxFreeCap bound the buffers written that the output keeps
// for GiveRecords to give back and WriteRecords to copy into: enough for
// the batches placed at once (up to maxPending, and the last one past
// it, each buffer with its slack), so that the caller finds one in
// steady state, whose next encoding would otherwise allocate (and grow)
// a buffer of the batch's size; about twice maxPending at most.
const (
	maxFree    = 64
	maxFreeCap = 2 * maxPending
)

// maxOpen is how many partitions keep their file open without
// checkpoints, the most recently opened, so that an output of many
// partitions keeps few descriptors: rows come in runs of one partition,
// and a partition that gets rows again has its file reopened. Under
// checkpoints each epoch's parts are closed at its pre-commit.
const maxOpen = 8

type partition struct {
	rel       string // "a=x/b=y"
	dir       string
	time      int64 // ms since the epoch, UTC; valid where timed
	timed     bool
	committed bool   // its success file written, and no row since
	last      uint64 // under checkpoints: the last epoch it had rows in
	file      *File
	parts     *Parts
	opened    bool   // among Partitioned.open
	pending   int    // copies placed to its file and not finished
	seq       uint64 // the batch whose copy job is batch[job]
	job       int
}

// heldBuf is a buffer with copies placed in it, given back to the free
// buffers once the last of them, and the placing, let go (left).
type heldBuf struct {
	b    []byte
	left int
}

// copyJob is a copy placed: the lines of a batch's records of one
// partition, written at off in f (nil: a file written through, which
// takes them in order, at once). The records are first, and the one
// whose event time field holds the next one's offset in buf.b (the
// placing no longer needs the times), -1 past last.
type copyJob struct {
	pt    *partition
	f     *os.File
	off   int64
	n     int // the lines' bytes
	buf   *heldBuf
	first int
	last  int
}

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
	p.settled.L = &p.mu
	return p, nil
}

// Dir is the output's directory.
func (p *Partitioned) Dir() string { return p.cfg.Dir }

// Partitions lists the partitions written or found, by first appearance.
func (p *Partitioned) Partitions() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	_ = p.drain() // the partitions of the rows it wrote, whatever its error
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
	p.mu.Lock()
	defer p.mu.Unlock()
	b := p.spare()
	b = append(b, make([]byte, RecordHeader)...)
	PutRecordHeader(b, ts, len(rel), len(line))
	b = append(append(b, rel...), line...)
	return p.handOver(b)
}

// RecordHeader is the bytes before a record's directory and lines in
// what WriteRecords reads: the rows' largest event time (8), the length
// of their directory (2) and of their lines (4), little-endian
// (PutRecordHeader). A record holds a row, or a run of rows of one
// partition, which a copy writes with its lines (a batch's records of a
// partition in one write).
const RecordHeader = 14

// PutRecordHeader writes a record's header at the start of b: its rows'
// largest event time ts, its directory's length rel and its lines' line.
func PutRecordHeader(b []byte, ts int64, rel, line int) {
	binary.LittleEndian.PutUint64(b, uint64(ts))
	binary.LittleEndian.PutUint16(b[8:], uint16(rel))
	binary.LittleEndian.PutUint32(b[10:], uint32(line))
}

// WriteRecords appends the records of enc, in order, as WriteRow does
// each: each a header (PutRecordHeader), then the row's directory and
// its line. enc is copied, not kept; the rows are written by the copies
// it places, and an error of theirs is that of a later call (of
// WriteRecords, GiveRecords, Flush, PreCommit, Commit or Finish).
func (p *Partitioned) WriteRecords(enc []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.handOver(append(p.spare(), enc...))
}

// GiveRecords is WriteRecords without the copy: the output keeps enc,
// which the caller gives up (it must neither read nor write it again),
// until its copies are done, and returns spare in its place: an empty
// buffer whose copies are done (a buffer given before, or one the output
// copied a batch into), or nil where none is free, which is the
// caller's to fill and give again. The same bound on the bytes placed
// holds, with the same errors, and Flush, PreCommit, Commit, Finish and
// Abort treat a given batch as a written one. On an error the output
// keeps nothing: spare is enc.
func (p *Partitioned) GiveRecords(enc []byte) (spare []byte, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	hb, err := p.place(enc)
	if err != nil {
		return enc, err
	}
	if err := p.room(); err != nil {
		_ = p.drain() // the batch's copies dropped, or done
		p.unhold(hb, false)
		return enc, err
	}
	spare = p.spare() // before enc may join the free buffers
	p.unhold(hb, true)
	return spare, nil
}

// spare is an empty buffer for a hand-over to copy into, under mu.
func (p *Partitioned) spare() []byte {
	if n := len(p.free); n > 0 {
		b := p.free[n-1]
		p.free[n-1] = nil
		p.free = p.free[:n-1]
		p.freeCap -= cap(b)
		return b
	}
	return nil
}

// handOver places b, a buffer of the output's own, under mu: given back
// to the free buffers once its copies are done.
func (p *Partitioned) handOver(b []byte) error {
	hb, err := p.place(b)
	if err != nil {
		p.release(b)
		return err
	}
	err = p.room()
	p.unhold(hb, true)
	return err
}

// room runs placed copies, or waits for those running, while more than
// maxPending bytes are placed, under mu; and says why nothing more may be
// handed over: an Abort, or a copy's error.
func (p *Partitioned) room() error {
	for p.placed > maxPending && p.werr == nil && !p.aborted {
		if p.head < len(p.jobs) {
			p.copyOne()
		} else {
			p.settled.Wait()
		}
	}
	return p.handOverErr()
}

// handOverErr says why nothing may be handed over, under mu: an Abort,
// or the output's error; nil where a hand-over may go on.
func (p *Partitioned) handOverErr() error {
	if p.aborted {
		return fmt.Errorf("write %s: aborted", p.cfg.Dir)
	}
	return p.werr
}

// place routes the records of b, in order, to their partitions, and
// places a copy of each partition's lines (the copy job), under mu. b's
// bytes past its last whole record are skipped. It returns the holder of
// b with the placing's own hold on it, for unhold. On an error nothing of
// b is kept: the copies placed are dropped, those running waited for,
// and b is the caller's again; the error stays the output's.
func (p *Partitioned) place(b []byte) (*heldBuf, error) {
	if err := p.handOverErr(); err != nil {
		return nil, err
	}
	hb := p.holder(b)
	hb.left = 1 // the placing's hold: b stays out of the free buffers
	if err := p.placeRecords(b, hb); err != nil {
		if p.werr == nil {
			p.werr = err
		}
		_ = p.drain() // the batch's copies dropped
		p.unhold(hb, false)
		return nil, err
	}
	return hb, nil
}

// placeRecords is place's work: the records routed, each partition's
// lines of the batch chained into one copy. Without checkpoints a batch
// of more partitions than maxOpen files (with those open that have
// copies pending) is placed in segments: the copies of one run, and the
// files trimmed, before the next segment opens more.
func (p *Partitioned) placeRecords(b []byte, hb *heldBuf) error {
	p.trim()
	p.seq++
	p.placing = true
	batch := p.batch[:0]
	defer func() { clear(batch); p.batch, p.placing = batch[:0], false }()
	opening := 0 // the segment's partitions whose file is to be opened
	for pos := 0; len(b)-pos >= RecordHeader; {
		ts := int64(binary.LittleEndian.Uint64(b[pos:]))
		rel := int(binary.LittleEndian.Uint16(b[pos+8:]))
		line := int(binary.LittleEndian.Uint32(b[pos+10:]))
		start := pos + RecordHeader
		if rel+line > len(b)-start {
			return fmt.Errorf("write %s: a record of %d bytes where %d are left", p.cfg.Dir, rel+line, len(b)-start)
		}
		pt, err := p.route(ts, b[start:start+rel])
		if err != nil {
			return err
		}
		if pt.seq != p.seq {
			if !p.cfg.Checkpointed && !pt.opened {
				if len(p.open)+opening >= maxOpen {
					p.trimTo(maxOpen - 1 - opening)
				}
				if len(p.open)+opening >= maxOpen {
					if err := p.queue(b, hb, batch); err != nil {
						return err
					}
					batch = batch[:0]
					_ = p.drain() // its error is handOverErr's
					if err := p.handOverErr(); err != nil {
						return err
					}
					p.seq++
					opening = 0
					p.trimTo(maxOpen - 1)
				}
				opening++
			}
			pt.seq, pt.job = p.seq, len(batch)
			batch = append(batch, copyJob{pt: pt, first: pos, last: pos})
		} else {
			j := &batch[pt.job]
			binary.LittleEndian.PutUint64(b[j.last:], uint64(pos))
			j.last = pos
		}
		batch[pt.job].n += line
		pos = start + rel + line
	}
	return p.queue(b, hb, batch)
}

// queue reserves the bytes of a segment's copies in their files and
// queues them (writes through those of files written through, in
// order), under mu.
func (p *Partitioned) queue(b []byte, hb *heldBuf, batch []copyJob) error {
	for i := range batch {
		j := &batch[i]
		binary.LittleEndian.PutUint64(b[j.last:], math.MaxUint64)
		var err error
		if j.f, j.off, err = p.reserve(j.pt, j.n); err != nil {
			return err
		}
	}
	for i := range batch {
		j := &batch[i]
		if j.n == 0 {
			continue
		}
		if j.f == nil {
			if err := writeThrough(j, b); err != nil {
				return fmt.Errorf("write %s: %w", j.pt.dir, err)
			}
			continue
		}
		j.buf = hb
		hb.left++
		j.pt.pending++
		p.placed += j.n
		p.jobs = append(p.jobs, *j)
	}
	return nil
}

// unhold lets go of the placing's hold on hb (place), under mu: b given
// back to the free buffers (release) where its copies are done, or, not
// release, left to the caller, whose error dropped the copies.
func (p *Partitioned) unhold(hb *heldBuf, release bool) {
	if hb.left--; hb.left > 0 {
		return
	}
	if release {
		p.release(hb.b)
	}
	hb.b = nil
	p.held = append(p.held, hb)
}

// holder is a heldBuf of b, under mu.
func (p *Partitioned) holder(b []byte) *heldBuf {
	if n := len(p.held); n > 0 {
		hb := p.held[n-1]
		p.held = p.held[:n-1]
		hb.b = b
		return hb
	}
	return &heldBuf{b: b}
}

// Copy runs the copies placed and not started, and returns once none is
// left to start: the rows of batches handed over written to their
// partitions' files. Any goroutine, any number at once, each running
// copies of its own; an error is the output's, returned by a later
// hand-over, Flush, PreCommit, Commit or Finish. It does not wait to
// start: where another goroutine holds the output (a hand-over placing
// rows, a drain) it returns at once, the copies left to the next Copy
// or to the drain.
func (p *Partitioned) Copy() {
	if !p.mu.TryLock() {
		return
	}
	defer p.mu.Unlock()
	for p.head < len(p.jobs) {
		p.copyOne()
	}
}

// copyOne runs the next copy placed, under mu, which it releases while
// it writes; after an error or an Abort it drops it.
func (p *Partitioned) copyOne() {
	j := p.jobs[p.head]
	p.jobs[p.head] = copyJob{}
	switch p.head++; {
	case p.head == len(p.jobs):
		p.jobs, p.head = p.jobs[:0], 0
	case p.head >= 64 && 2*p.head >= len(p.jobs):
		// the copies started moved out, so that a queue that never
		// empties (the hand-over running copies only down to
		// maxPending) does not grow
		n := copy(p.jobs, p.jobs[p.head:])
		clear(p.jobs[n:])
		p.jobs, p.head = p.jobs[:n], 0
	}
	var err error
	if p.werr == nil && !p.aborted {
		p.running++
		p.mu.Unlock()
		err = writeAt(&j)
		p.mu.Lock()
		p.running--
	}
	p.done(&j, err)
}

// done settles copy j, run or dropped, under mu.
func (p *Partitioned) done(j *copyJob, err error) {
	j.pt.pending--
	p.placed -= j.n
	p.unhold(j.buf, true)
	if err != nil && p.werr == nil {
		p.werr = fmt.Errorf("write %s: %w", j.pt.dir, err)
	}
	p.settled.Broadcast()
}

// drain runs the copies placed and waits for those running, under mu, and
// returns the output's error.
func (p *Partitioned) drain() error {
	for p.head < len(p.jobs) {
		p.copyOne()
	}
	for p.running > 0 {
		p.settled.Wait()
	}
	return p.werr
}

// lines appends job j's lines in b, in order, to iov (at most max), from
// the record at pos; it returns the record after the last appended (-1:
// none is left).
func lines(iov [][]byte, b []byte, pos int, max int) ([][]byte, int) {
	for pos >= 0 && len(iov) < max {
		rel := int(binary.LittleEndian.Uint16(b[pos+8:]))
		line := int(binary.LittleEndian.Uint32(b[pos+10:]))
		start := pos + RecordHeader + rel
		if line > 0 {
			iov = append(iov, b[start:start+line])
		}
		pos = int(int64(binary.LittleEndian.Uint64(b[pos:])))
	}
	return iov, pos
}

// writeThrough writes job j's lines in b to its partition's file,
// written through, in order.
func writeThrough(j *copyJob, b []byte) error {
	var iov [1][]byte
	for pos := j.first; pos >= 0; {
		var ls [][]byte
		ls, pos = lines(iov[:0], b, pos, 1)
		for _, l := range ls {
			if _, err := j.pt.file.Write(l); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeAt writes job j's lines at its place in its file, gathered a
// batch of lines per system call (pwritev).
func writeAt(j *copyJob) error {
	var iov [64][]byte
	off := j.off
	for pos := j.first; pos >= 0; {
		var ls [][]byte
		ls, pos = lines(iov[:0], j.buf.b, pos, len(iov))
		n, err := pwritev(j.f, ls, off)
		if err != nil {
			return err
		}
		off += n
	}
	return nil
}

// route is the partition of a record's rows (its directory rel, its
// largest event time ts), made where new, under mu: the sink's
// watermark moved by ts, and the partition uncommitted and of the epoch.
func (p *Partitioned) route(ts int64, rel []byte) (*partition, error) {
	if !p.seen || ts > p.maxTs {
		p.maxTs, p.seen = ts, true
	}
	pt := p.recent
	if pt == nil || string(rel) != pt.rel {
		if pt = p.parts[string(rel)]; pt == nil {
			var err error
			if pt, err = p.add(string(rel)); err != nil {
				return nil, err
			}
		}
		p.recent = pt
	}
	pt.committed, pt.last = false, p.epoch
	return pt, nil
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

// reserve places n bytes at the end of partition pt's file (the epoch's
// part under checkpoints), opened where it is not, under mu: the file
// and the bytes' offset in it, or a nil file where it is written
// through.
func (p *Partitioned) reserve(pt *partition, n int) (*os.File, int64, error) {
	if p.cfg.Checkpointed {
		if pt.parts == nil {
			ps, err := CreateParts(filepath.Join(pt.dir, dataName), p.cfg.Inputs...)
			if err != nil {
				return nil, 0, err
			}
			if err := ps.Recover(0, p.epoch, nil); err != nil {
				return nil, 0, err
			}
			pt.parts = ps
		}
		return pt.parts.place(n)
	}
	if pt.file == nil {
		f, err := Create(filepath.Join(pt.dir, dataName), p.cfg.Inputs...)
		if err != nil {
			return nil, 0, err
		}
		pt.file = f
	}
	if !pt.opened {
		pt.opened = true
		p.open = append(p.open, pt)
	}
	return pt.file.place(n)
}

// trim closes the files of the partitions opened first, where more than
// maxOpen are open, that have no copy pending nor one being placed
// (without checkpoints), under mu: they are reopened when they get rows
// again.
func (p *Partitioned) trim() { p.trimTo(maxOpen) }

// trimTo is trim down to limit files open.
func (p *Partitioned) trimTo(limit int) {
	for i := 0; len(p.open) > limit && i < len(p.open); {
		pt := p.open[i]
		if pt.pending > 0 || p.placing && pt.seq == p.seq {
			i++
			continue
		}
		if err := pt.file.Suspend(); err != nil && p.werr == nil {
			p.werr = err
		}
		pt.opened = false
		p.open = slices.Delete(p.open, i, i+1)
	}
}

// release keeps a written buffer, under mu, for GiveRecords to give back
// and WriteRecords to copy into: where fewer than maxFree are kept and
// their capacity stays within maxFreeCap, and only where the buffer is
// not much larger than the batch it held (one grown for a larger batch
// than those that follow would keep its memory for nothing).
func (p *Partitioned) release(b []byte) {
	c := cap(b)
	if c == 0 || len(p.free) >= maxFree || p.freeCap+c > maxFreeCap || c > 64<<10 && c > 4*len(b) {
		return
	}
	p.free = append(p.free, b[:0])
	p.freeCap += c
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

// Flush writes the rows handed over to their files: the copies placed
// run, those running waited for.
func (p *Partitioned) Flush() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	err := p.drain()
	p.trim()
	return err
}

// Epoch is the epoch being written (under checkpoints). It waits for no
// copy: only PreCommit and Recover change it, each after a drain.
func (p *Partitioned) Epoch() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.epoch
}

// PreCommit ends epoch under checkpoints: every partition's part of it
// written, synced and pre-committed (Parts.PreCommit), and the
// watermark noted, which the epoch's Commit commits partitions by.
func (p *Partitioned) PreCommit(epoch uint64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	// the epoch's rows all written before its parts are closed
	if err := p.drain(); err != nil {
		return err
	}
	if p.aborted {
		return fmt.Errorf("pre-commit %s: aborted", p.cfg.Dir)
	}
	if epoch != p.epoch {
		return fmt.Errorf("pre-commit %s: epoch %d, but epoch %d is being written", p.cfg.Dir, epoch, p.epoch)
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
	p.mu.Lock()
	defer p.mu.Unlock()
	// a partition with rows handed over since the pre-commit is not
	// committed by it (they were routed as handed over: its last epoch
	// is theirs)
	if p.werr != nil {
		return p.werr
	}
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
	p.mu.Lock()
	err := p.drain()
	p.mu.Unlock()
	if err != nil {
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
		if err := p.drain(); err != nil { // rows handed over since
			return err
		}
		for _, pt := range p.order {
			if pt.file != nil {
				if err := pt.file.Commit(); err != nil {
					return err
				}
				pt.file, pt.opened = nil, false
			}
		}
		p.open = p.open[:0] // their files committed
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
	p.mu.Lock()
	defer p.mu.Unlock()
	p.aborted = true
	// the copies placed dropped, those running finished: no write to a
	// file closed below (its descriptor may be another file's by then)
	_ = p.drain()
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
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.drain(); err != nil {
		return err
	}
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
