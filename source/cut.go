package source

import "bytes"

// CutRecords returns the length of the longest prefix of b, which starts
// at a record's start, that is whole records: up to and including the
// last '\n' that ends one (0 where none does). A JSON line ends at any
// '\n'. A CSV record's '\n' may sit inside a quoted field: the fields are
// followed as the decoder reads them (a field that opens with a quote is
// quoted until a lone quote, "" being a quote in it; a quote anywhere
// else is a character), so that a cut never falls inside a record.
// Parallel decoding cuts its input into blocks so.
func CutRecords(b []byte, csv bool, comma byte) int {
	if !csv || bytes.IndexByte(b, '"') < 0 {
		return bytes.LastIndexByte(b, '\n') + 1
	}
	const (
		fieldStart = iota
		unquoted
		quoted
		quoteSeen // a quote inside a quoted field: its end, or the first of ""
	)
	state, cut := fieldStart, 0
	for i, c := range b {
		switch state {
		case fieldStart, unquoted, quoteSeen:
			switch {
			case c == '\n':
				state, cut = fieldStart, i+1
			case c == comma:
				state = fieldStart
			case c == '"' && state == fieldStart:
				state = quoted
			case c == '"' && state == quoteSeen:
				state = quoted // "" inside a quoted field
			default:
				state = unquoted // text after a closing quote is the decoder's error
			}
		case quoted:
			if c == '"' {
				state = quoteSeen
			}
		}
	}
	return cut
}
