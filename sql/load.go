package sql

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/saber-hx/saber-hx/source"
	"github.com/saber-hx/saber-hx/strview"
)

// LoadCSV reads the table's rows from CSV text (format = 'csv'): one line
// per row, the columns in declared order, after a header line naming them
// if the table says header = 'true'. The text is decoded by package
// source's CSV decoder: RFC 4180 quoting, empty lines skipped, integers
// in decimal, floats, UUIDs in canonical text, BYTES(n) as at most n
// bytes (zero-padded), ENUMs by label, VARCHARs as they are, TIMESTAMPs
// in RFC 3339 or SQL's form (or epoch milliseconds), BOOLEANs as true or
// false, each value as written (no spaces around it); an empty field is
// NULL in a column not declared NOT NULL (but a VARCHAR's, which is the
// empty string); fields after the table's columns are ignored. A bad line
// is refused naming its line and column (a *source.Error under the
// table's name); so is a header that is not the columns' names in order,
// and two rows with the same key (SetRows). The long strings live in
// memory the table keeps (an arena), until the next load.
func (t *Table) LoadCSV(r io.Reader) error {
	old := t.strings
	t.strings = &strview.Arena{}
	rows, err := t.readCSV(r)
	if err == nil {
		err = t.SetRows(rows)
	}
	if err != nil {
		t.strings.Free()
		t.strings = old
		return err
	}
	if old != nil {
		old.Free()
	}
	return nil
}

// readCSV decodes the rows of a CSV text, RowSize bytes each, their long
// strings in t.strings.
func (t *Table) readCSV(r io.Reader) ([][]byte, error) {
	l, err := sourceLayout(t.RowSize(), t.Columns, "", nil)
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
	if t.strings == nil {
		t.strings = &strview.Arena{}
	}
	d, err := source.NewCSVDecoder(l, source.CSVOptions{Header: t.Header, Options: source.Options{Strings: source.ArenaStrings(t.strings)}})
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", t.Name, err)
	}
	return t.readRows(r, d)
}

// LoadJSON reads the table's rows from JSON lines (format = 'json'): one
// object a line, the columns by name (other members ignored), values as a
// json source's (package source): a member missing or null is NULL in a
// column not declared NOT NULL. A bad line is refused naming its line.
func (t *Table) LoadJSON(r io.Reader) error {
	l, err := sourceLayout(t.RowSize(), t.Columns, "", nil)
	if err != nil {
		return fmt.Errorf("table %s: %w", t.Name, err)
	}
	old := t.strings
	t.strings = &strview.Arena{}
	d, err := source.NewJSONDecoder(l, source.JSONOptions{Options: source.Options{Strings: source.ArenaStrings(t.strings)}})
	if err != nil {
		t.strings = old
		return fmt.Errorf("table %s: %w", t.Name, err)
	}
	rows, err := t.readRows(r, d)
	if err == nil {
		err = t.SetRows(rows)
	}
	if err != nil {
		t.strings.Free()
		t.strings = old
		return err
	}
	if old != nil {
		old.Free()
	}
	return nil
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
	// The decoder's rules (source.CutHeader): empty lines before the
	// header, a byte order mark, quoted names.
	var read strings.Builder
	var text string
	n := 1
	for ; ; n++ {
		line, err := br.ReadString('\n')
		if err != nil && err != io.EOF {
			return "", fmt.Errorf("table %s: line %d: %w", t.Name, n, err)
		}
		read.WriteString(line)
		if line == "" {
			return read.String(), nil // no header, no rows
		}
		text = strings.TrimRight(strings.TrimSuffix(line, "\n"), "\r")
		if n == 1 {
			text = strings.TrimPrefix(text, "\xef\xbb\xbf")
		}
		if text != "" {
			break
		}
	}
	got, err := csv.NewReader(strings.NewReader(text)).Read()
	for i := range got {
		got[i] = strings.TrimSpace(got[i])
	}
	if err != nil || !slices.Equal(got, want) {
		return "", fmt.Errorf("table %s: line %d: header %q, want %q", t.Name, n, text, strings.Join(want, ","))
	}
	return read.String(), nil
}

// Layout is the source's tuple layout for package source's CSV and JSON
// decoders: each column where the compiler laid it out, with its NULL
// bit, but the processing time (ProcTime), which no record holds; epoch
// numbers in TIMESTAMP columns in TimeUnit; the DictNumbers columns
// encoded in dict. With dict nil they are not: their numbers stay 0, for
// queries that hash the strings (specs without engine.Spec.DictColumns).
func (s *Source) Layout(dict *strview.Dict) (*source.Layout, error) {
	l, err := sourceLayout(s.Schema.TupleSize, s.Columns, s.ProcTime, func(c *source.Column, attr string) {
		if at, ok := s.DictNumbers[attr]; ok && dict != nil {
			c.Dict, c.NumberAt = dict, at
		}
	})
	if err != nil {
		return nil, err
	}
	if l.TimeUnit, err = source.ParseTimeUnit(s.TimeUnit); err != nil {
		return nil, err
	}
	return l, nil
}

// sourceLayout is package source's layout of columns in a tuple of
// tupleSize bytes, for its decoders, without the column skip; edit, where
// set, completes each column (the attribute's name given).
func sourceLayout(tupleSize int, cols []Column, skip string, edit func(c *source.Column, attr string)) (*source.Layout, error) {
	sc := make([]source.Column, 0, len(cols))
	for _, c := range cols {
		if c.Name == skip && skip != "" {
			continue
		}
		sc = append(sc, source.Column{Name: c.Name, Offset: c.Attr.Offset, Size: c.Attr.Size, Labels: c.Labels, Nullable: c.Attr.Nullable, NullBit: c.Attr.NullBit})
		i := len(sc) - 1
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
		case KindString:
			sc[i].Kind = source.String
		case KindTimestamp:
			sc[i].Kind = source.Timestamp
		case KindBool:
			sc[i].Kind = source.Bool
		default:
			return nil, fmt.Errorf("column %s: type %s cannot be decoded from text", c.Name, c.Type)
		}
		if edit != nil {
			edit(&sc[i], c.Attr.Name)
		}
	}
	return source.NewLayout(tupleSize, sc...)
}
