package pipeline

// Partitioned filesystem outputs (CREATE TABLE ... PARTITIONED BY (...)
// WITH ('connector' = 'filesystem', ...)): the workers format each row
// (its partition's directory, its line of the other columns, its event
// time) and the ordered stage hands them, in order, to the output
// (sink.Partitioned), which routes the lines to their partitions and
// places their copies to the files, each at its own bytes; the workers
// run the copies after their tasks, off the ordered stage
// (TupleEncoder.Copy), and the output commits partitions as the
// watermark passes them.

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/sink"
	"github.com/saber-hx/saber-hx/sql"
	"github.com/saber-hx/saber-hx/temporal"
)

// partitionedSink is a rowSink's partitioned output: part writes,
// pcols are the partition columns, data formats the other columns.
type partitionedSink struct {
	part  *sink.Partitioned
	pcols []sinkColumn
	names []string
	def   string
	data  *rowSink
	ts    sinkColumn // the event time, attribute 0 of the output tuple
}

// recHeader is the bytes before a row's directory and line in the
// records that partLines makes and partTake (partWrite) hands the output.
const recHeader = sink.RecordHeader

// openPartitionedSink opens query q's partitioned output under path, a
// directory: parts per checkpoint under --checkpoint-dir, else a file
// per partition committed at the end of the run.
func (j *Job) openPartitionedSink(q *sql.Query, path, format string) (*rowSink, error) {
	pt := q.Sink.Partition
	if path == "-" {
		return nil, usagef("query %s: a partitioned table writes a directory per partition: its path cannot be stdout", q.Name)
	}
	cfg := sink.PartitionConfig{Dir: strings.TrimSuffix(path, "/"), Columns: pt.Names, Trigger: pt.Trigger != "", Pattern: pt.Pattern,
		Delay: pt.Delay, SuccessFile: pt.SuccessFile, WatermarkDelay: pt.WatermarkDelay, Unit: pt.TimeUnit,
		Checkpointed: j.ckpt != nil, Inputs: j.inputs()}
	if cfg.Dir == "" {
		cfg.Dir = "/"
	}
	p, err := sink.CreatePartitioned(cfg)
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", q.Name, err)
	}
	s, err := newRowSink(q, format, path, nil, nil)
	if err != nil {
		return nil, err
	}
	ps := &partitionedSink{part: p, names: pt.Names, def: pt.DefaultName, ts: sinkColumn{attr: q.Output.Attrs[0]}}
	data := &rowSink{q: q, format: format, where: s.where, size: s.size, keyCol: -1}
	for i, c := range s.cols {
		if idx := indexOf(pt.Columns, i); idx >= 0 {
			continue
		}
		data.cols = append(data.cols, c)
	}
	for _, i := range pt.Columns {
		ps.pcols = append(ps.pcols, s.cols[i])
	}
	ps.data = data
	s.part = ps
	return s, nil
}

func indexOf(xs []int, x int) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}

// partLines is the Spec.Encoded's Encode of a partitioned output: each
// run of tuples of one partition as one record (sink.PutRecordHeader):
// the run's largest event time, its partition's directory and its lines
// (of the columns that are not partition columns). Any worker runs it.
// Rows come in runs of one partition (a minute's, an hour's), so that
// the ordered stage routes a record per run, where a record per row cost
// it a header read and a directory compared each, and a copy writes a
// run's lines at once.
func (s *rowSink) partLines(dst, tuples []byte) []byte {
	ps := s.part
	var scratch []byte
	run := -1 // the offset of the last record, where another row may join it
	for off := 0; off+s.size <= len(tuples); off += s.size {
		t := tuples[off : off+s.size]
		n := len(dst)
		dst = append(dst, make([]byte, recHeader)...)
		for i, c := range ps.pcols {
			if i > 0 {
				dst = append(dst, '/')
			}
			null := c.attr.IsNull(t)
			scratch = scratch[:0]
			switch {
			case null:
			case c.attr.Logical == query.Time && c.labels == nil:
				scratch = appendPartitionTimestamp(scratch, s.int(c, t))
			default:
				scratch = s.text(scratch, c, t)
			}
			dst = sink.AppendPartitionSegment(dst, ps.names[i], scratch, null, ps.def)
		}
		rel := len(dst) - n - recHeader
		ts := s.int(ps.ts, t)
		if run >= 0 && sameRun(dst, run, n, rel) {
			// the row joins the run: its directory dropped, its line
			// appended to the run's lines
			dst = ps.data.row(dst[:n], t)
			runTs := int64(binary.LittleEndian.Uint64(dst[run:]))
			lines := len(dst) - run - recHeader - rel
			sink.PutRecordHeader(dst[run:], max(ts, runTs), rel, lines)
			continue
		}
		dst = ps.data.row(dst, t)
		line := len(dst) - n - recHeader - rel
		run = n
		if rel > math.MaxUint16 {
			// a directory name past the file system's limits: the
			// output's writer refuses the row (an empty directory), and
			// the next write, flush or checkpoint reports it
			dst = dst[:n+recHeader]
			rel, line, run = 0, 0, -1
		}
		sink.PutRecordHeader(dst[n:], ts, rel, line)
	}
	return dst
}

// sameRun says whether the row whose directory (of rel bytes) follows a
// header at n in dst goes to the partition of the record at run, and may
// join it: the run's lines stay within a record's bound on them (which a
// row's line, at most a tuple's text, keeps far from).
func sameRun(dst []byte, run, n, rel int) bool {
	h := dst[run:]
	runRel := int(binary.LittleEndian.Uint16(h[8:]))
	lines := int(binary.LittleEndian.Uint32(h[10:]))
	return rel > 0 && runRel == rel && lines < math.MaxUint32/2 &&
		string(h[recHeader:recHeader+rel]) == string(dst[n+recHeader:n+recHeader+rel])
}

// appendPartitionTimestamp appends a TIMESTAMP partition value (ms) as
// Flink names its partition: the value's toString, java.time's
// LocalDateTime ("2015-07-15T12:34", ":ss" only where the seconds or
// the fraction are not 0, ".SSS" only where the fraction is not), where
// the file sink's text is SQL's ("2015-07-15 12:34:00.000").
func appendPartitionTimestamp(dst []byte, ms int64) []byte {
	days := ms / temporal.MillisPerDay
	if ms%temporal.MillisPerDay < 0 {
		days--
	}
	rem := int(ms - days*temporal.MillisPerDay)
	dst = temporal.AppendDate(dst, int32(days))
	h, m, sec, f := rem/temporal.MillisPerHour, rem/temporal.MillisPerMinute%60, rem/temporal.MillisPerSecond%60, rem%temporal.MillisPerSecond
	dst = append(dst, 'T', byte('0'+h/10), byte('0'+h%10), ':', byte('0'+m/10), byte('0'+m%10))
	if sec != 0 || f != 0 {
		dst = append(dst, ':', byte('0'+sec/10), byte('0'+sec%10))
	}
	if f != 0 {
		dst = append(dst, '.', byte('0'+f/100), byte('0'+f/10%10), byte('0'+f%10))
	}
	return dst
}

// partWrite is the Spec.Encoded's Write of a partitioned output: the
// rows partLines made, in output order, each to its partition. It only
// copies them into a buffer of the output's and places their copies to
// the files, so that the ordered stage does not wait for the files; an
// error of a copy is that of a later write, flush, checkpoint or finish,
// each of which waits for the copies.
func (s *rowSink) partWrite(enc []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.part.part.WriteRecords(enc); err != nil {
		return fmt.Errorf("write %s: %w", s.where, err)
	}
	return nil
}

// partTake is the Spec.Encoded's Take of a partitioned output: partWrite
// without the copy into the output's buffer, the buffer of the rows given
// to the output, which gives back one whose copies are done
// (sink.Partitioned.GiveRecords).
func (s *rowSink) partTake(enc []byte) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	spare, err := s.part.part.GiveRecords(enc)
	if err != nil {
		return spare, fmt.Errorf("write %s: %w", s.where, err)
	}
	return spare, nil
}

// dirSinks are the run's partitioned outputs.
func (j *Job) dirSinks() []*rowSink {
	var out []*rowSink
	for _, s := range j.sinks {
		if s != nil && s.part != nil {
			out = append(out, s)
		}
	}
	return out
}

// finishPartitioned ends a partitioned output of a run that succeeded:
// the rows after the last checkpoint committed (under checkpoints, in a
// part that a run resumed from that checkpoint replaces), every
// partition committed.
func (j *Job) finishPartitioned(s *rowSink) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.part.part.Finish(); err != nil {
		return fmt.Errorf("write %s: %w", s.where, err)
	}
	return nil
}

// recoverPartitioned settles the partitioned outputs on the checkpoint
// the run resumes from (epoch; 0: none), as recoverFiles settles the
// files: a directory whose partitions hold files of an earlier run is
// refused where there is no checkpoint to resume them from.
func (c *checkpointer) recoverPartitioned(epoch uint64) error {
	for _, s := range c.j.dirSinks() {
		p := s.part.part
		if !c.fromDir || c.afresh {
			have, err := sink.ExistingPartitions(p.Dir(), "")
			if err != nil {
				return err
			}
			if len(have) > 0 {
				why := fmt.Sprintf("the checkpoint directory %s holds no checkpoint", c.dir.Path)
				if c.afresh {
					why = "the Kafka output has committed no checkpoint, so the run starts afresh"
				}
				return usagef("%s, but %s already holds the partitions of an earlier run (%d of them): "+
					"resume that run with its checkpoint directory, or remove them to start afresh", why, p.Dir(), len(have))
			}
		}
		note := func(format string, args ...any) {
			fmt.Fprintf(c.stderr, "saber-hx: "+format+"\n", args...)
		}
		if err := p.Recover(epoch, c.epoch+1, note); err != nil {
			return err
		}
	}
	return nil
}
