package main

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/sink"
	"github.com/saber-hx/saber-hx/sql"
	"github.com/saber-hx/saber-hx/ysb"
)

// rowSink writes one query's output rows, as CSV with a header of the
// select list's names or as JSON (an object a line), to stdout or to a
// file (package sink: committed only when the run succeeds). It reads the
// engine's output tuples (Spec.Tuples: for an aggregation one tuple per
// row, the window start first), so that every query shape goes one way.
type rowSink struct {
	format string // "csv" or "json"
	where  string // the file, or "stdout"
	file   *sink.File
	w      *bufio.Writer
	cols   []sinkColumn
	size   int // output tuple size
	line   []byte
}

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

func newRowSink(q *sql.Query, format, where string, w io.Writer, f *sink.File) (*rowSink, error) {
	s := &rowSink{format: format, where: where, file: f, w: bufio.NewWriterSize(w, 64<<10), size: q.Output.TupleSize}
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
	if format == "csv" {
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

// tuples is the query's Spec.Tuples: b holds whole output tuples.
func (s *rowSink) tuples(b []byte) error {
	for off := 0; off+s.size <= len(b); off += s.size {
		s.line = s.row(s.line[:0], b[off:off+s.size])
		if _, err := s.w.Write(s.line); err != nil {
			return fmt.Errorf("write %s: %w", s.where, err)
		}
	}
	return nil
}

// row appends one tuple as a CSV or JSON line.
func (s *rowSink) row(dst, t []byte) []byte {
	if s.format == "json" {
		dst = append(dst, '{')
	}
	for i, c := range s.cols {
		if i > 0 {
			dst = append(dst, ',')
		}
		if s.format == "json" {
			dst = strconv.AppendQuote(dst, c.name)
			dst = append(dst, ':')
		}
		dst = s.value(dst, c, t)
	}
	if s.format == "json" {
		dst = append(dst, '}')
	}
	return append(dst, '\n')
}

// value appends column c of tuple t: integers in decimal, floats in the
// shortest form that reads back exactly, UUIDs in lowercase canonical text,
// ENUMs as their labels, other bytes in hex (strings in JSON).
func (s *rowSink) value(dst []byte, c sinkColumn, t []byte) []byte {
	b := t[c.attr.Offset : c.attr.Offset+c.attr.Size]
	json := s.format == "json"
	switch c.attr.Type {
	case query.Int32, query.Int64:
		var v int64
		if c.attr.Type == query.Int32 {
			v = int64(int32(binary.LittleEndian.Uint32(b)))
		} else {
			v = int64(binary.LittleEndian.Uint64(b))
		}
		if c.end {
			if v > math.MaxInt64-c.span {
				v = math.MaxInt64
			} else {
				v += c.span
			}
		}
		if c.labels != nil {
			label := fmt.Sprint(v) // a code no label has: its number
			if v >= 0 && v < int64(len(c.labels)) {
				label = c.labels[v]
			}
			if json {
				return strconv.AppendQuote(dst, label)
			}
			return appendCSVField(dst, label)
		}
		return strconv.AppendInt(dst, v, 10)
	case query.Float32, query.Float64:
		var f float64
		bits := 64
		if c.attr.Type == query.Float32 {
			f, bits = float64(math.Float32frombits(binary.LittleEndian.Uint32(b))), 32
		} else {
			f = math.Float64frombits(binary.LittleEndian.Uint64(b))
		}
		if json && (math.IsNaN(f) || math.IsInf(f, 0)) {
			return strconv.AppendQuote(dst, strconv.FormatFloat(f, 'g', -1, bits))
		}
		return strconv.AppendFloat(dst, f, 'g', -1, bits)
	}
	var text string
	if c.uuid && len(b) == len(ysb.UUID{}) {
		text = ysb.UUID(b).String()
	} else {
		text = `\x` + hex.EncodeToString(b)
	}
	if json {
		return strconv.AppendQuote(dst, text)
	}
	return appendCSVField(dst, text)
}

// appendCSVField appends s, quoted where it holds a comma, a quote or a
// line break (RFC 4180).
func appendCSVField(dst []byte, s string) []byte {
	quote := false
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

// openSinks opens every query's output: a CREATE SINK's file, or stdout (or
// --output) for a plain SELECT; a view without a sink writes nowhere. At
// most one query may write to stdout.
func (r *sqlRun) openSinks(stdout io.Writer) error {
	r.specs = r.prog.Specs()
	r.sinks = make([]*rowSink, len(r.prog.Queries))
	for i, q := range r.prog.Queries {
		if q.Sink == nil {
			continue
		}
		path, format := q.Sink.Path, q.Sink.Format
		if q.Sink.Connector == "stdout" {
			path = r.output
		}
		if format == "" {
			format = "csv"
		}
		var s *rowSink
		var err error
		if path == "-" {
			if r.toStdout {
				return usagef("queries %s and another both write to stdout: give one a CREATE SINK ... WITH (connector = 'file', ...)", q.Name)
			}
			r.toStdout = true
			s, err = newRowSink(q, format, "stdout", stdout, nil)
		} else {
			var f *sink.File
			if f, err = sink.Create(path, r.inputs()...); err != nil {
				return fmt.Errorf("query %s: %w", q.Name, err)
			}
			r.sinks[i] = &rowSink{file: f} // aborted on failure
			s, err = newRowSink(q, format, path, f, f)
		}
		if err != nil {
			return err
		}
		r.sinks[i] = s
		r.specs[i].Tuples = s.tuples
	}
	return nil
}

// commitSinks flushes every output and, with files true, commits the
// files (an interrupted run commits none: they are aborted, and keep what
// they held; what went to stdout is flushed either way).
func (r *sqlRun) commitSinks(files bool) error {
	for _, s := range r.sinks {
		if s == nil || (s.file != nil && !files) {
			continue
		}
		if err := s.w.Flush(); err != nil {
			return fmt.Errorf("write %s: %w", s.where, err)
		}
		if s.file != nil {
			if err := s.file.Commit(); err != nil {
				return err
			}
		}
	}
	return nil
}

// files reports whether a query writes to a file.
func (r *sqlRun) files() bool {
	for _, s := range r.sinks {
		if s != nil && s.file != nil {
			return true
		}
	}
	return false
}

// abortSinks removes the temporary files of what was not committed.
func (r *sqlRun) abortSinks() {
	for _, s := range r.sinks {
		if s != nil && s.file != nil {
			_ = s.file.Abort()
		}
	}
}
