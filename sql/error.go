package sql

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Error is an error in the SQL text: a syntax error, an unknown name, a
// type error or a construct the engine does not run yet. Line and Column
// are 1-based (Column counts characters, not bytes); Offset is the byte
// offset in the text (len(text) at the end of the input).
type Error struct {
	Line, Column int
	Offset       int
	Msg          string
	// secrets are the byte ranges of the text that Caret shows as ***
	// (the values of masked options, set by Compile).
	secrets []span
}

func (e *Error) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Msg)
}

// Caret renders the error with the line of src that it is on and a caret
// under its column:
//
//	line 3, column 14: expected ')' after the column list, found 'FROM'
//	  c INT FROM
//	        ^
//
// The value of an option on that line that may be a secret (password,
// properties.sasl.password, url, properties.sasl.jaas.config, any option
// in a WITH list that no connector takes: maskedOption) is shown as ***.
func (e *Error) Caret(src string) string {
	var b strings.Builder
	b.WriteString(e.Error())
	lines := strings.Split(src, "\n")
	if e.Line < 1 || e.Line > len(lines) {
		return b.String()
	}
	start := 0
	for _, l := range lines[:e.Line-1] {
		start += len(l) + 1
	}
	line := strings.TrimRight(lines[e.Line-1], "\r")
	var shown, pad strings.Builder
	col, caret := 1, -1
	masked, maskedAt := -1, 0 // the span being masked, where its *** is
	for i, r := range line {
		k := e.secretAt(start + i)
		if k >= 0 && k != masked {
			masked, maskedAt = k, pad.Len()
			shown.WriteString("***")
			pad.WriteString("   ")
		}
		if col == e.Column && caret < 0 {
			caret = pad.Len()
			if k >= 0 {
				caret = maskedAt // under the ***
			}
		}
		col++
		if k >= 0 {
			continue
		}
		masked = -1
		shown.WriteRune(r)
		if r == '\t' {
			pad.WriteByte('\t')
		} else {
			pad.WriteByte(' ')
		}
	}
	if caret < 0 {
		caret = pad.Len()
	}
	b.WriteString("\n  ")
	b.WriteString(shown.String())
	b.WriteString("\n  ")
	b.WriteString(pad.String()[:caret])
	b.WriteByte('^')
	return b.String()
}

// secretAt is the index of the secret span holding byte off, or -1.
func (e *Error) secretAt(off int) int {
	for k, s := range e.secrets {
		if off >= s.start && off < s.end {
			return k
		}
	}
	return -1
}

// pos is a position in the text.
type pos struct {
	off, line, col int
}

// position returns the position of byte offset off in src.
func position(src string, off int) pos {
	off = max(0, min(off, len(src)))
	line, col := 1, 1
	for i := 0; i < off; {
		r, n := utf8.DecodeRuneInString(src[i:])
		if i+n > off {
			break
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		i += n
	}
	return pos{off: off, line: line, col: col}
}

func errAt(p pos, format string, args ...any) *Error {
	return &Error{Line: p.line, Column: p.col, Offset: p.off, Msg: fmt.Sprintf(format, args...)}
}
