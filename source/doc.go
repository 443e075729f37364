// Package source decodes records (lines of CSV or JSON) into the
// engine's fixed tuple layout at line rate, with no allocation per record:
// the caller owns the buffers, as in VictoriaMetrics' lib/.
//
// A Layout says where each column goes in a tuple (the SQL compiler
// builds it; Layout.Schema is the query model's view of it). A Decoder
// (CSVDecoder, JSONDecoder) decodes the whole lines of a byte slice into
// whole tuples of another; a Reader wraps an io.Reader with a reusable
// buffer and fills the engine's task buffers with tuples.
//
// # Lines
//
// A record is one line, ended by "\n" or "\r\n"; the last line of an
// input may lack it (Decode's atEOF, or a Reader at the end of its
// input). Empty lines (JSON: lines of JSON whitespace only) are skipped,
// and counted: line numbers in errors are the input's. A UTF-8 byte order
// mark at the start of the input is dropped (columns in errors still
// count its 3 bytes).
//
// # Values
//
// Every kind reads a text: a CSV field's (unquoted), a JSON string's
// (escapes decoded), or for the numeric kinds also a JSON number's.
//
//   - Int32, Int64: an optional sign ('+' or '-') and decimal digits, no
//     space, no underscore; out of range is an error ("int32 out of
//     range"). A JSON number must be an integer (1.0 and 1e3 are errors);
//     a JSON string holding the digits (YSB's "event_time":
//     "1700000000000") is accepted. Stored little-endian.
//   - Float32, Float64: strconv.ParseFloat's syntax (Go's: "1e3", "0x1p-2",
//     "Inf", "NaN", "1_000.5"; a JSON number always parses); a value out of
//     the kind's range is an error (float32: 1e39). Stored as the IEEE bits,
//     little-endian.
//   - UUID: the canonical 8-4-4-4-12 hex text, either case, exactly 36
//     bytes; stored as its 16 bytes in text order.
//   - Bytes (Size n): the text's bytes, at most n (longer is an error),
//     zero-padded to n. JSON strings are not checked for valid UTF-8: their
//     bytes are stored as they are (escapes decoded; a lone surrogate
//     escape becomes U+FFFD, as encoding/json does).
//   - Enum (Labels): exactly one of the labels (case-sensitive), stored as
//     its position, int32; any other text is an error naming the labels.
//   - IPv4: a.b.c.d, each part 1 to 3 decimal digits of at most 255;
//     stored as the int32 whose value is a<<24|b<<16|c<<8|d (so 1.2.3.4
//     is 0x01020304, its bytes in the tuple 04 03 02 01).
//
// Bytes of the tuple that no column covers are zero.
//
// # CSV
//
// Fields are separated by CSVOptions.Comma (','). A field that starts
// with '"' is quoted (RFC 4180): it ends at the next lone '"', "" in it is
// one '"', and the separator or the line's end must follow; a quoted
// field cannot hold a line break (a record is a line). A '"' inside an
// unquoted field is taken as it is. Nothing is trimmed. With a header (the
// first non-empty line) the columns are named, in any order (names
// trimmed of spaces, may be quoted); every layout column must be among
// them, others are ignored; each record needs at least the fields up to
// the last named column. Without a header the fields are the layout's
// columns in its order. Fields after the last needed one are not read.
//
// # JSON
//
// A line holds one object. Members whose key (escapes decoded) is a
// layout column are its value; other members are skipped, whatever their
// value (nested to 10000 levels, as encoding/json), but must be valid
// JSON. Every column must be present, not null; a key given twice takes
// its last value. Nothing but whitespace may follow the object.
//
// The fast path: the first line the general decoder reads becomes a
// template (its keys, their order, the separators and spaces between
// them, whether each value was a string). A later line is checked against
// it byte for byte and its values parsed in place; at the first
// difference (another key, order or spacing, an escape in a value, a
// value the fast path does not parse) the general decoder reads the line
// instead, with the same result. After relearnAfter lines in a row that
// the fast path refused, the latest becomes the template.
//
// # Errors
//
// A record that does not parse is an *Error: the input's name, the line
// number, the 1-based byte column in the line (of the value, or of what
// is wrong) and the column's name:
//
//	events.csv: line 12, column 31 (field "ad_id"): bad UUID "xyz"
//
// With OnError Skip the record is counted (Decoder.Malformed, and the
// first one kept: FirstSkipped), no tuple is written for it, and decoding
// goes on; no allocation is made for it, but for a float that
// strconv.ParseFloat refuses. A CSV header that does not name the
// layout's columns fails whatever OnError says.
package source
