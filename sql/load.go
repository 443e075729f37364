package sql

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/saber-hx/saber-hx/source"
)

// LoadCSV reads the table's rows from CSV text (format = 'csv'): one line
// per row, the columns in declared order, after a header line naming them
// if the table says header = 'true'. The text is decoded by package
// source's CSV decoder: RFC 4180 quoting within a line, empty lines
// skipped, integers in decimal, floats, UUIDs in canonical text, BYTES(n)
// as at most n bytes (zero-padded), ENUMs by label, each value as written
// (no spaces around it); fields after the table's columns are ignored. A
// bad line is refused naming its line and column (a *source.Error under
// the table's name); so is a header that is not the columns' names in
// order, and two rows with the same key (SetRows).
func (t *Table) LoadCSV(r io.Reader) error {
	rows, err := t.readCSV(r)
	if err != nil {
		return err
	}
	return t.SetRows(rows)
}

// readCSV decodes the rows of a CSV text, RowSize bytes each.
func (t *Table) readCSV(r io.Reader) ([][]byte, error) {
	l, err := sourceLayout(t.RowSize(), t.Columns)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", t.Name, err)
	}
	if t.Header {
		br := bufio.NewReader(r)
		line, err := t.checkHeader(br)
		if err != nil {
			return nil, err
		}
		r = io.MultiReader(strings.NewReader(line), br)
	}
	d, err := source.NewCSVDecoder(l, source.CSVOptions{Header: t.Header})
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", t.Name, err)
	}
	return t.readRows(r, d)
}

// LoadJSON reads the table's rows from JSON lines (format = 'json'): one
// object a line, the columns by name (other members ignored), values as a
// json source's (package source). A bad line is refused naming its line.
func (t *Table) LoadJSON(r io.Reader) error {
	l, err := sourceLayout(t.RowSize(), t.Columns)
	if err != nil {
		return fmt.Errorf("table %s: %w", t.Name, err)
	}
	d, err := source.NewJSONDecoder(l, source.JSONOptions{})
	if err != nil {
		return fmt.Errorf("table %s: %w", t.Name, err)
	}
	rows, err := t.readRows(r, d)
	if err != nil {
		return err
	}
	return t.SetRows(rows)
}

// Load reads the table's rows in its format (LoadCSV or LoadJSON).
func (t *Table) Load(r io.Reader) error {
	if t.Format == "json" {
		return t.LoadJSON(r)
	}
	return t.LoadCSV(r)
}

// readRows decodes every row of r through d.
func (t *Table) readRows(r io.Reader, d source.Decoder) ([][]byte, error) {
	l := d.TupleSize()
	rd := source.NewReader(r, d, 0)
	var all []byte
	buf := make([]byte, 1024*l)
	for {
		n, err := rd.Fill(buf)
		all = append(all, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("table %s: %w", t.Name, err)
		}
	}
	rows := make([][]byte, len(all)/l)
	for i := range rows {
		rows[i] = all[i*l : (i+1)*l : (i+1)*l]
	}
	return rows, nil
}

// checkHeader reads the first line of br and checks that it names the
// table's columns in declared order (spaces around the names and a byte
// order mark allowed); it returns the line, for the decoder to read again.
func (t *Table) checkHeader(br *bufio.Reader) (string, error) {
	want := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		want[i] = c.Name
	}
	line, err := br.ReadString('\n')
	if err != nil && err != io.EOF {
		return "", fmt.Errorf("table %s: line 1: %w", t.Name, err)
	}
	if line == "" {
		return "", nil // no lines, no rows
	}
	text := strings.TrimRight(strings.TrimSuffix(line, "\n"), "\r")
	got := strings.Split(strings.TrimPrefix(text, "\xef\xbb\xbf"), ",")
	for i := range got {
		got[i] = strings.TrimSpace(got[i])
	}
	if !slices.Equal(got, want) {
		return "", fmt.Errorf("table %s: line 1: header %q, want %q", t.Name, text, strings.Join(want, ","))
	}
	return line, nil
}

// Layout is the source's tuple layout for package source's CSV and JSON
// decoders: each column where the compiler laid it out.
func (s *Source) Layout() (*source.Layout, error) { return sourceLayout(s.Schema.TupleSize, s.Columns) }

// sourceLayout is package source's layout of columns in a tuple of
// tupleSize bytes, for its decoders.
func sourceLayout(tupleSize int, cols []Column) (*source.Layout, error) {
	sc := make([]source.Column, len(cols))
	for i, c := range cols {
		sc[i] = source.Column{Name: c.Name, Offset: c.Attr.Offset, Size: c.Attr.Size, Labels: c.Labels}
		switch c.Kind {
		case KindInt:
			sc[i].Kind = source.Int32
		case KindBigint:
			sc[i].Kind = source.Int64
		case KindReal:
			sc[i].Kind = source.Float32
		case KindDouble:
			sc[i].Kind = source.Float64
		case KindUUID:
			sc[i].Kind = source.UUID
		case KindBytes:
			sc[i].Kind = source.Bytes
		case KindEnum:
			sc[i].Kind = source.Enum
		default:
			return nil, fmt.Errorf("column %s: type %s cannot be decoded from text", c.Name, c.Type)
		}
	}
	return source.NewLayout(tupleSize, sc...)
}
