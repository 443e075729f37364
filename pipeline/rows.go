package pipeline

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/sql"
	"github.com/saber-hx/saber-hx/strview"
)

// Rows is a batch of a query's output rows, as a RowsFunc receives it:
// valid only during the call. Columns are those of the select list, in
// order; values are read by row and column index.
type Rows struct {
	s *rowSink
	b []byte // whole output tuples
}

// Len is the number of rows.
func (r *Rows) Len() int { return len(r.b) / r.s.size }

// Columns are the output columns: their names and SQL types.
func (r *Rows) Columns() []sql.OutputColumn { return r.s.q.Columns }

func (r *Rows) tuple(row int) []byte { return r.b[row*r.s.size : (row+1)*r.s.size] }

// Int is an integer column's value (an ENUM's code, window_start or
// window_end); 0 for a column of another type.
func (r *Rows) Int(row, col int) int64 {
	c := r.s.cols[col]
	if c.attr.Type != query.Int32 && c.attr.Type != query.Int64 {
		return 0
	}
	return r.s.int(c, r.tuple(row))
}

// Float is a numeric column's value (an integer's converted).
func (r *Rows) Float(row, col int) float64 {
	c := r.s.cols[col]
	b := r.s.bytes(c, r.tuple(row))
	switch c.attr.Type {
	case query.Float32:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
	case query.Float64:
		return math.Float64frombits(binary.LittleEndian.Uint64(b))
	case query.Int32, query.Int64:
		return float64(r.s.int(c, r.tuple(row)))
	}
	return 0
}

// AppendText appends a column's value as text, as the CSV output writes
// it unquoted: integers in decimal, floats in the shortest form that
// reads back exactly, UUIDs in canonical text, ENUMs as their labels.
func (r *Rows) AppendText(dst []byte, row, col int) []byte {
	return r.s.text(dst, r.s.cols[col], r.tuple(row))
}

// Text is AppendText as a string.
func (r *Rows) Text(row, col int) string { return string(r.AppendText(nil, row, col)) }

// AppendCSV appends a row as a CSV line (RFC 4180 quoting, an empty
// string as "" and NULL as an empty field, a newline at the end), as a
// file output writes it.
func (r *Rows) AppendCSV(dst []byte, row int) []byte {
	return r.s.rowAs(dst, r.tuple(row), "csv")
}

// AppendJSON appends a row as a JSON object and a newline.
func (r *Rows) AppendJSON(dst []byte, row int) []byte {
	return r.s.rowAs(dst, r.tuple(row), "json")
}

// ErrSourceStopped is what a TupleWriter's Write and Append return once
// the run stopped taking the source's tuples (the SourceFunc's context is
// done: Run's context cancelled, Options.Duration reached, the run
// failed): a SourceFunc that returns it ends as one that returns nil.
var ErrSourceStopped = errors.New("pipeline: the run stopped taking this source's tuples (its context is done): return from the SourceFunc")

// TupleWriter is a Go source's way in (AttachSource): whole tuples in the
// source's layout, written to every query that reads the source.
type TupleWriter struct {
	s       *sqlSource
	streams []*engine.Stream
	stopped <-chan struct{} // the SourceFunc's context's Done
	tuple   []byte          // Append's
	strings *strview.Arena  // Append's long strings, until its Write has copied them
}

// Columns are the source's declared columns, each with its place in the
// tuple (Attr: offset, size, type; little-endian).
func (w *TupleWriter) Columns() []sql.Column { return w.s.src.Columns }

// TupleSize is the bytes of one tuple.
func (w *TupleWriter) TupleSize() int { return w.s.src.Schema.TupleSize }

// Write writes whole tuples (len(tuples) a multiple of TupleSize),
// blocking while the engine is full. A VARCHAR's long string may live
// anywhere outside the Go heap (package strview) until Write returns: it
// is copied. A processing-time column (PROCTIME()) is filled in place,
// and so are the numbers of the dictionary-encoded VARCHAR columns (the
// bytes past the columns, sql.Source.DictNumbers), whose views then point
// into the source's dictionary.
func (w *TupleWriter) Write(tuples []byte) error {
	select {
	case <-w.stopped:
		return ErrSourceStopped
	default:
	}
	ts := w.TupleSize()
	if len(tuples)%ts != 0 {
		return fmt.Errorf("source %s: %d bytes are not whole %d-byte tuples", w.s.src.Name, len(tuples), ts)
	}
	w.s.stampProcTime(tuples)
	if err := w.s.encodeDicts(tuples); err != nil {
		return err
	}
	if w.s.val != nil {
		w.s.val.fed(w.s.src, tuples)
	}
	for _, st := range w.streams {
		if err := st.Write(tuples); err != nil {
			return err
		}
	}
	w.s.tuples += uint64(len(tuples) / ts)
	w.s.fed.Store(w.s.tuples)
	return nil
}

// Append writes one tuple of the values given in the declared columns'
// order, a processing-time column (PROCTIME()) left out: an int, int32 or
// int64 for integer columns (an ENUM's code), a float32 or float64 (or an
// integer) for REAL and DOUBLE, a []byte of the column's size for UUID and
// BYTES, a string or []byte for VARCHAR, a time.Time or int64
// milliseconds since the epoch for TIMESTAMP, a bool for BOOLEAN, and nil
// for NULL in a column that can be NULL. It is the convenient way, not
// the fast one: Write takes tuples laid out by the caller.
func (w *TupleWriter) Append(values ...any) error {
	var cols []sql.Column
	for _, c := range w.Columns() {
		if c.Name != w.s.src.ProcTime {
			cols = append(cols, c)
		}
	}
	if len(values) != len(cols) {
		return fmt.Errorf("source %s: %d values for %d columns", w.s.src.Name, len(values), len(cols))
	}
	if w.strings == nil {
		w.strings = strview.NewArena(0)
	}
	defer w.strings.Reset()
	w.tuple = append(w.tuple[:0], make([]byte, w.TupleSize())...)
	for i, v := range values {
		if err := encodeValue(w.tuple, cols[i].Attr, v, w.strings); err != nil {
			return fmt.Errorf("source %s: column %s: %w", w.s.src.Name, cols[i].Name, err)
		}
	}
	return w.Write(w.tuple)
}

// Flush hands on the tuples written so far now, without waiting for a
// task to fill: call it when a live input pauses, not per tuple.
func (w *TupleWriter) Flush() error { return w.s.flushAll(w.streams) }

var errValueType = errors.New("value of the wrong type")

func encodeValue(t []byte, a query.Attribute, v any, strs *strview.Arena) error {
	b := t[a.Offset : a.Offset+a.Size]
	switch x := v.(type) {
	case nil:
		if !a.Nullable {
			return fmt.Errorf("%w: NULL in a column declared NOT NULL", errValueType)
		}
		t[a.NullBit>>3] |= 1 << (a.NullBit & 7)
		return nil
	case time.Time:
		if a.Logical != query.Time {
			return fmt.Errorf("%w: a time.Time for a column that is not a TIMESTAMP", errValueType)
		}
		v = x.UnixMilli()
	}
	switch {
	case a.Type == query.String:
		var s []byte
		switch x := v.(type) {
		case string:
			s = []byte(x)
		case []byte:
			s = x
		default:
			return fmt.Errorf("%w: want a string or []byte, got %T", errValueType, v)
		}
		strview.Put(b, s, strs)
		return nil
	case a.Logical == query.Boolean:
		x, ok := v.(bool)
		if !ok {
			return fmt.Errorf("%w: want a bool, got %T", errValueType, v)
		}
		if x {
			binary.LittleEndian.PutUint32(b, 1)
		}
		return nil
	}
	var i int64
	isInt := true
	switch x := v.(type) {
	case int:
		i = int64(x)
	case int32:
		i = int64(x)
	case int64:
		i = x
	default:
		isInt = false
	}
	switch a.Type {
	case query.Int32:
		if !isInt || i != int64(int32(i)) {
			return fmt.Errorf("%w: want an integer in int32's range, got %v", errValueType, v)
		}
		binary.LittleEndian.PutUint32(b, uint32(i))
	case query.Int64:
		if !isInt {
			return fmt.Errorf("%w: want an integer, got %T", errValueType, v)
		}
		binary.LittleEndian.PutUint64(b, uint64(i))
	case query.Float32, query.Float64:
		f, f32 := float64(i), float32(i) // an integer rounded once to each, as CAST does
		switch x := v.(type) {
		case float64:
			f, f32 = x, float32(x)
		case float32:
			f, f32 = float64(x), x
		default:
			if !isInt {
				return fmt.Errorf("%w: want a number, got %T", errValueType, v)
			}
		}
		if a.Type == query.Float32 {
			binary.LittleEndian.PutUint32(b, math.Float32bits(f32))
		} else {
			binary.LittleEndian.PutUint64(b, math.Float64bits(f))
		}
	default:
		x, ok := v.([]byte)
		if !ok || len(x) != len(b) {
			return fmt.Errorf("%w: want %d bytes, got %T", errValueType, len(b), v)
		}
		copy(b, x)
	}
	return nil
}

// encodeDicts dictionary-encodes the VARCHAR columns of tuples that the
// source's decoders would (sql.Source.DictNumbers), for tuples that no
// decoder made (a SourceFunc's).
func (s *sqlSource) encodeDicts(tuples []byte) error {
	if s.dicts == nil {
		return nil
	}
	if s.dictCache == nil {
		s.dictCache = strview.NewDictCache(s.dicts.Dict)
	}
	if err := s.dicts.Encode(s.src.Schema, s.dictCache, tuples); err != nil {
		return fmt.Errorf("source %s: %w", s.src.Name, err)
	}
	return nil
}
