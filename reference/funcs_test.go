package reference

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
)

// fcase is one row of a function's table: an expression of constants and
// its value, computed by hand from query.Funcs's rules.
type fcase struct {
	e    query.Expr
	want Value
}

func runTable(t *testing.T, cases []fcase) {
	t.Helper()
	for _, c := range cases {
		same(t, c.want, ev(t, c.e), "%s", c.e)
	}
}

func TestAbsFloorCeil(t *testing.T) {
	runTable(t, []fcase{
		{call("abs", I(-5)), Int(5)},
		{call("abs", I(5)), Int(5)},
		{call("abs", I(math.MinInt64)), Int(math.MinInt64)}, // itself
		{call("abs", Fl(-2.5)), Float(2.5)},
		{call("abs", Fl(math.Inf(-1))), Float(math.Inf(1))},
		{call("abs", Fl(math.NaN())), Float(math.NaN())},
		{call("abs", NI), Null(IntKind)},
		{call("abs", NF), Null(FloatKind)},
		{call("abs", query.Null{}), Null(IntKind)}, // an untyped NULL is an integer here
		{call("floor", Fl(-2.5)), Float(-3)},
		{call("floor", Fl(2.5)), Float(2)},
		{call("floor", I(-7)), Int(-7)}, // an integer is its own floor
		{call("floor", NF), Null(FloatKind)},
		{call("ceil", Fl(-2.5)), Float(-2)},
		{call("ceil", Fl(2.1)), Float(3)},
		{call("ceil", I(7)), Int(7)},
		{call("ceil", NI), Null(IntKind)},
	})
}

func TestRound(t *testing.T) {
	runTable(t, []fcase{
		// Halves away from zero.
		{call("round", Fl(2.5)), Float(3)},
		{call("round", Fl(-2.5)), Float(-3)},
		{call("round", Fl(0.5)), Float(1)},
		{call("round", Fl(1.4999)), Float(1)},
		{call("round", Fl(0.125), I(2)), Float(0.13)},
		{call("round", Fl(-0.125), I(2)), Float(-0.13)},
		// The decimal as written, not its binary fraction
		// (2.675 is 2.67499999999999982236431605997495353221893310546875).
		{call("round", Fl(2.675), I(2)), Float(2.68)},
		{call("round", Fl(1.005), I(2)), Float(1.01)},
		{call("round", Fl(-1.005), I(2)), Float(-1.01)},
		{call("round", Fl(2.674), I(2)), Float(2.67)},
		// Fewer decimals than d: itself.
		{call("round", Fl(1.5), I(3)), Float(1.5)},
		{call("round", Fl(1.5), I(400)), Float(1.5)},
		{call("round", Fl(math.MaxInt64), I(math.MaxInt64)), Float(math.MaxInt64)},
		// Negative d: to a multiple of 10^-d.
		{call("round", Fl(1234.5678), I(-2)), Float(1200)},
		{call("round", Fl(1250), I(-2)), Float(1300)},
		{call("round", Fl(-1250), I(-2)), Float(-1300)},
		{call("round", Fl(49), I(-2)), Float(0)},
		{call("round", Fl(50), I(-2)), Float(100)},
		{call("round", Fl(1e300), I(-400)), Float(0)},
		{call("round", Fl(1e300), I(math.MinInt64)), Float(0)},
		// Zero is +0; past the range an infinity.
		{call("round", Fl(-0.0001), I(2)), Float(0)},
		{call("round", Fl(math.Copysign(0, -1))), Float(0)},
		{call("round", Fl(math.MaxFloat64), I(-308)), Float(math.Inf(1))},
		{call("round", Fl(math.NaN()), I(2)), Float(math.NaN())},
		{call("round", Fl(math.Inf(-1))), Float(math.Inf(-1))},
		{call("round", Fl(5e-324)), Float(0)},
		// Integers: themselves for d >= 0, else halves away from zero.
		{call("round", I(12345)), Int(12345)},
		{call("round", I(12345), I(2)), Int(12345)},
		{call("round", I(15), I(-1)), Int(20)},
		{call("round", I(-15), I(-1)), Int(-20)},
		{call("round", I(14), I(-1)), Int(10)},
		{call("round", I(-14), I(-1)), Int(-10)},
		{call("round", I(12345), I(-3)), Int(12000)},
		{call("round", I(7), I(-20)), Int(0)},
		{call("round", I(7), I(math.MinInt64)), Int(0)},
		{call("round", I(4e18), I(-19)), Int(0)},
		// Past int64: wrapped, as integer arithmetic wraps.
		{call("round", I(math.MaxInt64), I(-1)), Int(-9223372036854775806)}, // 9223372036854775810 - 2^64
		{call("round", I(5e18), I(-19)), Int(-8446744073709551616)},         // 1e19 - 2^64
		{call("round", NF), Null(FloatKind)},
		{call("round", Fl(1.5), NI), Null(FloatKind)},
		{call("round", I(15), NI), Null(IntKind)},
	})
}

func TestMod(t *testing.T) {
	runTable(t, []fcase{
		{call("mod", I(7), I(3)), Int(1)},
		{call("mod", I(-7), I(3)), Int(-1)}, // a's sign
		{call("mod", I(7), I(-3)), Int(1)},
		{call("mod", I(-7), I(-3)), Int(-1)},
		{call("mod", I(6), I(3)), Int(0)},
		{call("mod", I(7), I(0)), Int(0)}, // as 7 / 0
		{call("mod", I(math.MinInt64), I(-1)), Int(0)},
		{call("mod", NI, I(3)), Null(IntKind)},
		{call("mod", I(7), NI), Null(IntKind)},
	})
}

func TestCaseAndTrim(t *testing.T) {
	runTable(t, []fcase{
		{call("lower", S("HeLLo World")), Str("hello world")},
		// Full case mapping, as Java's (final sigma, ß to SS, ﬁ to FI).
		{call("lower", S("ÄÖÜ ΣΑΣ")), Str("äöü σας")},
		{call("lower", S("ΟΔΟΣ. İ")), Str("οδος. i\u0307")},
		{call("upper", S("héllo")), Str("HÉLLO")},
		{call("upper", S("straße ﬁ")), Str("STRASSE FI")},
		{call("upper", S("")), Str("")},
		// An invalid byte becomes U+FFFD.
		{call("lower", S("A\xffB")), Str("a\uFFFDb")},
		{call("upper", S("a\xffb")), Str("A\uFFFDB")},
		{call("lower", NS), Null(StringKind)},
		{call("upper", NS), Null(StringKind)},
		{call("trim", S("  a b  ")), Str("a b")},
		{call("ltrim", S("  a b  ")), Str("a b  ")},
		{call("rtrim", S("  a b  ")), Str("  a b")},
		{call("trim", S("\t a \n")), Str("\t a \n")}, // spaces only
		{call("trim", S("    ")), Str("")},
		{call("trim", NS), Null(StringKind)},
		{call("ltrim", NS), Null(StringKind)},
		{call("rtrim", NS), Null(StringKind)},
	})
}

func TestCharLength(t *testing.T) {
	runTable(t, []fcase{
		{call("char_length", S("")), Int(0)},
		{call("char_length", S("abc")), Int(3)},
		{call("char_length", S("héllo")), Int(5)},
		{call("char_length", S("日本語")), Int(3)},
		{call("char_length", S("a\xffb")), Int(3)},   // an invalid byte is a character
		{call("char_length", S("\xe6\x97")), Int(2)}, // a truncated rune: two bytes, two characters
		{call("char_length", NS), Null(IntKind)},
	})
}

func TestSubstring(t *testing.T) {
	runTable(t, []fcase{
		{call("substring", S("hello"), I(2), I(3)), Str("ell")},
		{call("substring", S("hello"), I(2)), Str("ello")},
		{call("substring", S("hello"), I(1)), Str("hello")},
		// Flink's: a start of 0 is 1; a negative start counts back from
		// the end, empty where that is before the first character.
		{call("substring", S("hello"), I(0), I(3)), Str("hel")},
		{call("substring", S("hello"), I(-1), I(3)), Str("o")},
		{call("substring", S("hello"), I(-3)), Str("llo")},
		{call("substring", S("hello"), I(-3), I(2)), Str("ll")},
		{call("substring", S("hello"), I(-5)), Str("hello")},
		{call("substring", S("hello"), I(-6)), Str("")},
		{call("substring", S("hello"), I(0)), Str("hello")},
		{call("substring", S("héllo"), I(-4), I(2)), Str("él")},
		// A negative len is NULL; past the end is empty.
		{call("substring", S("hello"), I(1), I(-1)), Null(StringKind)},
		{call("substring", S(""), I(1), I(-1)), Null(StringKind)},
		{call("substring", S("hello"), I(2), I(0)), Str("")},
		{call("substring", S("hello"), I(4), I(10)), Str("lo")},
		{call("substring", S("hello"), I(6)), Str("")},
		{call("substring", S("hello"), I(10), I(2)), Str("")},
		// Bounds at the int64 edges: start+len computed unbounded.
		{call("substring", S("hello"), I(2), I(math.MaxInt64)), Str("ello")},
		{call("substring", S("hello"), I(math.MinInt64), I(math.MaxInt64)), Str("")},
		{call("substring", S("hello"), I(-2), I(math.MaxInt64)), Str("lo")},
		{call("substring", S("hello"), I(-9223372036854775807), I(math.MaxInt64)), Str("")},
		{call("substring", S("hello"), I(math.MaxInt64), I(math.MaxInt64)), Str("")},
		// Characters, not bytes.
		{call("substring", S("héllo"), I(2), I(2)), Str("él")},
		{call("substring", S("日本語"), I(3)), Str("語")},
		{call("substring", S("a\xffb"), I(2), I(1)), Str("\xff")},
		{call("substring", NS, I(1)), Null(StringKind)},
		{call("substring", S("hello"), NI), Null(StringKind)},
		{call("substring", S("hello"), I(1), NI), Null(StringKind)},
	})
}

func TestConcat(t *testing.T) {
	runTable(t, []fcase{
		{call("concat", S("a"), S("b"), S("c")), Str("abc")},
		{call("concat", S("a")), Str("a")},
		{call("concat", S("n="), I(-12), S(" f="), Fl(2.5)), Str("n=-12 f=2.5")},
		{call("concat", Fl(1), S("|"), Fl(1e21), S("|"), Fl(0.1)), Str("1|1e+21|0.1")},
		{call("concat", S("t="), Ts(1709214306789)), Str("t=2024-02-29 13:45:06.789")},
		{call("concat", S("x"), NS), Null(StringKind)},
		{call("concat", NI, S("x")), Null(StringKind)},
	})
	// Booleans print as CAST to VARCHAR does (the IR's typing refuses them
	// in CONCAT today; the function itself takes them).
	v, err := callFunc("concat", []Value{Str("b="), Bool(true), Str(","), Bool(false)})
	require.NoError(t, err)
	same(t, Str("b=TRUE,FALSE"), v)
}

func TestSplitIndex(t *testing.T) {
	runTable(t, []fcase{
		{call("split_index", S("a,b,,c"), S(","), I(0)), Str("a")},
		{call("split_index", S("a,b,,c"), S(","), I(1)), Str("b")},
		{call("split_index", S("a,b,,c"), S(","), I(2)), Str("")},
		{call("split_index", S("a,b,,c"), S(","), I(3)), Str("c")},
		{call("split_index", S("a,b,,c"), S(","), I(4)), Null(StringKind)},  // past the end
		{call("split_index", S("a,b,,c"), S(","), I(-1)), Null(StringKind)}, // negative
		{call("split_index", S("a,b"), S(","), I(math.MaxInt64)), Null(StringKind)},
		{call("split_index", S("a::b::c"), S("::"), I(2)), Str("c")},
		{call("split_index", S(",a,"), S(","), I(0)), Str("")},
		{call("split_index", S(",a,"), S(","), I(2)), Str("")},
		{call("split_index", S("abc"), S(","), I(0)), Str("abc")},
		// An empty string has no pieces (Flink's splitByWholeSeparatorPreserveAllTokens).
		{call("split_index", S(""), S(","), I(0)), Null(StringKind)},
		{call("split_index", S(""), S(""), I(0)), Null(StringKind)},
		// An empty separator leaves s one piece.
		{call("split_index", S("abc"), S(""), I(0)), Str("abc")},
		{call("split_index", S("abc"), S(""), I(1)), Null(StringKind)},
		{call("split_index", S("日,本"), S(","), I(1)), Str("本")},
		{call("split_index", NS, S(","), I(0)), Null(StringKind)},
		{call("split_index", S("a"), NS, I(0)), Null(StringKind)},
		{call("split_index", S("a"), S(","), NI), Null(StringKind)},
	})
}

func TestRegexpExtract(t *testing.T) {
	runTable(t, []fcase{
		{call("regexp_extract", S("foo123bar45"), S(`\d+`)), Str("123")}, // the first match
		{call("regexp_extract", S("foo123bar"), S(`(\d)(\d+)`), I(0)), Str("123")},
		{call("regexp_extract", S("foo123bar"), S(`(\d)(\d+)`), I(1)), Str("1")},
		{call("regexp_extract", S("foo123bar"), S(`(\d)(\d+)`), I(2)), Str("23")},
		{call("regexp_extract", S("foo123bar"), S(`(\d)(\d+)`), I(3)), Null(StringKind)},  // no group 3
		{call("regexp_extract", S("foo123bar"), S(`(\d)(\d+)`), I(-1)), Null(StringKind)}, // no group -1
		{call("regexp_extract", S("foobar"), S(`\d+`)), Null(StringKind)},                 // no match
		{call("regexp_extract", S("ab"), S(`a(x)?b`), I(1)), Null(StringKind)},            // the group took no part
		{call("regexp_extract", S("ab"), S(`a(x?)b`), I(1)), Str("")},                     // it took part, empty
		{call("regexp_extract", S("héllo"), S(`h(.)l`), I(1)), Str("é")},
		{call("regexp_extract", S("k=v;x=y"), S(`x=(\w+)`), I(1)), Str("y")},
		{call("regexp_extract", NS, S(`a`)), Null(StringKind)},
		{call("regexp_extract", S("a"), S(`a`), NI), Null(StringKind)},
	})
	// A pattern that does not compile is the query's error.
	_, err := noCols.eval(call("regexp_extract", S("a"), S(`(`)))
	assert.ErrorContains(t, err, "REGEXP_EXTRACT pattern")
}

func TestCountChar(t *testing.T) {
	runTable(t, []fcase{
		{call("count_char", S("banana"), S("a")), Int(3)},
		{call("count_char", S("banana"), S("an")), Int(3)}, // c's first character
		{call("count_char", S("banana"), S("x")), Int(0)},
		{call("count_char", S("banana"), S("")), Int(0)},
		{call("count_char", S(""), S("a")), Int(0)},
		{call("count_char", S("héhé"), S("é")), Int(2)},
		{call("count_char", S("a\xffb\xff"), S("\xff")), Int(2)},
		{call("count_char", S("aA"), S("A")), Int(1)},
		{call("count_char", NS, S("a")), Null(IntKind)},
		{call("count_char", S("a"), NS), Null(IntKind)},
	})
}

// ms is the milliseconds of a UTC time.
func ms(y int, mo time.Month, d, h, mi, s, milli int) int64 {
	return time.Date(y, mo, d, h, mi, s, milli*1e6, time.UTC).UnixMilli()
}

func TestTimeUnits(t *testing.T) {
	leap := ms(2024, time.February, 29, 13, 45, 6, 789) // a Thursday
	runTable(t, []fcase{
		{call("year", Ts(leap)), Int(2024)},
		{call("quarter", Ts(leap)), Int(1)},
		{call("month", Ts(leap)), Int(2)},
		{call("week", Ts(leap)), Int(9)}, // 2024-01-01 is a Monday: week 1 starts there
		{call("day", Ts(leap)), Int(29)},
		{call("dayofmonth", Ts(leap)), Int(29)},
		{call("dayofweek", Ts(leap)), Int(5)}, // Sunday 1 .. Thursday 5
		{call("dayofyear", Ts(leap)), Int(60)},
		{call("hour", Ts(leap)), Int(13)},
		{call("minute", Ts(leap)), Int(45)},
		{call("second", Ts(leap)), Int(6)},
		{call("millisecond", Ts(leap)), Int(789)},
		// DAYOFWEEK's ends.
		{call("dayofweek", Ts(ms(2024, time.March, 3, 0, 0, 0, 0))), Int(1)},       // Sunday
		{call("dayofweek", Ts(ms(2024, time.March, 2, 23, 59, 59, 999))), Int(7)},  // Saturday
		{call("dayofweek", Ts(ms(2024, time.March, 4, 0, 0, 0, 0))), Int(2)},       // Monday
		{call("quarter", Ts(ms(2024, time.December, 31, 0, 0, 0, 0))), Int(4)},     // December
		{call("quarter", Ts(ms(2024, time.April, 1, 0, 0, 0, 0))), Int(2)},         // April
		{call("dayofyear", Ts(ms(2024, time.December, 31, 0, 0, 0, 0))), Int(366)}, // a leap year
		{call("dayofyear", Ts(ms(2023, time.December, 31, 0, 0, 0, 0))), Int(365)}, // not one
		{call("week", Ts(ms(2021, time.January, 1, 0, 0, 0, 0))), Int(53)},         // a Friday: 2020's week 53
		{call("week", Ts(ms(2021, time.January, 4, 0, 0, 0, 0))), Int(1)},          // the Monday after
		{call("week", Ts(ms(2024, time.December, 30, 0, 0, 0, 0))), Int(1)},        // a Monday: 2025's week 1
		{call("week", Ts(ms(2020, time.December, 31, 0, 0, 0, 0))), Int(53)},       // 2020 has 53 weeks
		{call("week", Ts(ms(2023, time.January, 1, 12, 0, 0, 0))), Int(52)},        // a Sunday: 2022's last week
		{call("year", Ts(-1)), Int(1969)},                                          // before the epoch: 1969-12-31 23:59:59.999
		{call("millisecond", Ts(-1)), Int(999)},
		{call("second", Ts(-1)), Int(59)},
		{call("dayofweek", Ts(-1)), Int(4)}, // a Wednesday
		{call("hour", Ts(0)), Int(0)},
		{call("year", NT), Null(IntKind)},
		{call("week", NT), Null(IntKind)},
	})
}

func TestDateFormat(t *testing.T) {
	leap := ms(2024, time.February, 29, 13, 45, 6, 789) // Thursday afternoon
	early := ms(2024, time.January, 5, 0, 7, 8, 5)      // Friday, just after midnight
	noon := ms(2007, time.November, 30, 12, 0, 0, 0)    // noon is 12 PM
	ancient := ms(-44, time.March, 15, 0, 0, 0, 0)      // year -44 is 45 BC
	df := func(ts int64, f string) query.Expr { return call("date_format", Ts(ts), S(f)) }
	runTable(t, []fcase{
		{df(leap, "yyyy-MM-dd HH:mm:ss.SSS"), Str("2024-02-29 13:45:06.789")},
		{df(leap, "yy/M/d H:m:s"), Str("24/2/29 13:45:6")},
		{df(leap, "MMM MMMM MMMMM"), Str("Feb February F")},
		{df(leap, "hh:mm a"), Str("01:45 PM")},
		{df(leap, "h a"), Str("1 PM")},
		{df(leap, "EEE, EEEE E"), Str("Thu, Thursday Thu")},
		{df(leap, "S|SS|SSS|SSSS"), Str("7|78|789|7890")},
		{df(leap, "D DDD"), Str("60 060")},
		{df(leap, "y yyy yyyyy"), Str("2024 2024 02024")},
		{df(leap, "k K"), Str("13 1")},
		{df(leap, "yyyy-MM-dd'T'HH:mm"), Str("2024-02-29T13:45")},
		{df(leap, "'at' HH 'o''clock'"), Str("at 13 o'clock")},
		{df(leap, "''yyyy''"), Str("'2024'")},
		{df(leap, "'quoted letters: yMd'"), Str("quoted letters: yMd")},
		{df(leap, "dd.MM. — yyyy"), Str("29.02. — 2024")}, // other characters are themselves
		{df(leap, ""), Str("")},
		{df(early, "hh:mm:ss a"), Str("12:07:08 AM")},
		{df(early, "H h k K"), Str("0 12 24 0")},
		{df(early, "S SSS"), Str("0 005")},
		{df(early, "d dd M MM D DDD"), Str("5 05 1 01 5 005")},
		{df(early, "EEEE"), Str("Friday")},
		{df(noon, "hh a, HH"), Str("12 PM, 12")},
		{df(noon, "yy"), Str("07")},
		{df(ancient, "yyyy-MM-dd"), Str("0045-03-15")}, // the year of the era
		{df(-1, "yyyy-MM-dd HH:mm:ss.SSS"), Str("1969-12-31 23:59:59.999")},
		{query.Call{Fn: "date_format", Args: []query.Expr{NT, S("yyyy")}}, Null(StringKind)},
	})
	for _, bad := range []string{"yyyy-w", "G yyyy", "'unterminated", "yyyy 'x"} {
		_, err := noCols.eval(df(leap, bad))
		assert.ErrorContains(t, err, "DATE_FORMAT", bad)
	}
}

func TestCoalesce(t *testing.T) {
	runTable(t, []fcase{
		{call("coalesce", NI, I(2), I(3)), Int(2)},
		{call("coalesce", I(1), NI), Int(1)},
		{call("coalesce", NI, NI), Null(IntKind)},
		{call("coalesce", NS, S(""), S("x")), Str("")},  // the empty string is not NULL
		{call("coalesce", NI, I(1), Fl(2.5)), Float(1)}, // of the call's type: a float
		{call("coalesce", NT, I(5)), Time(5)},           // a time with an integer: a time
		{call("coalesce", query.Null{}, NF), Null(FloatKind)},
	})
}

func TestCast(t *testing.T) {
	cast := func(x query.Expr, to query.ValueType) query.Expr { return query.Cast{X: x, To: to} }
	leap := ms(2024, time.February, 29, 13, 45, 6, 789)
	runTable(t, []fcase{
		// Numbers to numbers.
		{cast(I(3), query.FloatValue), Float(3)},
		{cast(I(-1<<53), query.FloatValue), Float(-1 << 53)},
		{cast(Fl(2.9), query.IntValue), Int(2)}, // toward zero
		{cast(Fl(-2.9), query.IntValue), Int(-2)},
		{cast(Fl(math.NaN()), query.IntValue), Int(0)},
		{cast(Fl(1e19), query.IntValue), Int(math.MaxInt64)}, // the nearest bound
		{cast(Fl(-1e19), query.IntValue), Int(math.MinInt64)},
		{cast(Fl(math.Exp2(63)), query.IntValue), Int(math.MaxInt64)},
		{cast(Fl(-math.Exp2(63)), query.IntValue), Int(math.MinInt64)},
		{cast(Fl(math.Inf(1)), query.IntValue), Int(math.MaxInt64)},
		{cast(Fl(math.Inf(-1)), query.IntValue), Int(math.MinInt64)},
		{cast(Fl(2.9), query.TimeValue), Time(2)},
		// Integers and times.
		{cast(I(1000), query.TimeValue), Time(1000)},
		{cast(Ts(1000), query.IntValue), Int(1000)},
		{cast(Ts(-5), query.FloatValue), Float(-5)},
		// Booleans and integers.
		{cast(T, query.IntValue), Int(1)},
		{cast(F, query.IntValue), Int(0)},
		{cast(I(0), query.BoolValue), Bool(false)},
		{cast(I(-3), query.BoolValue), Bool(true)},
		// Anything to a string, as the outputs print it.
		{cast(I(42), query.StringValue), Str("42")},
		{cast(I(math.MinInt64), query.StringValue), Str("-9223372036854775808")},
		{cast(Fl(0.1), query.StringValue), Str("0.1")},
		{cast(Fl(1), query.StringValue), Str("1")},
		{cast(Fl(-2.5e-7), query.StringValue), Str("-2.5e-07")},
		{cast(Fl(1e21), query.StringValue), Str("1e+21")},
		{cast(Fl(math.NaN()), query.StringValue), Str("NaN")},
		{cast(Fl(math.Inf(1)), query.StringValue), Str("Infinity")},
		{cast(Fl(math.Inf(-1)), query.StringValue), Str("-Infinity")},
		{cast(S("Infinity"), query.FloatValue), Float(math.Inf(1))},
		{cast(S("-Infinity"), query.FloatValue), Float(math.Inf(-1))},
		{cast(Ts(0), query.StringValue), Str("1970-01-01 00:00:00.000")},
		{cast(Ts(leap), query.StringValue), Str("2024-02-29 13:45:06.789")},
		{cast(T, query.StringValue), Str("TRUE")},
		{cast(F, query.StringValue), Str("FALSE")},
		{cast(S("as is"), query.StringValue), Str("as is")},
		// Strings to numbers: spaces around ignored, NULL where they do not parse.
		{cast(S(" 42 "), query.IntValue), Int(42)},
		{cast(S("+7"), query.IntValue), Int(7)},
		{cast(S("-9223372036854775808"), query.IntValue), Int(math.MinInt64)},
		{cast(S("9223372036854775808"), query.IntValue), Null(IntKind)}, // out of range
		// A fraction of digits is dropped, the integral part truncated (Flink's toLong).
		{cast(S("4.2"), query.IntValue), Int(4)},
		{cast(S("-7.9"), query.IntValue), Int(-7)},
		{cast(S("12."), query.IntValue), Int(12)},
		{cast(S(" -.5 "), query.IntValue), Int(0)},
		{cast(S("."), query.IntValue), Int(0)},
		{cast(S("1.5e3"), query.IntValue), Null(IntKind)},
		{cast(S("1.2.3"), query.IntValue), Null(IntKind)},
		{cast(S("-"), query.IntValue), Null(IntKind)},
		{cast(S("9223372036854775808.5"), query.IntValue), Null(IntKind)},
		{cast(S("abc"), query.IntValue), Null(IntKind)},
		{cast(S(""), query.IntValue), Null(IntKind)},
		{cast(S("\t5"), query.IntValue), Null(IntKind)}, // a tab is not a space
		{cast(S("1 2"), query.IntValue), Null(IntKind)},
		{cast(S(" 2.5 "), query.FloatValue), Float(2.5)},
		{cast(S("1e3"), query.FloatValue), Float(1000)},
		{cast(S("-0.125"), query.FloatValue), Float(-0.125)},
		{cast(S("NaN"), query.FloatValue), Float(math.NaN())},
		{cast(S("-Infinity"), query.FloatValue), Float(math.Inf(-1))},
		{cast(S("-inf"), query.FloatValue), Null(FloatKind)},     // Java spells it Infinity
		{cast(S("1e400"), query.FloatValue), Float(math.Inf(1))}, // beyond the range: Java's Double.parseDouble, as Flink's
		{cast(S("-1e400"), query.FloatValue), Float(math.Inf(-1))},
		{cast(S("1e-400"), query.FloatValue), Float(0)}, // below the smallest: rounds to 0, no error
		{cast(S("0x1p-2"), query.FloatValue), Float(0.25)},
		{cast(S("1.5x"), query.FloatValue), Null(FloatKind)},
		// Strings to timestamps.
		{cast(S("2024-02-29 13:45:06.789"), query.TimeValue), Time(leap)},
		{cast(S(" 2024-02-29T13:45:06.789Z "), query.TimeValue), Time(leap)},
		{cast(S("2024-02-29T15:45:06.789+02:00"), query.TimeValue), Time(leap)},
		{cast(S("2024-02-29 11:15:06.789-02:30"), query.TimeValue), Time(leap)},
		{cast(S("2024-02-29 13:45:06.7891"), query.TimeValue), Time(leap)}, // truncated to ms
		{cast(S("2024-02-29 13:45:06.7"), query.TimeValue), Time(ms(2024, time.February, 29, 13, 45, 6, 700))},
		{cast(S("2024-02-29 13:45:06"), query.TimeValue), Time(ms(2024, time.February, 29, 13, 45, 6, 0))},
		{cast(S("2024-02-29"), query.TimeValue), Time(ms(2024, time.February, 29, 0, 0, 0, 0))},
		{cast(S("1969-12-31 23:59:59.999"), query.TimeValue), Time(-1)},
		{cast(S("2023-02-29"), query.TimeValue), Null(TimeKind)}, // not a leap year
		{cast(S("2024-13-01"), query.TimeValue), Null(TimeKind)},
		{cast(S("2024-02-29 24:00:00"), query.TimeValue), Null(TimeKind)},
		{cast(S("2024-02-29 23:60:00"), query.TimeValue), Null(TimeKind)},
		{cast(S("2024-2-29"), query.TimeValue), Time(ms(2024, time.February, 29, 0, 0, 0, 0))}, // Flink's CAST form: one-digit fields
		{cast(S("2024-02-29 1:02:03"), query.TimeValue), Time(ms(2024, time.February, 29, 1, 2, 3, 0))},
		{cast(S("2024-2-29T1:02:03"), query.TimeValue), Null(TimeKind)}, // that form has a space, no zone
		{cast(S("2024-2-29 1:02:03Z"), query.TimeValue), Null(TimeKind)},
		{cast(S("2024-02-29t13:45:06.789z"), query.TimeValue), Time(leap)},
		{cast(S("2024-02-29T16:15:06.789+0230"), query.TimeValue), Time(leap)},
		{cast(S("2024-02-29 10:45:06.789-03"), query.TimeValue), Time(leap)},
		{cast(S("0000-01-01 00:00:00"), query.TimeValue), Time(ms(0, time.January, 1, 0, 0, 0, 0))},
		{cast(S("1969-12-31 23:59:59.9999"), query.TimeValue), Time(-1)}, // floored
		{cast(S("2024-02-29T13:45:06+24:00"), query.TimeValue), Null(TimeKind)},
		{cast(S("2024-02-29T13:45:06+02:60"), query.TimeValue), Null(TimeKind)},
		{cast(S("2024-02-29T13:45:06+2"), query.TimeValue), Null(TimeKind)},
		{cast(S("2024-02-29T13:45:06+02:3"), query.TimeValue), Null(TimeKind)},
		{cast(S("2024-02-29T13:45"), query.TimeValue), Null(TimeKind)}, // seconds required
		{cast(S("2024-02-29T13:45:06."), query.TimeValue), Null(TimeKind)},
		{cast(S("2024-02-29T13:45:06.1234567890"), query.TimeValue), Null(TimeKind)}, // 10 digits
		{cast(S("2024-02-29Z"), query.TimeValue), Null(TimeKind)},                    // no zone on a date
		{cast(S("1709214306789"), query.TimeValue), Null(TimeKind)},
		{cast(S("yesterday"), query.TimeValue), Null(TimeKind)},
		// Strings to booleans.
		{cast(S("true"), query.BoolValue), Bool(true)},
		{cast(S(" FALSE "), query.BoolValue), Bool(false)},
		{cast(S("TrUe"), query.BoolValue), Bool(true)},
		{cast(S("yes"), query.BoolValue), Bool(true)}, // Flink's words: t, y, yes, 1; f, n, no, 0
		{cast(S("1"), query.BoolValue), Bool(true)},
		{cast(S(" Y"), query.BoolValue), Bool(true)},
		{cast(S("t"), query.BoolValue), Bool(true)},
		{cast(S("0"), query.BoolValue), Bool(false)},
		{cast(S("No"), query.BoolValue), Bool(false)},
		{cast(S("f"), query.BoolValue), Bool(false)},
		{cast(S("n"), query.BoolValue), Bool(false)},
		{cast(S("on"), query.BoolValue), Null(BoolKind)},
		{cast(S("2"), query.BoolValue), Null(BoolKind)},
		{cast(S("yess"), query.BoolValue), Null(BoolKind)},
		// NULL stays NULL, of the target type.
		{cast(NI, query.StringValue), Null(StringKind)},
		{cast(NS, query.IntValue), Null(IntKind)},
		{cast(query.Null{}, query.TimeValue), Null(TimeKind)},
		{cast(NI, query.FloatValue), Null(FloatKind)},
	})
}
