package sql

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// CAST(string AS BOOLEAN) reads Flink's words: t, true, y, yes, 1 as TRUE
// and f, false, n, no, 0 as FALSE, in any case, spaces around them
// ignored; anything else is NULL.
func TestCastStringToBoolean(t *testing.T) {
	const src = `CREATE SOURCE e (ts TIMESTAMP(3) NOT NULL, s VARCHAR) WITH (connector = 'stdin', format = 'json');
`
	words := map[string]string{
		"1": "1", "0": "0", "t": "1", "T": "1", "true": "1", " TRUE ": "1", "TrUe": "1", "y": "1", "Y": "1", "yes": "1", "YES": "1",
		"f": "0", "F": "0", "false": "0", "False": "0", "n": "0", "N": "0", "no": "0", "No": "0",
		"": "NULL", "2": "NULL", "01": "NULL", "tr": "NULL", "yes!": "NULL", "on": "NULL", "off": "NULL", "nope": "NULL", "ye": "NULL",
	}
	var rows [][]any
	var want [][]string
	for w, b := range words {
		rows = append(rows, []any{w})
		want = append(want, []string{w, b})
	}
	rows = append(rows, []any{nil})
	want = append(want, []string{"NULL", "NULL"})
	_, out := semRun(t, src+`SELECT s, CAST(s AS BOOLEAN) AS b FROM e`, rows...)
	assert.Equal(t, want, out[0])
}

// CAST to DECIMAL(p, s) rounds to s decimals (0 without s: Flink's
// DECIMAL is DECIMAL(10, 0)), halves away from zero, as Flink's
// BigDecimal HALF_UP over the double's shortest decimal form.
func TestCastToDecimalRoundsToItsScale(t *testing.T) {
	const src = `CREATE SOURCE e (ts TIMESTAMP(3) NOT NULL, d DOUBLE, i BIGINT) WITH (connector = 'stdin', format = 'json');
`
	_, out := semRun(t, src+`SELECT CAST(d AS DECIMAL(10, 2)) AS a, CAST(d AS DECIMAL) AS b, CAST(d AS NUMERIC(5, 1)) AS c, CAST(i AS DECIMAL(4, 2)) AS n FROM e`,
		[]any{1.555, int64(7)}, []any{-2.5, int64(-3)}, []any{2.675, int64(0)}, []any{nil, nil})
	assert.Equal(t, [][]string{{"1.56", "2", "1.6", "7"}, {"-2.5", "-3", "-2.5", "-3"}, {"2.68", "3", "2.7", "0"}, {"NULL", "NULL", "NULL", "NULL"}}, out[0])
}

// An INSERT INTO a DECIMAL(p, s) column takes the DOUBLE as it is (only
// an explicit CAST rounds: sql/doc.go), so that a query such as Nexmark
// q1 runs without a pass of its own to round.
func TestInsertIntoDecimalTakesTheDouble(t *testing.T) {
	const src = `CREATE SOURCE e (ts TIMESTAMP(3) NOT NULL, d DOUBLE, i BIGINT) WITH (connector = 'stdin', format = 'json');
CREATE TABLE p (a BIGINT, d DECIMAL(10, 1), z DECIMAL) WITH (connector = 'print');
`
	p, out := semRun(t, src+`INSERT INTO p SELECT i, d, CAST(d AS DECIMAL) AS d2 FROM e`, []any{1.55, int64(7)}, []any{-2.5, int64(-3)})
	assert.Len(t, p.Queries, 1, "no part of its own")
	assert.Equal(t, [][]string{{"7", "1.55", "2"}, {"-3", "-2.5", "-3"}}, out[len(out)-1])
}

// CAST(string AS TIMESTAMP) reads Flink's CAST form too
// (DateTimeUtils.parseTimestampData: yyyy-[MM][M]-[dd][d] and an optional
// time [HH][H]:[mm][m]:[ss][s][.f]), whose fields may have one digit;
// what is no timestamp is NULL (the values are milliseconds).
func TestCastStringToTimestampOneDigitFields(t *testing.T) {
	const src = `CREATE SOURCE e (ts TIMESTAMP(3) NOT NULL, s VARCHAR) WITH (connector = 'stdin', format = 'json');
`
	words := map[string]string{
		"2024-3-1 1:2:3":            "1709254923000",
		"2024-03-1 10:2:03.5":       "1709287323500",
		"2024-3-01":                 "1709251200000",
		"2024-2-29 23:59:59.1239":   "1709251199123",
		"1969-1-1 0:0:0":            "-31536000000",
		"2024-03-01 10:00:00":       "1709287200000",
		"2023-2-29 1:2:3":           "NULL",
		"2024-3-1 24:0:0":           "NULL",
		"2024-3-1 1:2":              "NULL",
		"2024-3-1 1:2:3Z":           "NULL",
		"2024-123-1":                "NULL",
		"24-3-1":                    "NULL",
		"2024-3-1 1:2:3.1234567890": "NULL",
	}
	var rows [][]any
	var want [][]string
	for w, ts := range words {
		rows = append(rows, []any{w})
		want = append(want, []string{w, ts})
	}
	_, out := semRun(t, src+`SELECT s, CAST(s AS TIMESTAMP(3)) AS t FROM e`, rows...)
	assert.Equal(t, want, out[0])
}

// CAST(string AS DOUBLE) reads Java's Double.parseDouble syntax, as
// Flink's (BinaryStringDataUtil.toDouble): a number past the double's
// range is Infinity or -Infinity (it was NULL), NaN and Infinity are
// spelt so, after an optional sign (Go's inf, nan, +Inf were read, +NaN
// was not), an f, F, d or D suffix is taken, a '_' between digits is
// not (Go's syntax took it), and characters up to U+0020 around the
// number are ignored, tabs and newlines too; the kernels and the
// reference agree (semRun checks them against each other). REAL rounds
// the text to the nearest float32 at once, as Java's Float.parseFloat:
// not to a double first, which can round twice.
func TestCastStringToDoubleAsJava(t *testing.T) {
	const src = `CREATE SOURCE e (ts TIMESTAMP(3) NOT NULL, s VARCHAR) WITH (connector = 'stdin', format = 'json');
`
	words := map[string][2]string{
		"1e400": {"+Inf", "+Inf"}, "-1e400": {"-Inf", "-Inf"}, "1E+999999999999": {"+Inf", "+Inf"},
		"0x1p99999": {"+Inf", "+Inf"}, "1e-400": {"0", "0"}, "-1e-400": {"-0", "-0"}, "1e39": {"1e+39", "+Inf"},
		"NaN": {"NaN", "NaN"}, "+NaN": {"NaN", "NaN"}, "-NaN": {"NaN", "NaN"},
		"Infinity": {"+Inf", "+Inf"}, "+Infinity": {"+Inf", "+Inf"}, "-Infinity": {"-Inf", "-Inf"},
		"inf": {"NULL", "NULL"}, "+inf": {"NULL", "NULL"}, "Inf": {"NULL", "NULL"}, "INFINITY": {"NULL", "NULL"},
		"nan": {"NULL", "NULL"}, "NAN": {"NULL", "NULL"}, "NaNd": {"NULL", "NULL"}, "Infinityf": {"NULL", "NULL"},
		"1.5d": {"1.5", "1.5"}, "2F": {"2", "2"}, "-.5e1D": {"-5", "-5"}, "1.5dd": {"NULL", "NULL"}, "d": {"NULL", "NULL"},
		"0x1p3": {"8", "8"}, "0X1.8P1d": {"3", "3"}, "0x.8p1": {"1", "1"}, "0x10": {"NULL", "NULL"}, "0x1_0p0": {"NULL", "NULL"},
		"1_000": {"NULL", "NULL"}, "1e": {"NULL", "NULL"}, ".": {"NULL", "NULL"}, "1.": {"1", "1"}, ".5": {"0.5", "0.5"},
		" 1.5\t": {"1.5", "1.5"}, "\n-2 ": {"-2", "-2"}, "- 2": {"NULL", "NULL"}, "": {"NULL", "NULL"}, "1e5 x": {"NULL", "NULL"},
		// just above the tie of the float32s 1 and 1+2^-23: its double is
		// the tie, which rounds to 1; the text itself rounds up (the
		// float32 1+2^-23, printed here as the double it is)
		"1.0000000596046447753906251": {"1.0000000596046448", "1.0000001192092896"},
	}
	var rows [][]any
	var want [][]string
	for w, d := range words {
		rows = append(rows, []any{w})
		want = append(want, []string{w, d[0], d[1]})
	}
	_, out := semRun(t, src+`SELECT s, CAST(s AS DOUBLE) AS d, CAST(s AS REAL) AS r FROM e`, rows...)
	assert.Equal(t, want, out[0])
}

// CAST(x AS TIMESTAMP(p)) with p < 3 keeps p digits of the second's
// fraction, as Flink's: the time floored to a multiple of 10^(3-p)
// milliseconds (it kept the milliseconds); before 1970 too (Flink's
// DateTimeUtils.truncate truncates the epoch milliseconds toward zero
// there, moving 1969-12-31 23:59:59.5 to 1970; its cast of a string
// floors the fraction, as this does). TIMESTAMP_LTZ(p) alike; p of 3 or
// more keeps the milliseconds. A string and an integer (milliseconds)
// are cast to the time first.
func TestCastToTimestampPrecision(t *testing.T) {
	const src = `CREATE SOURCE e (ts TIMESTAMP(3) NOT NULL, t TIMESTAMP(3), s VARCHAR, i BIGINT) WITH (connector = 'stdin', format = 'json');
`
	_, out := semRun(t, src+`SELECT CAST(t AS TIMESTAMP(0)) AS p0, CAST(t AS TIMESTAMP(1)) AS p1, CAST(t AS TIMESTAMP(2)) AS p2,
		CAST(t AS TIMESTAMP(3)) AS p3, CAST(t AS TIMESTAMP(6)) AS p6, CAST(t AS TIMESTAMP_LTZ(0)) AS l0,
		CAST(t AS TIMESTAMP(0) WITH LOCAL TIME ZONE) AS w0, CAST(s AS TIMESTAMP(1)) AS s1, CAST(i AS TIMESTAMP(0)) AS i0,
		CAST(CAST(t AS TIMESTAMP(0)) AS VARCHAR) AS v0, TRY_CAST(s AS TIMESTAMP(0)) AS s0 FROM e`,
		[]any{int64(1709287201789), "2024-03-01 10:00:01.789", int64(1789)},
		[]any{int64(-1), "1969-12-31 23:59:59.999", int64(-1)},
		[]any{int64(-1500), "1969-12-31 23:59:58.5", int64(-1500)},
		[]any{int64(2000), "1970-01-01 00:00:02", int64(2000)},
		[]any{nil, "x", nil})
	assert.Equal(t, [][]string{
		{"1709287201000", "1709287201700", "1709287201780", "1709287201789", "1709287201789", "1709287201000", "1709287201000", "1709287201700", "1000", "2024-03-01 10:00:01.000", "1709287201000"},
		{"-1000", "-100", "-10", "-1", "-1", "-1000", "-1000", "-100", "-1000", "1969-12-31 23:59:59.000", "-1000"},
		{"-2000", "-1500", "-1500", "-1500", "-1500", "-2000", "-2000", "-1500", "-2000", "1969-12-31 23:59:58.000", "-2000"},
		{"2000", "2000", "2000", "2000", "2000", "2000", "2000", "2000", "2000", "1970-01-01 00:00:02.000", "2000"},
		{"NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL"},
	}, out[0])
}

// CAST(BIGINT AS REAL) rounds the integer to the nearest float32 once, as
// Java's (float) of a long: 2^60 + 2^36 + 1 lies just above the tie of the
// float32s 2^60 and 2^60 + 2^37, and rounds up; through a double (2^60 +
// 2^36, the tie) it would round to 2^60. The kernels and the reference
// agree (semRun).
func TestCastBigintToRealRoundsOnce(t *testing.T) {
	const src = `CREATE SOURCE e (ts TIMESTAMP(3) NOT NULL, i BIGINT) WITH (connector = 'stdin', format = 'json');
`
	_, out := semRun(t, src+`SELECT i, CAST(i AS REAL) AS r FROM e`,
		[]any{int64(1<<60 + 1<<36 + 1)}, []any{int64(1<<60 + 1<<36)}, []any{int64(1<<24 + 1)})
	// the float32s as doubles: 2^60 + 2^37, 2^60 (the tie, to the even
	// one), 2^24 (the tie of 2^24 and 2^24 + 2)
	assert.Equal(t, [][]string{
		{"1152921573326323713", "1.1529216420458004e+18"},
		{"1152921573326323712", "1.152921504606847e+18"},
		{"16777217", "1.6777216e+07"},
	}, out[0])
}

// An INSERT INTO a TIMESTAMP(p) column with p < 3 floors the time to p
// digits of the fraction, as CAST AS TIMESTAMP(p) does (Flink casts a
// query's column to the sink's type); TIMESTAMP(3) and more keep the
// milliseconds, with no part of their own.
func TestInsertIntoTimestampPrecision(t *testing.T) {
	const src = `CREATE SOURCE e (ts TIMESTAMP(3) NOT NULL, t TIMESTAMP(3)) WITH (connector = 'stdin', format = 'json');
CREATE TABLE p (a TIMESTAMP(0), b TIMESTAMP(1), c TIMESTAMP_LTZ(2), d TIMESTAMP(3), f TIMESTAMP(6)) WITH (connector = 'print');
CREATE TABLE q (d TIMESTAMP(3), f TIMESTAMP) WITH (connector = 'print');
`
	rows := [][]any{{int64(1709287201789)}, {int64(-1)}, {int64(-1500)}, {nil}}
	_, out := semRun(t, src+`INSERT INTO p SELECT t, t AS t1, t AS t2, t AS t3, t AS t6 FROM e`, rows...)
	assert.Equal(t, [][]string{
		{"1709287201000", "1709287201700", "1709287201780", "1709287201789", "1709287201789"},
		{"-1000", "-100", "-10", "-1", "-1"},
		{"-2000", "-1500", "-1500", "-1500", "-1500"},
		{"NULL", "NULL", "NULL", "NULL", "NULL"},
	}, out[len(out)-1])
	p, out := semRun(t, src+`INSERT INTO q SELECT t, t AS t6 FROM e`, rows...)
	assert.Len(t, p.Queries, 1, "no part of its own")
	assert.Equal(t, [][]string{{"1709287201789", "1709287201789"}, {"-1", "-1"}, {"-1500", "-1500"}, {"NULL", "NULL"}}, out[len(out)-1])

	// a string's time and an integer's (milliseconds) are floored too
	const other = `CREATE SOURCE e (ts TIMESTAMP(3) NOT NULL, s VARCHAR, i BIGINT) WITH (connector = 'stdin', format = 'json');
CREATE TABLE r (a TIMESTAMP(0), b TIMESTAMP(1)) WITH (connector = 'print');
`
	_, out = semRun(t, other+`INSERT INTO r SELECT s, i FROM e`,
		[]any{"2024-03-01 10:00:01.789", int64(1709287201789)}, []any{"1969-12-31 23:59:59.999", int64(-1)})
	assert.Equal(t, [][]string{{"1709287201000", "1709287201700"}, {"-1000", "-100"}}, out[len(out)-1])
}
