// Package source decodes records (lines of CSV or JSON) into the
// engine's fixed tuple layout at line rate, with no allocation per record:
// the caller owns the buffers, as in VictoriaMetrics' lib/.
//
// A Layout says where each column goes in a tuple (the SQL compiler
// builds it; Layout.Schema is the query model's view of it). A Decoder
// (CSVDecoder, JSONDecoder) decodes the whole records of a byte slice
// into whole tuples of another; a Reader wraps an io.Reader with a
// reusable buffer and fills the engine's task buffers with tuples.
//
// # Records and lines
//
// A record is one line, ended by "\n" or "\r\n", but for a CSV record
// whose quoted fields hold line breaks: it ends with the line its last
// field ends on. The last record of an input may lack its line break
// (Decode's atEOF, or a Reader at the end of its input). Empty lines
// (JSON: lines of JSON whitespace only) are skipped, and counted: line
// numbers in errors are the input's, the line a record starts on. A
// UTF-8 byte order mark at the start of the input is dropped (columns in
// errors still count its 3 bytes).
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
//   - String: the text's bytes as they are, any length (up to the
//     Reader's MaxLineSize), UTF-8 or not, stored as a 16-byte view
//     (package strview): a string of up to strview.MaxInline (12) bytes
//     is inline in its view; a longer one is copied into memory that
//     Options.Strings gives (one call per record, for all its long
//     strings, once the record parsed), which the view points to. A JSON
//     string for a String column must be a JSON string (a number is an
//     error). JSON escapes: \" \\ \/ \b \f \n \r \t and \uXXXX; a surrogate
//     pair is one code point, a lone surrogate becomes U+FFFD (as
//     encoding/json decodes it: no error); any other escape is an error.
//   - Timestamp: an epoch number in the layout's TimeUnit (an optional
//     sign, digits, optionally '.' and digits: "1709287201.25" in
//     seconds), converted to milliseconds rounding toward negative
//     infinity (-1.5 ms is -2); or a time as temporal.ParseTimestamp
//     reads it: RFC 3339 / ISO 8601 ("2024-03-01T10:00:01.25+01:00"),
//     SQL's "2024-03-01 10:00:01[.fff]" (UTC), a bare date. A JSON number
//     or string. Stored as int64 milliseconds since the Unix epoch, UTC;
//     out of int64's range is an error.
//   - Bool: true or false in any case, 1 or 0 (a JSON literal, number or
//     string); stored as int32 1 or 0.
//
// Bytes of the tuple that no column covers are zero, but NULL bits.
//
// # NULL
//
// A Nullable column is NULL when its JSON member is missing or null, or
// its CSV field is empty (quoted "" or not) and its kind is not String or
// Bytes: an empty CSV string is the empty string, so a String column
// from CSV is never NULL. (An Enum with an empty label cannot be given
// by a nullable column's CSV field: it reads as NULL.) A NULL leaves the
// value's bytes zero and sets the column's NULL bit. A JSON string ""
// for a number is an error, not NULL. A column that is not Nullable
// keeps the rules above: a missing or null JSON member is a malformed
// record ("missing field", "null value"), an empty CSV field is parsed
// as the kind's text (an error but for String, Bytes and an Enum with an
// empty label). The event time, the column at offset 0, is never
// nullable.
//
// # CSV
//
// Fields are separated by CSVOptions.Comma (','). A field that starts
// with '"' is quoted (RFC 4180): it ends at the next lone '"', "" in it is
// one '"', it may hold separators and line breaks ("\n" and "\r\n" kept
// as they are: the record goes on to the next line), and the separator
// or the line's end must follow. A quoted field with no closing quote
// before the input's end is an error at its record's first line, and
// only that line is passed over (OnError Skip): the lines after it are
// read as records again. Until the input ends such a record is still
// open, and the reader holds it (for a stream, no later record comes
// out): where more than the longest record the reader takes (64 MiB)
// follows it, the run fails at its line, Skip or not. A '"' inside an
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
// JSON. Every column that is not Nullable must be present, not null; a
// key given twice takes its last value, and every value given must be
// one the column takes (a null for a column that is not Nullable, or a
// bad number, fails the record wherever it stands). Nothing but
// whitespace may follow the object.
//
// The fast path: the first line the general decoder reads becomes a
// template (its keys, their order, the separators and spaces between
// them, whether each value was a string). A later line is checked against
// it byte for byte and its values parsed in place (strings with escapes
// included; a nullable column's null where the template has a string,
// or a string where it has null, too; a nullable column the template
// lacks is NULL); at the first difference (another key, order or
// spacing, a value the fast path does not parse) the general decoder
// reads the line instead, with the same result. After relearnAfter lines
// in a row that the fast path refused, the latest becomes the template.
//
// # Errors
//
// A record that does not parse is an *Error: the input's name, the line
// number (the record's first line), the 1-based byte column in the
// record (of the value, or of what is wrong; counted from the record's
// start, line breaks inside quoted CSV fields included) and the column's
// name:
//
//	events.csv: line 12, column 31 (field "ad_id"): bad UUID "xyz"
//
// With OnError Skip the record is counted (Decoder.Malformed, and the
// first one kept: FirstSkipped), no tuple is written for it, and decoding
// goes on; no allocation is made for it, but for a float that
// strconv.ParseFloat refuses. A CSV header that does not name the
// layout's columns fails whatever OnError says. A malformed CSV record
// ends where its fields do (a quoted field further on may put its end
// on a later line), or with the line where a quoted field's closing
// quote is followed by text other than a separator.
//
// An error of Options.Strings is no record's fault: Decode stops before
// the record that asked, returns the error as it is, and decodes that
// record again on the next call (one wrapping ErrStringsLater asks the
// caller to hand on the tuples decoded first: Reader returns it without
// keeping it).
package source
