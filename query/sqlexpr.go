package query

import (
	"fmt"
	"strconv"
	"strings"
)

// The expressions SQL adds to the arithmetic and comparisons of expr.go:
// strings, NULL, CASE, IN, LIKE, casts and scalar functions.
//
// NULL follows SQL: an operator or function with a NULL operand gives
// NULL (but for IS NULL, COALESCE, CASE's branches, AND and OR); a
// comparison with NULL is not true, so WHERE, HAVING, CASE WHEN and
// FILTER treat a NULL condition as false; NOT NULL is NULL. Aggregates
// skip NULL arguments.

// StrConst is a string constant.
type StrConst struct{ V string }

// BoolConst is TRUE or FALSE.
type BoolConst struct{ V bool }

// Null is the NULL constant, of type T (an untyped NULL is T 0; a CAST or
// the context gives it one).
type Null struct{ T ValueType }

// When is one branch of a CASE.
type When struct{ Cond, Then Expr }

// Case is CASE WHEN c1 THEN v1 ... [ELSE e] END: the first branch whose
// condition holds; Else (NULL when nil) where none does.
type Case struct {
	Whens []When
	Else  Expr
}

// InList is X [NOT] IN (List...): X equals one of List. With a NULL X, or
// no match and a NULL in List, it is NULL.
type InList struct {
	X    Expr
	List []Expr
	Not  bool
}

// Like is X [NOT] LIKE Pattern: % any sequence, _ one character; Escape
// (0: none) makes the next character literal.
type Like struct {
	X       Expr
	Pattern string
	Escape  rune
	Not     bool
}

// IsNull is X IS [NOT] NULL: never NULL itself.
type IsNull struct {
	X   Expr
	Not bool
}

// NotExpr is NOT X (NULL stays NULL).
type NotExpr struct{ X Expr }

// Cast is CAST(X AS To): numbers to numbers (float to integer truncates
// toward zero, out of range saturates), anything to a string (as the
// outputs print it), a string to a number or a time (NULL where it does
// not parse), integers to times and back (milliseconds). Real (To
// FloatValue only) is CAST AS REAL: the float rounded to the nearest
// float32, and the value SQL's REAL (IsReal). Unit (To TimeValue only),
// where above 1, floors the time to a multiple of Unit milliseconds: a
// CAST to TIMESTAMP(p) with p < 3 keeps p digits of the fraction, as
// Flink's (TimestampUnit); the other times are milliseconds, whatever
// their precision.
type Cast struct {
	X    Expr
	To   ValueType
	Real bool
	Unit int64
}

// TimestampUnit is Cast.Unit for a TIMESTAMP(p): 10^(3-p) milliseconds
// for p < 3 (1000 for TIMESTAMP(0)), else 0 (milliseconds, kept).
func TimestampUnit(p int) int64 {
	u := int64(0)
	if p < 3 {
		u = 1
		for ; p < 3; p++ {
			u *= 10
		}
	}
	return u
}

// FloorUnit is ms floored to a multiple of unit (Cast.Unit; 0 or 1 keeps
// it): toward the past, before 1970 too.
func FloorUnit(ms, unit int64) int64 {
	if unit <= 1 {
		return ms
	}
	r := ms % unit
	if r < 0 {
		r += unit
	}
	return ms - r
}

// Call is a scalar function (Funcs lists them) applied to Args.
type Call struct {
	Fn   string
	Args []Expr
}

func (StrConst) expr()  {}
func (BoolConst) expr() {}
func (Null) expr()      {}
func (Case) expr()      {}
func (InList) expr()    {}
func (Like) expr()      {}
func (IsNull) expr()    {}
func (NotExpr) expr()   {}
func (Cast) expr()      {}
func (Call) expr()      {}

func (c StrConst) String() string { return "'" + strings.ReplaceAll(c.V, "'", "''") + "'" }
func (c BoolConst) String() string {
	if c.V {
		return "TRUE"
	}
	return "FALSE"
}
func (Null) String() string { return "NULL" }
func (c Case) String() string {
	var b strings.Builder
	b.WriteString("CASE")
	for _, w := range c.Whens {
		b.WriteString(" WHEN " + w.Cond.String() + " THEN " + w.Then.String())
	}
	if c.Else != nil {
		b.WriteString(" ELSE " + c.Else.String())
	}
	b.WriteString(" END")
	return b.String()
}
func (e InList) String() string {
	s := make([]string, len(e.List))
	for i, x := range e.List {
		s[i] = x.String()
	}
	not := ""
	if e.Not {
		not = "NOT "
	}
	return e.X.String() + " " + not + "IN (" + strings.Join(s, ", ") + ")"
}
func (e Like) String() string {
	not := ""
	if e.Not {
		not = "NOT "
	}
	s := e.X.String() + " " + not + "LIKE " + StrConst{e.Pattern}.String()
	if e.Escape != 0 {
		s += " ESCAPE " + StrConst{string(e.Escape)}.String()
	}
	return s
}
func (e IsNull) String() string {
	if e.Not {
		return e.X.String() + " IS NOT NULL"
	}
	return e.X.String() + " IS NULL"
}
func (e NotExpr) String() string { return "NOT (" + e.X.String() + ")" }
func (e Cast) String() string {
	if e.Real && e.To == FloatValue {
		return "CAST(" + e.X.String() + " AS REAL)"
	}
	if e.To == TimeValue && e.Unit > 1 {
		p := 3
		for u := e.Unit; u > 1; u /= 10 {
			p--
		}
		return "CAST(" + e.X.String() + " AS TIMESTAMP(" + strconv.Itoa(p) + "))"
	}
	return "CAST(" + e.X.String() + " AS " + castName(e.To) + ")"
}
func (e Call) String() string {
	s := make([]string, len(e.Args))
	for i, x := range e.Args {
		s[i] = x.String()
	}
	return strings.ToUpper(e.Fn) + "(" + strings.Join(s, ", ") + ")"
}

func castName(t ValueType) string {
	switch t {
	case IntValue:
		return "BIGINT"
	case FloatValue:
		return "DOUBLE"
	case StringValue:
		return "VARCHAR"
	case TimeValue:
		return "TIMESTAMP(3)"
	case BoolValue:
		return "BOOLEAN"
	}
	return t.String()
}

// RealScope reports whether a name in scope holds SQL's REAL values
// (Attribute.IsReal); nil: none does.
type RealScope func(name string) bool

// SchemaReal is the RealScope of schema s's attributes.
func SchemaReal(s *Schema) RealScope {
	return func(name string) bool {
		a, err := s.Lookup(name)
		return err == nil && a.IsReal()
	}
}

// IsReal reports whether float expression e is SQL's REAL (FLOAT), not
// DOUBLE: a REAL column, or a CAST AS REAL. The engine computes every
// float in float64 (a REAL's value is a float32's, exactly); a REAL is
// printed, cast to a string and output (Logical Real) as the float32 it
// is, as Flink prints 0.1 where float64 digits are 0.10000000149011612.
func IsReal(e Expr, real RealScope) bool {
	switch e := e.(type) {
	case Column:
		return real != nil && real(e.Name)
	case Cast:
		return e.Real && e.To == FloatValue
	}
	return false
}

// Str is a string constant.
func Str(v string) Expr { return StrConst{V: v} }

// CommonType is the type two operands are compared or combined in: the
// same type, or a float with a number, or an integer with a time (as
// milliseconds), or an untyped NULL with anything.
func CommonType(a, b ValueType) (ValueType, bool) {
	switch {
	case a == 0:
		return b, true
	case b == 0:
		return a, true
	case a == b:
		return a, true
	case a.Number() && b.Number():
		if a == FloatValue || b == FloatValue {
			return FloatValue, true
		}
		return TimeValue, true // an integer with a time
	}
	return 0, false
}

// arithType is the type of l op r: floats where either is, a time where
// one operand is a time and the other an integer added or subtracted
// (ts + INTERVAL), an integer where both are times subtracted (a span) or
// both integers.
func arithType(op ArithOp, l, r ValueType, e Expr) (ValueType, error) {
	switch {
	case l == FloatValue || r == FloatValue:
		if l == TimeValue || r == TimeValue {
			return 0, fmt.Errorf("%s mixes a timestamp with a float", e)
		}
		return FloatValue, nil
	case l == TimeValue && r == TimeValue:
		if op != OpSub {
			return 0, fmt.Errorf("%s: timestamps can only be subtracted from one another", e)
		}
		return IntValue, nil
	case l == TimeValue || r == TimeValue:
		if op == OpAdd || (op == OpSub && l == TimeValue) {
			return TimeValue, nil
		}
		return 0, fmt.Errorf("%s: a timestamp takes + and - of an interval only", e)
	}
	return IntValue, nil
}

// typeOfSQL is TypeOf for the SQL expressions of this file.
func typeOfSQL(e Expr, scope Scope) (ValueType, error) {
	switch e := e.(type) {
	case StrConst:
		return StringValue, nil
	case BoolConst:
		return BoolValue, nil
	case Null:
		return e.T, nil
	case IsNull:
		if _, err := TypeOf(e.X, scope); err != nil {
			return 0, err
		}
		return BoolValue, nil
	case NotExpr:
		t, err := TypeOf(e.X, scope)
		if err != nil {
			return 0, err
		}
		if t != BoolValue && t != 0 {
			return 0, fmt.Errorf("NOT of %s, which is %s, not a condition", e.X, t)
		}
		return BoolValue, nil
	case Like:
		t, err := TypeOf(e.X, scope)
		if err != nil {
			return 0, err
		}
		if t != StringValue && t != 0 {
			return 0, fmt.Errorf("LIKE applies to strings; %s is %s", e.X, t)
		}
		return BoolValue, nil
	case InList:
		t, err := TypeOf(e.X, scope)
		if err != nil {
			return 0, err
		}
		if len(e.List) == 0 {
			return 0, fmt.Errorf("%s: IN of an empty list", e)
		}
		for _, x := range e.List {
			u, err := TypeOf(x, scope)
			if err != nil {
				return 0, err
			}
			if _, ok := CommonType(t, u); !ok {
				return 0, fmt.Errorf("%s: %s is %s, the value tested is %s", e, x, u, t)
			}
		}
		return BoolValue, nil
	case Case:
		if len(e.Whens) == 0 {
			return 0, fmt.Errorf("CASE without WHEN")
		}
		var t ValueType
		branches := make([]Expr, 0, len(e.Whens)+1)
		for _, w := range e.Whens {
			c, err := TypeOf(w.Cond, scope)
			if err != nil {
				return 0, err
			}
			if c != BoolValue && c != 0 {
				return 0, fmt.Errorf("CASE WHEN %s: %s, not a condition", w.Cond, c)
			}
			branches = append(branches, w.Then)
		}
		if e.Else != nil {
			branches = append(branches, e.Else)
		}
		for _, b := range branches {
			u, err := TypeOf(b, scope)
			if err != nil {
				return 0, err
			}
			var ok bool
			if t, ok = CommonType(t, u); !ok {
				return 0, fmt.Errorf("%s: its branches are of types that do not mix (%s and %s)", e, t, u)
			}
		}
		return t, nil
	case Cast:
		t, err := TypeOf(e.X, scope)
		if err != nil {
			return 0, err
		}
		if !castable(t, e.To) {
			return 0, fmt.Errorf("%s: %s cannot be cast to %s", e, t, castName(e.To))
		}
		return e.To, nil
	case Call:
		f, ok := Funcs[e.Fn]
		if !ok {
			return 0, fmt.Errorf("unknown function %s", strings.ToUpper(e.Fn))
		}
		args := make([]ValueType, len(e.Args))
		for i, a := range e.Args {
			t, err := TypeOf(a, scope)
			if err != nil {
				return 0, err
			}
			args[i] = t
		}
		return f.Type(e, args)
	}
	return 0, fmt.Errorf("unknown expression %T", e)
}

func castable(from, to ValueType) bool {
	switch {
	case from == 0 || from == to:
		return true
	case to == StringValue:
		return from != BytesValue
	case from == StringValue:
		return to.Number() || to == BoolValue
	case to == BoolValue:
		return from == IntValue
	case from == BoolValue:
		return to == IntValue
	}
	return from.Number() && to.Number()
}

// Func is a scalar function: its name (lower case), and the rule that
// types its arguments and result.
type Func struct {
	Name string
	// Type checks the arguments' types and returns the result's.
	Type func(call Call, args []ValueType) (ValueType, error)
	// MayBeNull reports whether the result can be NULL when no argument
	// is (SPLIT_INDEX past the end, REGEXP_EXTRACT without a match);
	// NullFor, where set, whether it can be for these arguments
	// (SUBSTRING's with a length that may be negative).
	MayBeNull bool
	NullFor   func(args []Expr) bool
}

// Funcs are the scalar functions, by lower-case name. The engine's
// kernels and the reference evaluator each implement every one, to these
// rules (Flink's, where the dialects differ); every function is NULL where
// an argument is (but COALESCE), and strings are UTF-8, their characters
// runes (an invalid byte is one character):
//
//   - ABS(x), FLOOR(x), CEIL(x): of x's type (an integer is its own floor;
//     ABS of the least int64 is itself). ROUND(x[, d]): x rounded to d
//     decimals (default 0), halves away from zero; an integer with d >= 0
//     is itself, with d < 0 rounded to a multiple of 10^-d (wrapping past
//     int64, as integer arithmetic does); a float is rounded as its
//     shortest decimal form, as Flink's BigDecimal does (ROUND(2.675, 2)
//     is 2.68).
//   - MOD(a, b): integers, the remainder with a's sign (as Go's %);
//     MOD(a, 0) is 0, as a / 0 is (a stream cannot stop on one tuple).
//   - LOWER(s), UPPER(s): Unicode's full case mapping, as Java's
//     toLowerCase and toUpperCase (Locale.ROOT) do: ASCII byte for byte;
//     UPPER('straße') is 'STRASSE', UPPER('ﬁ') 'FI'; LOWER('İ') is i and
//     U+0307; Σ lowers to ς where it ends a word (Unicode's Final_Sigma:
//     LOWER('ΟΔΟΣ') is 'οδος') and to σ elsewhere; any other character
//     to its simple other case (Unicode 15). An invalid byte becomes
//     U+FFFD. (Java decides a final Σ by word boundaries, which differs
//     on strings such as 'Α_Σ' and 'Α1Σ': Java gives α_ς, here α_σ.)
//     TRIM, LTRIM, RTRIM: spaces (U+0020) removed at both ends, the start,
//     the end. CHAR_LENGTH(s): characters.
//   - SUBSTRING(s, start[, len]): the characters from 1-based start, len
//     of them (to the end without len), as Flink's: a start of 0 is 1, a
//     negative start counts back from the end (SUBSTRING('hello', -3) is
//     'llo'; the empty string where that is before the first character);
//     a negative len is NULL. (The SQL standard, PostgreSQL and
//     RisingWave count a start below 1 against len instead.)
//   - CONCAT(a, ...) and a || b: the arguments' text (numbers, times and
//     booleans as CAST to VARCHAR) joined; NULL where any is NULL.
//   - SPLIT_INDEX(s, sep, i): the i-th (zero-based) of the pieces of s
//     split at every sep; NULL for i < 0 or past the last piece. An empty
//     sep leaves s one piece; an empty s has none (NULL), as Flink's.
//   - REGEXP_EXTRACT(s, re[, g]): group g (default 0, the whole match) of
//     the first match of re (Go's RE2 syntax) in s; NULL where there is no
//     match, g is not a group of re, or the group did not take part.
//   - COUNT_CHAR(s, c): how many characters of s are c's first character
//     (Nexmark's UDF); 0 where c is empty.
//   - YEAR, QUARTER, MONTH, WEEK (ISO 8601), DAY (= DAYOFMONTH),
//     DAYOFWEEK (1 Sunday to 7 Saturday), DAYOFYEAR, HOUR, MINUTE, SECOND,
//     MILLISECOND of a timestamp, in UTC (EXTRACT(unit FROM ts) is these).
//   - DATE_FORMAT(ts, f): ts in UTC as the pattern f (a constant) prints it
//     with java.time's DateTimeFormatter, which Flink runs for a timestamp
//     (package temporal lists the letters; S is the fraction of the
//     second, SSS its milliseconds; y is the year of the era, 1 BC 1, and
//     u the proleptic year, 1 BC 0; zone letters are refused).
//   - COALESCE(a, ...): the first argument that is not NULL.
//
// CAST(x AS t) (Cast): integers to floats exactly; floats to integers
// truncated toward zero, NaN to 0, out of range to the nearest bound;
// integers to timestamps and back as milliseconds; booleans to integers as
// 0 and 1, integers to booleans as x <> 0; anything to a string as
// Flink's CAST writes it, the outputs' text but for booleans
// (timestamps as 2006-01-02 15:04:05.000, a year past
// 9999 or before 0 with a sign and at least four digits, as ISO 8601 and
// java.time write it: +10000-01-01 00:00:00.000, -0001-12-31 ...; booleans as
// TRUE and FALSE, where a CSV output prints true and false; floats in the
// shortest form that reads back, a REAL's as the float32 it is, the
// infinities as Infinity and -Infinity); a string to a number, a
// timestamp or a boolean by parsing it (spaces
// around it ignored; an integer's fraction of digits dropped, '-7.9' to
// -7, as Flink's; a float as Java's Double.parseDouble reads it, a REAL
// as its Float.parseFloat does (rounded to the float32 once), as Flink's:
// characters up to U+0020 around it ignored, NaN, Infinity and -Infinity
// spelt so, an f, F, d or D suffix taken, a number past the type's range
// ±Infinity ('1e400' is Infinity); a timestamp in any form the
// sources read, or in Flink's CAST form, whose month, day, hour, minute
// and second may have one digit: 2024-3-1 1:2:3, temporal.ParseCastTimestamp; TRUE from t, true, y, yes or 1 and FALSE from f, false, n,
// no or 0, in any case, as Flink's), NULL where it does not parse. CAST AS
// REAL (Cast.Real) rounds a float, an integer or a string's number to
// the nearest float32, once (not through a double); CAST AS
// TIMESTAMP(p) with p < 3 (Cast.Unit) floors the time to p digits of the
// second's fraction.
//
// Comparisons of strings are byte-wise (code point order); LIKE is exact
// (case-sensitive) over characters.
var Funcs = map[string]Func{}

func init() {
	num := func(want int) func(Call, []ValueType) (ValueType, error) {
		return func(c Call, a []ValueType) (ValueType, error) {
			if err := arity(c, a, want, want); err != nil {
				return 0, err
			}
			if !a[0].Number() && a[0] != 0 {
				return 0, fmt.Errorf("%s takes a number, not %s", c, a[0])
			}
			if a[0] == TimeValue {
				return 0, fmt.Errorf("%s takes a number, not a timestamp", c)
			}
			if a[0] == 0 {
				return IntValue, nil
			}
			return a[0], nil
		}
	}
	str := func(c Call, a []ValueType, i int) error {
		if a[i] != StringValue && a[i] != 0 {
			return fmt.Errorf("%s: argument %d is %s, not a string", c, i+1, a[i])
		}
		return nil
	}
	integer := func(c Call, a []ValueType, i int) error {
		if a[i] != IntValue && a[i] != 0 {
			return fmt.Errorf("%s: argument %d is %s, not an integer", c, i+1, a[i])
		}
		return nil
	}
	time := func(c Call, a []ValueType, i int) error {
		if a[i] != TimeValue && a[i] != 0 {
			return fmt.Errorf("%s: argument %d is %s, not a timestamp", c, i+1, a[i])
		}
		return nil
	}
	strings1 := func(c Call, a []ValueType) (ValueType, error) {
		if err := arity(c, a, 1, 1); err != nil {
			return 0, err
		}
		return StringValue, str(c, a, 0)
	}
	add := func(f Func) { Funcs[f.Name] = f }
	add(Func{Name: "abs", Type: num(1)})
	add(Func{Name: "floor", Type: num(1)})
	add(Func{Name: "ceil", Type: num(1)})
	add(Func{Name: "round", Type: func(c Call, a []ValueType) (ValueType, error) {
		if err := arity(c, a, 1, 2); err != nil {
			return 0, err
		}
		if len(a) == 2 {
			if err := integer(c, a, 1); err != nil {
				return 0, err
			}
		}
		return num(1)(Call{Fn: c.Fn, Args: c.Args[:1]}, a[:1])
	}})
	add(Func{Name: "mod", Type: func(c Call, a []ValueType) (ValueType, error) {
		if err := arity(c, a, 2, 2); err != nil {
			return 0, err
		}
		for i := range a {
			if err := integer(c, a, i); err != nil {
				return 0, err
			}
		}
		return IntValue, nil
	}})
	add(Func{Name: "lower", Type: strings1})
	add(Func{Name: "upper", Type: strings1})
	add(Func{Name: "trim", Type: strings1})
	add(Func{Name: "ltrim", Type: strings1})
	add(Func{Name: "rtrim", Type: strings1})
	add(Func{Name: "char_length", Type: func(c Call, a []ValueType) (ValueType, error) {
		if err := arity(c, a, 1, 1); err != nil {
			return 0, err
		}
		return IntValue, str(c, a, 0)
	}})
	add(Func{Name: "substring", NullFor: func(args []Expr) bool {
		if len(args) < 3 {
			return false
		}
		n, ok := args[2].(IntConst)
		return !ok || n.V < 0 // a negative length is NULL
	}, Type: func(c Call, a []ValueType) (ValueType, error) {
		if err := arity(c, a, 2, 3); err != nil {
			return 0, err
		}
		if err := str(c, a, 0); err != nil {
			return 0, err
		}
		for i := 1; i < len(a); i++ {
			if err := integer(c, a, i); err != nil {
				return 0, err
			}
		}
		return StringValue, nil
	}})
	add(Func{Name: "concat", Type: func(c Call, a []ValueType) (ValueType, error) {
		if err := arity(c, a, 1, 1<<10); err != nil {
			return 0, err
		}
		for i := range a {
			if a[i] == BytesValue {
				return 0, fmt.Errorf("%s: argument %d is %s", c, i+1, a[i])
			}
		}
		return StringValue, nil // numbers, times and booleans as CAST to VARCHAR
	}})
	add(Func{Name: "split_index", MayBeNull: true, Type: func(c Call, a []ValueType) (ValueType, error) {
		if err := arity(c, a, 3, 3); err != nil {
			return 0, err
		}
		if err := str(c, a, 0); err != nil {
			return 0, err
		}
		if err := str(c, a, 1); err != nil {
			return 0, err
		}
		return StringValue, integer(c, a, 2)
	}})
	add(Func{Name: "regexp_extract", MayBeNull: true, Type: func(c Call, a []ValueType) (ValueType, error) {
		if err := arity(c, a, 2, 3); err != nil {
			return 0, err
		}
		if err := str(c, a, 0); err != nil {
			return 0, err
		}
		if err := str(c, a, 1); err != nil {
			return 0, err
		}
		if len(a) == 3 {
			if err := integer(c, a, 2); err != nil {
				return 0, err
			}
		}
		if _, ok := c.Args[1].(StrConst); !ok {
			return 0, fmt.Errorf("%s: the pattern must be a string constant", c)
		}
		return StringValue, nil
	}})
	add(Func{Name: "count_char", Type: func(c Call, a []ValueType) (ValueType, error) {
		if err := arity(c, a, 2, 2); err != nil {
			return 0, err
		}
		if err := str(c, a, 0); err != nil {
			return 0, err
		}
		return IntValue, str(c, a, 1)
	}})
	for _, unit := range []string{"year", "quarter", "month", "week", "day", "dayofmonth", "dayofweek", "dayofyear", "hour", "minute", "second", "millisecond"} {
		add(Func{Name: unit, Type: func(c Call, a []ValueType) (ValueType, error) {
			if err := arity(c, a, 1, 1); err != nil {
				return 0, err
			}
			return IntValue, time(c, a, 0)
		}})
	}
	add(Func{Name: "date_format", Type: func(c Call, a []ValueType) (ValueType, error) {
		if err := arity(c, a, 2, 2); err != nil {
			return 0, err
		}
		if err := time(c, a, 0); err != nil {
			return 0, err
		}
		if _, ok := c.Args[1].(StrConst); !ok {
			return 0, fmt.Errorf("%s: the format must be a string constant", c)
		}
		return StringValue, nil
	}})
	add(Func{Name: "coalesce", Type: func(c Call, a []ValueType) (ValueType, error) {
		if err := arity(c, a, 1, 1<<10); err != nil {
			return 0, err
		}
		var t ValueType
		for _, u := range a {
			var ok bool
			if t, ok = CommonType(t, u); !ok {
				return 0, fmt.Errorf("%s: arguments of types that do not mix (%s and %s)", c, t, u)
			}
		}
		return t, nil
	}})
}

func arity(c Call, a []ValueType, lo, hi int) error {
	if len(a) < lo || len(a) > hi {
		want := strconv.Itoa(lo)
		if hi != lo {
			want = fmt.Sprintf("%d to %d", lo, hi)
			if hi > 16 {
				want = fmt.Sprintf("at least %d", lo)
			}
		}
		return fmt.Errorf("%s takes %s arguments, not %d", strings.ToUpper(c.Fn), want, len(a))
	}
	return nil
}

// NullScope says whether a name in scope can be NULL.
type NullScope func(name string) bool

// SchemaNulls is the NullScope of s's attributes.
func SchemaNulls(s *Schema) NullScope {
	return func(name string) bool {
		a, err := s.Lookup(name)
		return err == nil && a.Nullable
	}
}

// MayBeNull reports whether e can be NULL, given which names can.
func MayBeNull(e Expr, nulls NullScope) bool {
	any := func(es ...Expr) bool {
		for _, x := range es {
			if x != nil && MayBeNull(x, nulls) {
				return true
			}
		}
		return false
	}
	switch e := e.(type) {
	case Column:
		return nulls(e.Name)
	case IntConst, FloatConst, StrConst, BoolConst, IsNull:
		return false
	case Null:
		return true
	case Arith:
		return any(e.L, e.R)
	case Compare:
		return any(e.L, e.R)
	case AndExpr:
		return any(e.Terms...)
	case OrExpr:
		return any(e.Terms...)
	case NotExpr:
		return any(e.X)
	case Like:
		return any(e.X)
	case InList:
		return any(e.X) || any(e.List...)
	case Case:
		if e.Else == nil {
			return true
		}
		for _, w := range e.Whens {
			if any(w.Then) {
				return true
			}
		}
		return any(e.Else)
	case Cast:
		return any(e.X) || (e.To != StringValue && isString(e.X))
	case Call:
		if e.Fn == "coalesce" {
			for _, a := range e.Args {
				if !MayBeNull(a, nulls) {
					return false
				}
			}
			return true
		}
		f := Funcs[e.Fn]
		return f.MayBeNull || f.NullFor != nil && f.NullFor(e.Args) || any(e.Args...)
	}
	return true
}

func isString(e Expr) bool {
	_, ok := e.(StrConst)
	if ok {
		return true
	}
	// Without a scope a column's type is unknown: a cast from it may fail
	// to parse, and is nullable, unless it is a constant.
	switch e.(type) {
	case IntConst, FloatConst, BoolConst:
		return false
	}
	return true
}

// Walk calls f on e and each expression inside it, depth first (f's false
// skips what is inside an expression).
func Walk(e Expr, f func(Expr) bool) {
	if e == nil || !f(e) {
		return
	}
	switch e := e.(type) {
	case Arith:
		Walk(e.L, f)
		Walk(e.R, f)
	case Compare:
		Walk(e.L, f)
		Walk(e.R, f)
	case AndExpr:
		for _, t := range e.Terms {
			Walk(t, f)
		}
	case OrExpr:
		for _, t := range e.Terms {
			Walk(t, f)
		}
	case NotExpr:
		Walk(e.X, f)
	case IsNull:
		Walk(e.X, f)
	case Like:
		Walk(e.X, f)
	case InList:
		Walk(e.X, f)
		for _, x := range e.List {
			Walk(x, f)
		}
	case Case:
		for _, w := range e.Whens {
			Walk(w.Cond, f)
			Walk(w.Then, f)
		}
		Walk(e.Else, f)
	case Cast:
		Walk(e.X, f)
	case Call:
		for _, a := range e.Args {
			Walk(a, f)
		}
	}
}
