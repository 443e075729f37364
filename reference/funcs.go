package reference

import (
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/saber-hx/saber-hx/query"
)

// The scalar functions of query.Funcs, each written from its doc comment
// with Go's standard library, one obvious case at a time. Every function
// but COALESCE is NULL where an argument is; the caller (env.call) gives
// the result the call's static type.

// callFunc applies function fn (lower case) to args.
func callFunc(fn string, args []Value) (Value, error) {
	if fn == "coalesce" {
		for _, a := range args {
			if !a.Null {
				return a, nil
			}
		}
		return Null(IntKind), nil // typed by the caller
	}
	for _, a := range args {
		if a.Null {
			return Null(IntKind), nil // typed by the caller
		}
	}
	arg := func(i int) Value {
		if i < len(args) {
			return args[i]
		}
		return Value{}
	}
	want := func(n ...int) error {
		for _, k := range n {
			if len(args) == k {
				return nil
			}
		}
		return fmt.Errorf("%d arguments", len(args))
	}
	if err := checkArgs(fn, args); err != nil {
		return Value{}, err
	}
	switch fn {
	case "abs":
		if err := want(1); err != nil {
			return Value{}, err
		}
		if x := arg(0); x.kind() == FloatKind {
			return Float(math.Abs(x.F)), nil
		} else if x.I < 0 {
			return Int(-x.I), nil // -MinInt64 wraps to MinInt64: itself
		}
		return arg(0), nil
	case "floor", "ceil":
		if err := want(1); err != nil {
			return Value{}, err
		}
		x := arg(0)
		if x.kind() != FloatKind {
			return x, nil // an integer is its own floor and ceiling
		}
		if fn == "floor" {
			return Float(math.Floor(x.F)), nil
		}
		return Float(math.Ceil(x.F)), nil
	case "round":
		if err := want(1, 2); err != nil {
			return Value{}, err
		}
		var d int64
		if len(args) == 2 {
			d = arg(1).I
		}
		if x := arg(0); x.kind() == FloatKind {
			return Float(roundFloat(x.F, d)), nil
		}
		return Int(roundInt(arg(0).I, d)), nil
	case "mod":
		if err := want(2); err != nil {
			return Value{}, err
		}
		a, b := arg(0).I, arg(1).I
		if b == 0 {
			return Int(0), nil // as a / 0 is 0
		}
		return Int(a % b), nil // a's sign; MinInt64 % -1 is 0
	case "lower":
		return Str(lowerCase(arg(0).Str)), want(1)
	case "upper":
		return Str(upperCase(arg(0).Str)), want(1)
	case "trim":
		return Str(strings.Trim(arg(0).Str, " ")), want(1)
	case "ltrim":
		return Str(strings.TrimLeft(arg(0).Str, " ")), want(1)
	case "rtrim":
		return Str(strings.TrimRight(arg(0).Str, " ")), want(1)
	case "char_length":
		return Int(int64(len(characters(arg(0).Str)))), want(1)
	case "substring":
		if err := want(2, 3); err != nil {
			return Value{}, err
		}
		if len(args) == 3 && arg(2).I < 0 {
			return Null(StringKind), nil
		}
		return Str(substring(arg(0).Str, arg(1).I, arg(2).I, len(args) == 3)), nil
	case "concat":
		var b strings.Builder
		for _, a := range args {
			s, err := text(a)
			if err != nil {
				return Value{}, err
			}
			b.WriteString(s)
		}
		return Str(b.String()), nil
	case "split_index":
		if err := want(3); err != nil {
			return Value{}, err
		}
		return splitIndex(arg(0).Str, arg(1).Str, arg(2).I), nil
	case "regexp_extract":
		if err := want(2, 3); err != nil {
			return Value{}, err
		}
		var g int64
		if len(args) == 3 {
			g = arg(2).I
		}
		return regexpExtract(arg(0).Str, arg(1).Str, g)
	case "count_char":
		if err := want(2); err != nil {
			return Value{}, err
		}
		return Int(countChar(arg(0).Str, arg(1).Str)), nil
	case "date_format":
		if err := want(2); err != nil {
			return Value{}, err
		}
		s, err := dateFormat(arg(0).I, arg(1).Str)
		return Str(s), err
	}
	if f, ok := timeUnits[fn]; ok {
		return Int(f(arg(0).I)), want(1)
	}
	if f, ok := query.ScalarFuncOf(fn); ok {
		return callScalarFunc(f, args)
	}
	return Value{}, fmt.Errorf("unknown function %q", fn)
}

// callScalarFunc calls a function registered with query.RegisterFunc
// (no argument is NULL: callFunc answered NULL for those).
func callScalarFunc(f query.ScalarFunc, args []Value) (Value, error) {
	if len(args) != len(f.Args) {
		return Value{}, fmt.Errorf("%d arguments, want %d", len(args), len(f.Args))
	}
	in := make([]query.Scalar, len(args))
	for i, a := range args {
		switch f.Args[i] {
		case query.FloatValue:
			in[i].F = a.asFloat()
		case query.StringValue:
			in[i].S = []byte(a.Str)
		default:
			in[i].I = a.I
		}
	}
	out := f.Fn(in)
	kind := map[query.ValueType]Kind{query.IntValue: IntKind, query.FloatValue: FloatKind, query.StringValue: StringKind,
		query.TimeValue: TimeKind, query.BoolValue: BoolKind}[f.Result]
	switch {
	case out.Null:
		return Null(kind), nil
	case kind == FloatKind:
		return Float(out.F), nil
	case kind == StringKind:
		return Str(string(out.S)), nil
	case kind == BoolKind:
		return Bool(out.I != 0), nil
	case kind == TimeKind:
		return Time(out.I), nil
	}
	return Int(out.I), nil
}

// checkArgs refuses arguments of kinds the function does not take (the
// query's validation refuses them first; this keeps a wrong kind from
// being read as a zero).
func checkArgs(fn string, args []Value) error {
	want := func(i int, kinds ...Kind) error {
		if i >= len(args) {
			return nil
		}
		for _, k := range kinds {
			if args[i].kind() == k {
				return nil
			}
		}
		return fmt.Errorf("argument %d is %s", i+1, args[i].kind())
	}
	var errs []error
	switch fn {
	case "abs", "floor", "ceil", "round":
		errs = append(errs, want(0, IntKind, FloatKind), want(1, IntKind))
	case "mod":
		errs = append(errs, want(0, IntKind), want(1, IntKind))
	case "lower", "upper", "trim", "ltrim", "rtrim", "char_length":
		errs = append(errs, want(0, StringKind))
	case "substring", "split_index", "regexp_extract", "count_char":
		errs = append(errs, want(0, StringKind))
		if fn == "substring" {
			errs = append(errs, want(1, IntKind), want(2, IntKind))
		} else {
			errs = append(errs, want(1, StringKind), want(2, IntKind))
		}
	case "date_format":
		errs = append(errs, want(0, TimeKind), want(1, StringKind))
	}
	if _, ok := timeUnits[fn]; ok {
		errs = append(errs, want(0, TimeKind))
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// characters splits s into its characters: runes, an invalid byte being
// one character of its own, each kept as the bytes it was.
func characters(s string) []string {
	var cs []string
	for i := 0; i < len(s); {
		_, w := utf8.DecodeRuneInString(s[i:])
		cs = append(cs, s[i:i+w])
		i += w
	}
	return cs
}

// roundFloat is x rounded to d decimals, halves away from zero, as Flink
// does (BigDecimal.valueOf(x).setScale(d, HALF_UP)): the decimal rounded is
// the shortest one that reads back as x (strconv's 'e' -1 form), not the
// binary fraction x holds, so that ROUND(2.675, 2) is 2.68, as written.
// NaN and infinities are themselves; a zero result is +0 (a BigDecimal has
// no sign of zero); a result past the float range is an infinity.
func roundFloat(x float64, d int64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	if x == 0 {
		return 0 // -0 too
	}
	switch {
	case d > 400: // more decimals than any float64 has
		return x
	case d < -400: // |x| < 1e309 rounds to 0 at 10^400
		return 0
	}
	s := strconv.FormatFloat(x, 'e', -1, 64) // [-]D[.DDD]e±XX
	sign := ""
	if s[0] == '-' {
		sign, s = "-", s[1:]
	}
	mant, exp, _ := strings.Cut(s, "e")
	e, err := strconv.Atoi(exp)
	if err != nil {
		panic(fmt.Sprintf("reference: roundFloat: %q", s)) // strconv's own form
	}
	digits := strings.Replace(mant, ".", "", 1) // digits[0] is the 10^e digit
	keep := int64(e) + 1 + d                    // digits at 10^-d and above
	if keep >= int64(len(digits)) {
		return x // no digit below 10^-d
	}
	n := new(big.Int)
	if keep > 0 {
		n.SetString(digits[:keep], 10)
	}
	if keep >= 0 && digits[keep] >= '5' {
		n.Add(n, big.NewInt(1)) // half or more: away from zero
	}
	if n.Sign() == 0 {
		return 0
	}
	r, _ := strconv.ParseFloat(sign+n.String()+"e"+strconv.FormatInt(-d, 10), 64) // ±Inf past the range
	return r
}

// roundInt is i rounded to a multiple of 10^-d, halves away from zero: i
// itself for d >= 0. Computed in unbounded integers and then wrapped to
// int64, as integer arithmetic wraps (ROUND(MaxInt64, -1) is
// 9223372036854775810 wrapped).
func roundInt(i, d int64) int64 {
	if d >= 0 {
		return i
	}
	if d < -40 { // 10^40 > 2*|i|: every i rounds to 0
		return 0
	}
	p := new(big.Int).Exp(big.NewInt(10), big.NewInt(-d), nil)
	q, r := new(big.Int).QuoRem(big.NewInt(i), p, new(big.Int)) // truncated
	twice := new(big.Int).Abs(r)
	twice.Lsh(twice, 1)
	if twice.Cmp(p) >= 0 {
		q.Add(q, big.NewInt(int64(r.Sign())))
	}
	q.Mul(q, p)
	return wrap(q)
}

// wrap is x's low 64 bits as an int64 (two's complement).
func wrap(x *big.Int) int64 {
	mask := new(big.Int).SetUint64(math.MaxUint64)
	return int64(new(big.Int).And(x, mask).Uint64())
}

// substring is SUBSTRING(s, start[, n]) over characters, as Flink's
// substringSQL: the characters at 0-based positions first <= p < first+n
// (every p >= first without n), first being start-1 for a positive
// start, 0 for 0, and len(s)+start for a negative one (none where that is
// below 0). first+n is computed unbounded; n >= 0 (a negative n is NULL,
// the caller's).
func substring(s string, start, n int64, hasLen bool) string {
	chars := characters(s)
	first := big.NewInt(start - 1)
	switch {
	case start == 0:
		first = big.NewInt(0)
	case start < 0:
		first = new(big.Int).Add(big.NewInt(int64(len(chars))), big.NewInt(start))
		if first.Sign() < 0 {
			return ""
		}
	}
	end := new(big.Int).Add(first, big.NewInt(n))
	var b strings.Builder
	for i, c := range chars {
		p := big.NewInt(int64(i))
		if p.Cmp(first) >= 0 && (!hasLen || p.Cmp(end) < 0) {
			b.WriteString(c)
		}
	}
	return b.String()
}

// splitIndex is SPLIT_INDEX(s, sep, i): piece i (zero-based) of s split at
// every sep, empty pieces included; an empty sep leaves s one piece, and
// an empty s has none (Flink's). NULL for i < 0 or past the last piece.
func splitIndex(s, sep string, i int64) Value {
	pieces := []string{s}
	if sep != "" {
		pieces = strings.Split(s, sep)
	}
	if s == "" {
		pieces = nil
	}
	if i < 0 || i >= int64(len(pieces)) {
		return Null(StringKind)
	}
	return Str(pieces[i])
}

// regexps caches compiled patterns: compiling one per tuple would make the
// reference needlessly slow on long inputs. regexp.Regexp is safe for
// concurrent use, and a pattern compiles to the same program every time.
var regexps sync.Map // pattern -> *regexp.Regexp

// regexpExtract is REGEXP_EXTRACT(s, re, g): group g of the first match of
// re (RE2) in s; NULL without a match, for a g that is not a group of re
// (0 is the whole match), or for a group that took no part in the match.
// A pattern that does not compile is an error: the query is wrong, not the
// tuple.
func regexpExtract(s, pattern string, g int64) (Value, error) {
	var re *regexp.Regexp
	if c, ok := regexps.Load(pattern); ok {
		re = c.(*regexp.Regexp)
	} else {
		var err error
		if re, err = regexp.Compile(pattern); err != nil {
			return Value{}, fmt.Errorf("REGEXP_EXTRACT pattern %q: %w", pattern, err)
		}
		regexps.Store(pattern, re)
	}
	loc := re.FindStringSubmatchIndex(s)
	if loc == nil || g < 0 || g > int64(re.NumSubexp()) || loc[2*g] < 0 {
		return Null(StringKind), nil
	}
	return Str(s[loc[2*g]:loc[2*g+1]]), nil
}

// countChar is COUNT_CHAR(s, c): the characters of s equal to c's first
// character; 0 for an empty c.
func countChar(s, c string) int64 {
	cs := characters(c)
	if len(cs) == 0 {
		return 0
	}
	var n int64
	for _, x := range characters(s) {
		if x == cs[0] {
			n++
		}
	}
	return n
}

// timeUnits are the functions of a timestamp's fields, in UTC.
var timeUnits = map[string]func(ms int64) int64{
	"year":    func(ms int64) int64 { return int64(utc(ms).Year()) },
	"quarter": func(ms int64) int64 { return int64(utc(ms).Month()-1)/3 + 1 },
	"month":   func(ms int64) int64 { return int64(utc(ms).Month()) },
	"week": func(ms int64) int64 { // ISO 8601: weeks from Monday; week 1 holds January 4th
		_, w := utc(ms).ISOWeek()
		return int64(w)
	},
	"day":         func(ms int64) int64 { return int64(utc(ms).Day()) },
	"dayofmonth":  func(ms int64) int64 { return int64(utc(ms).Day()) },
	"dayofweek":   func(ms int64) int64 { return int64(utc(ms).Weekday()) + 1 }, // Sunday 1 .. Saturday 7
	"dayofyear":   func(ms int64) int64 { return int64(utc(ms).YearDay()) },
	"hour":        func(ms int64) int64 { return int64(utc(ms).Hour()) },
	"minute":      func(ms int64) int64 { return int64(utc(ms).Minute()) },
	"second":      func(ms int64) int64 { return int64(utc(ms).Second()) },
	"millisecond": func(ms int64) int64 { return int64(utc(ms).Nanosecond() / 1e6) },
}
