package source

import (
	"fmt"
	"strconv"
	"strings"
)

// OnError says what a decoder does with a record that does not parse.
type OnError uint8

const (
	// Fail stops the decoding at the record with an *Error (the default).
	Fail OnError = iota
	// Skip counts the record as malformed (Decoder.Malformed), writes no
	// tuple for it and goes on with the next line.
	Skip
)

// ParseOnError reads an on_error option's value: "fail" or "skip".
func ParseOnError(s string) (OnError, error) {
	switch strings.ToLower(s) {
	case "fail", "":
		return Fail, nil
	case "skip":
		return Skip, nil
	}
	return 0, fmt.Errorf("on_error %q: want fail or skip", s)
}

func (o OnError) String() string {
	if o == Skip {
		return "skip"
	}
	return "fail"
}

// Error is a record that did not parse.
type Error struct {
	Input  string // the input's name (Options.Input); may be empty
	Line   int64  // 1-based line number
	Column int    // 1-based byte column in the line; 0 when the error is the line's
	Field  string // the layout column concerned; may be empty
	Msg    string // what is wrong, quoting the text at fault
}

// Error reads `events.csv: line 12, column 31 (field "ad_id"): bad UUID "xyz"`.
func (e *Error) Error() string {
	var b strings.Builder
	if e.Input != "" {
		b.WriteString(e.Input)
		b.WriteString(": ")
	}
	b.WriteString("line ")
	b.WriteString(strconv.FormatInt(e.Line, 10))
	if e.Column > 0 {
		b.WriteString(", column ")
		b.WriteString(strconv.Itoa(e.Column))
	}
	if e.Field != "" {
		b.WriteString(" (field ")
		b.WriteString(strconv.Quote(e.Field))
		b.WriteString(")")
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

// quoteTrunc quotes s for a message, cut so that a garbage multi-megabyte
// line does not end up whole in an error.
func quoteTrunc(s []byte) string {
	const max = 64
	if len(s) > max {
		return strconv.Quote(string(s[:max])) + "...(" + strconv.Itoa(len(s)) + " bytes)"
	}
	return strconv.Quote(string(s))
}

// errState is the error being reported for the current line: kept as
// parts (no allocation) until the decoder knows it fails rather than
// skips.
type errState struct {
	col   int    // 1-based column, 0 for none
	field int    // layout column index, -1 for none
	msg   string // constant text
	text  []byte // the text at fault (quoted after msg), nil for none
	quote bool   // whether to append text
	extra string // appended after the quoted text
}
