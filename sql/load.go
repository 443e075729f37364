package sql

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/saber-hx/saber-hx/ysb"
)

// LoadCSV reads the table's rows from CSV text (format = 'csv'): one line
// per row, the columns in declared order, after a header line naming them
// if the table says header = 'true'. Values: integers in decimal, floats,
// UUIDs in canonical text, BYTES(n) as at most n bytes (zero-padded),
// ENUMs by label. The
// fields are plain (no quoting). A bad line is refused naming its line.
func (t *Table) LoadCSV(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var rows [][]byte
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimRight(sc.Text(), "\r")
		if line == 1 && t.Header {
			want := make([]string, len(t.Columns))
			for i, c := range t.Columns {
				want[i] = c.Name
			}
			got := strings.Split(text, ",")
			for i := range got {
				got[i] = strings.TrimSpace(got[i])
			}
			if !slices.Equal(got, want) {
				return fmt.Errorf("table %s: line 1: header %q, want %q", t.Name, text, strings.Join(want, ","))
			}
			continue
		}
		if text == "" {
			continue
		}
		fields := strings.Split(text, ",")
		if len(fields) != len(t.Columns) {
			return fmt.Errorf("table %s: line %d: %d fields, want %d (%s)", t.Name, line, len(fields), len(t.Columns), columnNames(t.Columns))
		}
		row := make([]byte, t.RowSize())
		for i, f := range fields {
			c := t.Columns[i]
			if err := encodeValue(row[c.Attr.Offset:c.Attr.Offset+c.Attr.Size], strings.TrimSpace(f), c, t.types[i]); err != nil {
				return fmt.Errorf("table %s: line %d: column %s: %v", t.Name, line, c.Name, err)
			}
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("table %s: line %d: %v", t.Name, line+1, err)
	}
	return t.SetRows(rows)
}

func columnNames(cols []Column) string {
	n := make([]string, len(cols))
	for i, c := range cols {
		n[i] = c.Name
	}
	return strings.Join(n, ", ")
}

// encodeValue writes the text value s of column c into dst (little-endian).
func encodeValue(dst []byte, s string, c Column, ty sqlType) error {
	le := binary.LittleEndian
	switch ty.kind {
	case tyInt:
		v, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return fmt.Errorf("%q is not an INT", s)
		}
		le.PutUint32(dst, uint32(int32(v)))
	case tyBigint:
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not a BIGINT", s)
		}
		le.PutUint64(dst, uint64(v))
	case tyReal:
		v, err := strconv.ParseFloat(s, 32)
		if err != nil {
			return fmt.Errorf("%q is not a REAL", s)
		}
		le.PutUint32(dst, math.Float32bits(float32(v)))
	case tyDouble:
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("%q is not a DOUBLE", s)
		}
		le.PutUint64(dst, math.Float64bits(v))
	case tyEnum:
		i := slices.Index(ty.labels, s)
		if i < 0 {
			return fmt.Errorf("%q is not a label of %s", s, c.Type)
		}
		le.PutUint32(dst, uint32(i))
	case tyUUID:
		u, err := ysb.ParseUUID(s)
		if err != nil {
			return err
		}
		copy(dst, u[:])
	case tyBytes:
		if len(s) > ty.size {
			return fmt.Errorf("%q is longer than %d bytes", s, ty.size)
		}
		copy(dst, s) // zero-padded, as package source stores BYTES(n)
	}
	return nil
}
