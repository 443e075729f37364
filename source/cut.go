package source

import "bytes"

// CutRecords returns the length of the longest prefix of b, which starts
// at a record's start, that is whole records: up to and including the
// last '\n' that ends one (0 where none does). A JSON line ends at any
// '\n'. A CSV record's '\n' may sit inside a quoted field: the fields are
// followed as the decoder reads them (a field that opens with a quote is
// quoted until a lone quote, "" being a quote in it; a quote anywhere
// else is a character; text after a closing quote makes the record
// malformed, and the decoder ends it with its line), so that a cut never
// falls inside a record. Parallel decoding cuts its input into blocks so.
func CutRecords(b []byte, csv bool, comma byte) int {
	return cutRecords(b, csv, comma, false)
}

// CutHeader returns the length of the prefix of b, CSV text that starts
// the input, up to the end of its first record that is not an empty line:
// the header, as the decoder finds it (it skips empty lines, a byte order
// mark at the input's start and a line's \r; a quoted field may hold a
// line break); 0 where it does not end in b.
func CutHeader(b []byte, comma byte) int {
	pos := 0
	for {
		line := b[pos:]
		nl := bytes.IndexByte(line, '\n')
		if nl >= 0 {
			line = line[:nl]
		}
		if pos == 0 {
			line = TrimBOM(line)
		}
		if len(bytes.TrimSuffix(line, []byte{'\r'})) > 0 || nl < 0 {
			break
		}
		pos += nl + 1
	}
	rec := b[pos:]
	if pos == 0 {
		rec = TrimBOM(rec) // a quote after it opens a quoted name
	}
	if n := cutRecords(rec, true, comma, true); n > 0 {
		return len(b) - len(rec) + n
	}
	return 0
}

// cutRecords is CutRecords, or with first the length of b's first record
// alone.
func cutRecords(b []byte, csv bool, comma byte, first bool) int {
	if !csv || bytes.IndexByte(b, '"') < 0 {
		if first {
			return bytes.IndexByte(b, '\n') + 1
		}
		return bytes.LastIndexByte(b, '\n') + 1
	}
	const (
		fieldStart = iota
		unquoted
		quoted
		quoteSeen // a quote inside a quoted field: its end, or the first of ""
		badLine   // text after a closing quote: the record ends with the line
	)
	state, cut := fieldStart, 0
	for i, c := range b {
		switch state {
		case fieldStart, unquoted, quoteSeen:
			switch {
			case c == '\n':
				state, cut = fieldStart, i+1
				if first {
					return cut
				}
			case c == comma:
				state = fieldStart
			case c == '"' && state == fieldStart:
				state = quoted
			case c == '"' && state == quoteSeen:
				state = quoted // "" inside a quoted field
			case state == quoteSeen:
				// The decoder's error: no quote after it opens a field
				// (\r too, where no \n follows it at once).
				state = badLine
			default:
				state = unquoted
			}
		case quoted:
			if c == '"' {
				state = quoteSeen
			}
		case badLine:
			if c == '\n' {
				state, cut = fieldStart, i+1
				if first {
					return cut
				}
			}
		}
	}
	return cut
}
