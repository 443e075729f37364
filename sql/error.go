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
func (e *Error) Caret(src string) string {
	var b strings.Builder
	b.WriteString(e.Error())
	lines := strings.Split(src, "\n")
	if e.Line < 1 || e.Line > len(lines) {
		return b.String()
	}
	line := strings.TrimRight(lines[e.Line-1], "\r")
	b.WriteString("\n  ")
	b.WriteString(line)
	b.WriteString("\n  ")
	col := 1
	for _, r := range line {
		if col >= e.Column {
			break
		}
		if r == '\t' {
			b.WriteByte('\t')
		} else {
			b.WriteByte(' ')
		}
		col++
	}
	b.WriteByte('^')
	return b.String()
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
