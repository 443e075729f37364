package kernels

// The row evaluator: SQL's expressions that the vectorised registers have
// no operator for (CASE, casts, scalar functions, IN over expressions, a
// boolean used as a value) compiled into a tree of closures, one call per
// node per tuple. It fills a register of the vectorised kernels (vRow) or
// narrows a selection (pRow): the vectorised operators stay one loop per
// chunk where they apply, and everything else is still evaluated without
// an interface call, an allocation or a lock per tuple (REGEXP_EXTRACT's
// patterns but the shapes of regex.go run Go's regexp, which allocates).

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/strview"
	"github.com/saber-hx/saber-hx/temporal"
)

// rval is one value: an integer (ints, times, booleans as 0 and 1), a
// float, a string, or NULL.
type rval struct {
	i    int64
	f    float64
	s    []byte
	null bool
}

var rnull = rval{null: true}

// rowScratch is what the closures write computed strings into: the
// kernel's, reset per chunk (the registers hold slices of it until the
// chunk's outputs are written).
type rowScratch struct {
	arena strview.Arena
	buf   []byte
	// memo, where set (a projection's registers), holds WHERE's values of
	// dear calls for the tuple at row of the chunk (memoizedCall).
	memo *chunkMemo
	row  int
}

// str returns n bytes of scratch memory for a computed string.
func (sc *rowScratch) str(n int) []byte { return sc.arena.Alloc(n)[:0] }

// rowFn evaluates a node over tuple t.
type rowFn func(t []byte, sc *rowScratch) rval

// rexpr is a compiled row expression and its type.
type rexpr struct {
	t  query.ValueType
	fn rowFn
}

// compileRow compiles e over schema s for the row evaluator.
func compileRow(e query.Expr, s *query.Schema) (*rexpr, error) {
	t, err := query.TypeOf(e, query.SchemaScope(s))
	if err != nil {
		return nil, err
	}
	fn, err := rowOf(e, s)
	if err != nil {
		return nil, err
	}
	return &rexpr{t: t, fn: fn}, nil
}

func typeIn(e query.Expr, s *query.Schema) query.ValueType {
	t, _ := query.TypeOf(e, query.SchemaScope(s))
	return t
}

func rowOf(e query.Expr, s *query.Schema) (rowFn, error) {
	switch e := e.(type) {
	case query.Column:
		a, err := s.Lookup(e.Name)
		if err != nil {
			return nil, err
		}
		return rowColumn(a), nil
	case query.IntConst:
		v := rval{i: e.V}
		return func([]byte, *rowScratch) rval { return v }, nil
	case query.FloatConst:
		v := rval{f: e.V}
		return func([]byte, *rowScratch) rval { return v }, nil
	case query.StrConst:
		v := rval{s: []byte(e.V)}
		return func([]byte, *rowScratch) rval { return v }, nil
	case query.BoolConst:
		v := rval{}
		if e.V {
			v.i = 1
		}
		return func([]byte, *rowScratch) rval { return v }, nil
	case query.Null:
		return func([]byte, *rowScratch) rval { return rnull }, nil
	case query.Arith:
		return rowArith(e, s)
	case query.Compare:
		return rowCompare(e, s)
	case query.AndExpr, query.OrExpr:
		return rowLogic(e, s)
	case query.NotExpr:
		x, err := rowOf(e.X, s)
		if err != nil {
			return nil, err
		}
		return func(t []byte, sc *rowScratch) rval {
			v := x(t, sc)
			if v.null {
				return rnull
			}
			return rval{i: 1 - v.i}
		}, nil
	case query.IsNull:
		x, err := rowOf(e.X, s)
		if err != nil {
			return nil, err
		}
		not := e.Not
		return func(t []byte, sc *rowScratch) rval {
			if x(t, sc).null != not {
				return rval{i: 1}
			}
			return rval{}
		}, nil
	case query.Like:
		x, err := rowOf(e.X, s)
		if err != nil {
			return nil, err
		}
		m, err := strview.CompileLike(e.Pattern, e.Escape)
		if err != nil {
			return nil, err
		}
		not := e.Not
		return func(t []byte, sc *rowScratch) rval {
			v := x(t, sc)
			if v.null {
				return rnull
			}
			return boolVal(m.Match(v.s) != not)
		}, nil
	case query.InList:
		return rowIn(e, s)
	case query.Case:
		return rowCase(e, s)
	case query.Cast:
		return rowCast(e, s)
	case query.Call:
		fn, err := rowCall(e, s)
		if err != nil {
			return nil, err
		}
		return memoizedCall(e, fn), nil
	}
	return nil, fmt.Errorf("%s: no row evaluator for %T", e, e)
}

func boolVal(b bool) rval {
	if b {
		return rval{i: 1}
	}
	return rval{}
}

// rowColumn reads attribute a: a number (floats as f), a string's bytes,
// a boolean as 0 or 1, NULL by its bit.
func rowColumn(a query.Attribute) rowFn {
	off, size := a.Offset, a.Size
	var read rowFn
	switch a.Type {
	case query.Int32:
		read = func(t []byte, _ *rowScratch) rval {
			return rval{i: int64(int32(binary.LittleEndian.Uint32(t[off : off+4])))}
		}
	case query.Int64:
		read = func(t []byte, _ *rowScratch) rval { return rval{i: int64(binary.LittleEndian.Uint64(t[off : off+8]))} }
	case query.Float32:
		read = func(t []byte, _ *rowScratch) rval {
			return rval{f: float64(math.Float32frombits(binary.LittleEndian.Uint32(t[off : off+4])))}
		}
	case query.Float64:
		read = func(t []byte, _ *rowScratch) rval {
			return rval{f: math.Float64frombits(binary.LittleEndian.Uint64(t[off : off+8]))}
		}
	case query.String:
		read = func(t []byte, _ *rowScratch) rval { return rval{s: strview.Bytes(t[off : off+strview.Size])} }
	default:
		read = func(t []byte, _ *rowScratch) rval { return rval{s: t[off : off+size]} }
	}
	if !a.Nullable {
		return read
	}
	at, bit := a.NullBit>>3, byte(1)<<(a.NullBit&7)
	return func(t []byte, sc *rowScratch) rval {
		if t[at]&bit != 0 {
			return rnull
		}
		return read(t, sc)
	}
}

// operands compiles the operands of a binary operator and says whether
// they meet as floats.
func operands(l, r query.Expr, s *query.Schema) (rowFn, rowFn, bool, error) {
	lf, err := rowOf(l, s)
	if err != nil {
		return nil, nil, false, err
	}
	rf, err := rowOf(r, s)
	if err != nil {
		return nil, nil, false, err
	}
	lt, rt := typeIn(l, s), typeIn(r, s)
	float := lt == query.FloatValue || rt == query.FloatValue
	if float {
		lf, rf = asFloat(lf, lt), asFloat(rf, rt)
	}
	return lf, rf, float, nil
}

// asFloat makes an integer operand a float.
func asFloat(f rowFn, t query.ValueType) rowFn {
	if t == query.FloatValue {
		return f
	}
	return func(tu []byte, sc *rowScratch) rval {
		v := f(tu, sc)
		v.f = float64(v.i)
		return v
	}
}

func rowArith(e query.Arith, s *query.Schema) (rowFn, error) {
	l, r, float, err := operands(e.L, e.R, s)
	if err != nil {
		return nil, err
	}
	op := e.Op
	if float {
		return func(t []byte, sc *rowScratch) rval {
			a, b := l(t, sc), r(t, sc)
			if a.null || b.null {
				return rnull
			}
			switch op {
			case query.OpAdd:
				return rval{f: a.f + b.f}
			case query.OpSub:
				return rval{f: a.f - b.f}
			case query.OpMul:
				return rval{f: a.f * b.f}
			}
			return rval{f: a.f / b.f}
		}, nil
	}
	return func(t []byte, sc *rowScratch) rval {
		a, b := l(t, sc), r(t, sc)
		if a.null || b.null {
			return rnull
		}
		switch op {
		case query.OpAdd:
			return rval{i: a.i + b.i}
		case query.OpSub:
			return rval{i: a.i - b.i}
		case query.OpMul:
			return rval{i: a.i * b.i}
		}
		if b.i == 0 {
			return rval{} // x / 0 is 0: one bad tuple does not stop a stream
		}
		if b.i == -1 {
			return rval{i: -a.i} // MinInt64 / -1 wraps, as Go's does not
		}
		return rval{i: a.i / b.i}
	}, nil
}

// cmpVals compares two non-NULL values of one kind: -1, 0, 1 (a NaN is
// unordered: 2, which only <> holds for).
func cmpVals(a, b rval, float, str bool) int {
	switch {
	case str:
		return bytesCompare(a.s, b.s)
	case float:
		switch {
		case a.f < b.f:
			return -1
		case a.f > b.f:
			return 1
		case a.f == b.f:
			return 0
		}
		return 2
	case a.i < b.i:
		return -1
	case a.i > b.i:
		return 1
	}
	return 0
}

func bytesCompare(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	switch {
	case len(a) < len(b):
		return -1
	case len(a) > len(b):
		return 1
	}
	return 0
}

func cmpHolds(op query.CmpOp, c int) bool {
	if c == 2 {
		return op == query.Ne
	}
	switch op {
	case query.Eq:
		return c == 0
	case query.Ne:
		return c != 0
	case query.Lt:
		return c < 0
	case query.Le:
		return c <= 0
	case query.Gt:
		return c > 0
	}
	return c >= 0
}

func rowCompare(e query.Compare, s *query.Schema) (rowFn, error) {
	if f, ok, err := compareConst(e, s); ok || err != nil {
		return f, err
	}
	l, r, float, err := operands(e.L, e.R, s)
	if err != nil {
		return nil, err
	}
	str := typeIn(e.L, s) == query.StringValue || typeIn(e.R, s) == query.StringValue
	op := e.Op
	return func(t []byte, sc *rowScratch) rval {
		a, b := l(t, sc), r(t, sc)
		if a.null || b.null {
			return rnull
		}
		return boolVal(cmpHolds(op, cmpVals(a, b, float, str)))
	}, nil
}

// rowLogic is AND and OR in three-valued logic.
func rowLogic(e query.Expr, s *query.Schema) (rowFn, error) {
	var terms []query.Expr
	and := false
	switch x := e.(type) {
	case query.AndExpr:
		terms, and = x.Terms, true
	case query.OrExpr:
		terms = x.Terms
	}
	terms = cheapFirst(terms)
	fs := make([]rowFn, len(terms))
	for i, t := range terms {
		f, err := rowOf(t, s)
		if err != nil {
			return nil, err
		}
		fs[i] = f
	}
	// AND: false wins over NULL over true; OR: true wins over NULL over
	// false.
	decide := int64(0)
	if !and {
		decide = 1
	}
	return func(t []byte, sc *rowScratch) rval {
		null := false
		for _, f := range fs {
			v := f(t, sc)
			switch {
			case v.null:
				null = true
			case v.i == decide:
				return rval{i: decide}
			}
		}
		if null {
			return rnull
		}
		return rval{i: 1 - decide}
	}, nil
}

func rowIn(e query.InList, s *query.Schema) (rowFn, error) {
	xt := typeIn(e.X, s)
	var lt query.ValueType = xt
	for _, v := range e.List {
		lt, _ = query.CommonType(lt, typeIn(v, s))
	}
	float := lt == query.FloatValue
	str := lt == query.StringValue
	if f, ok, err := inConsts(e, s, float, str); ok || err != nil {
		return f, err
	}
	x, err := rowOf(e.X, s)
	if err != nil {
		return nil, err
	}
	if float {
		x = asFloat(x, xt)
	}
	list := make([]rowFn, len(e.List))
	for i, v := range e.List {
		f, err := rowOf(v, s)
		if err != nil {
			return nil, err
		}
		if float {
			f = asFloat(f, typeIn(v, s))
		}
		list[i] = f
	}
	not := e.Not
	return func(t []byte, sc *rowScratch) rval {
		v := x(t, sc)
		if v.null {
			return rnull
		}
		null := false
		for _, f := range list {
			w := f(t, sc)
			if w.null {
				null = true
				continue
			}
			if cmpVals(v, w, float, str) == 0 {
				return boolVal(!not)
			}
		}
		if null {
			return rnull
		}
		return boolVal(not)
	}, nil
}

func rowCase(e query.Case, s *query.Schema) (rowFn, error) {
	t := typeIn(e, s)
	conv := func(x query.Expr) (rowFn, error) {
		f, err := rowOf(x, s)
		if err != nil {
			return nil, err
		}
		if t == query.FloatValue {
			f = asFloat(f, typeIn(x, s))
		}
		return f, nil
	}
	conds := make([]rowFn, len(e.Whens))
	thens := make([]rowFn, len(e.Whens))
	for i, w := range e.Whens {
		c, err := rowOf(w.Cond, s)
		if err != nil {
			return nil, err
		}
		th, err := conv(w.Then)
		if err != nil {
			return nil, err
		}
		conds[i], thens[i] = c, th
	}
	els := rowFn(func([]byte, *rowScratch) rval { return rnull })
	if e.Else != nil {
		var err error
		if els, err = conv(e.Else); err != nil {
			return nil, err
		}
	}
	if f, ok, err := caseOnOneValue(e, s, thens, els); ok || err != nil {
		return f, err
	}
	return func(tu []byte, sc *rowScratch) rval {
		for i, c := range conds {
			if v := c(tu, sc); !v.null && v.i != 0 {
				return thens[i](tu, sc)
			}
		}
		return els(tu, sc)
	}, nil
}

func rowCast(e query.Cast, s *query.Schema) (rowFn, error) {
	if unit := e.Unit; e.To == query.TimeValue && unit > 1 {
		// CAST AS TIMESTAMP(p), p < 3: the time floored to p digits
		e.Unit = 0
		x, err := rowCast(e, s)
		if err != nil {
			return nil, err
		}
		return func(t []byte, sc *rowScratch) rval {
			v := x(t, sc)
			if v.null {
				return rnull
			}
			return rval{i: query.FloorUnit(v.i, unit)}
		}, nil
	}
	from := typeIn(e.X, s)
	x, err := rowOf(e.X, s)
	if err != nil {
		return nil, err
	}
	if e.Real && e.To == query.FloatValue {
		// CAST AS REAL: the float rounded to a float32's value
		if from == query.FloatValue && query.IsReal(e.X, query.SchemaReal(s)) {
			return x, nil
		}
		return func(t []byte, sc *rowScratch) rval {
			v := x(t, sc)
			if v.null {
				return rnull
			}
			switch from {
			case query.StringValue:
				f, ok := parseJavaFloat(v.s, 32)
				if !ok {
					return rnull
				}
				return rval{f: f}
			case query.FloatValue:
				return rval{f: float64(float32(v.f))}
			case query.IntValue, query.TimeValue:
				// rounded once, as Java's (float) of a long: through a
				// float64 a large integer could round twice
				return rval{f: float64(float32(v.i))}
			}
			if v = castVal(v, from, query.FloatValue, false, sc); v.null {
				return rnull
			}
			return rval{f: float64(float32(v.f))}
		}, nil
	}
	if from == e.To || from == 0 {
		return x, nil
	}
	to, real := e.To, query.IsReal(e.X, query.SchemaReal(s))
	return func(t []byte, sc *rowScratch) rval {
		v := x(t, sc)
		if v.null {
			return rnull
		}
		return castVal(v, from, to, real, sc)
	}, nil
}

// castVal converts non-NULL v of type from to type to (query.Cast's rules);
// real says a float is SQL's REAL (query.IsReal), its text a float32's.
func castVal(v rval, from, to query.ValueType, real bool, sc *rowScratch) rval {
	switch to {
	case query.StringValue:
		return rval{s: appendText(sc.str(32), v, from, real)}
	case query.FloatValue:
		switch from {
		case query.StringValue:
			f, ok := parseJavaFloat(v.s, 64)
			if !ok {
				return rnull
			}
			return rval{f: f}
		case query.FloatValue:
			return v
		}
		return rval{f: float64(v.i)}
	case query.IntValue, query.TimeValue:
		switch from {
		case query.FloatValue:
			return rval{i: floatToInt(v.f)}
		case query.StringValue:
			b := trimSpaces(v.s)
			if to == query.TimeValue {
				ms, ok := temporal.ParseCastTimestamp(b)
				if !ok {
					return rnull
				}
				return rval{i: ms}
			}
			i, ok := textToInt(b)
			if !ok {
				return rnull
			}
			return rval{i: i}
		}
		return rval{i: v.i}
	case query.BoolValue:
		if from == query.StringValue {
			// Flink's: t, true, y, yes, 1 and f, false, n, no, 0, any case
			switch b := trimSpaces(v.s); {
			case equalFold(b, "true"), equalFold(b, "t"), equalFold(b, "yes"), equalFold(b, "y"), equalFold(b, "1"):
				return rval{i: 1}
			case equalFold(b, "false"), equalFold(b, "f"), equalFold(b, "no"), equalFold(b, "n"), equalFold(b, "0"):
				return rval{}
			}
			return rnull
		}
		return boolVal(v.i != 0)
	}
	return rnull
}

// floatToInt truncates toward zero, NaN to 0, out of range to the bound.
func floatToInt(f float64) int64 {
	switch {
	case f != f:
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

func trimSpaces(b []byte) []byte {
	for len(b) > 0 && b[0] == ' ' {
		b = b[1:]
	}
	for len(b) > 0 && b[len(b)-1] == ' ' {
		b = b[:len(b)-1]
	}
	return b
}

func equalFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// appendText appends v of type t as the outputs print it: a float that
// is SQL's REAL (real) as the float32 it is.
func appendText(dst []byte, v rval, t query.ValueType, real bool) []byte {
	switch t {
	case query.StringValue, query.BytesValue:
		return append(dst, v.s...)
	case query.FloatValue:
		if real {
			return query.AppendFloat(dst, float64(float32(v.f)), 32)
		}
		return query.AppendFloat(dst, v.f, 64)
	case query.TimeValue:
		return temporal.AppendTimestamp(dst, v.i)
	case query.BoolValue:
		if v.i != 0 {
			return append(dst, "TRUE"...)
		}
		return append(dst, "FALSE"...)
	}
	return strconv.AppendInt(dst, v.i, 10)
}

func rowCall(e query.Call, s *query.Schema) (rowFn, error) {
	args := make([]rowFn, len(e.Args))
	types := make([]query.ValueType, len(e.Args))
	for i, a := range e.Args {
		f, err := rowOf(a, s)
		if err != nil {
			return nil, err
		}
		args[i], types[i] = f, typeIn(a, s)
	}
	strict := func(f func(vs []rval, sc *rowScratch) rval) rowFn { return strictCall(e.Args, args, f) }
	switch e.Fn {
	case "abs", "floor", "ceil":
		float := types[0] == query.FloatValue
		fn := e.Fn
		return strict(func(v []rval, _ *rowScratch) rval {
			x := v[0]
			if !float {
				if fn == "abs" && x.i < 0 {
					x.i = -x.i
				}
				return x
			}
			switch fn {
			case "abs":
				x.f = math.Abs(x.f)
			case "floor":
				x.f = math.Floor(x.f)
			default:
				x.f = math.Ceil(x.f)
			}
			return x
		}), nil
	case "round":
		float := types[0] == query.FloatValue
		return strict(func(v []rval, _ *rowScratch) rval {
			d := int64(0)
			if len(v) == 2 {
				d = v[1].i
			}
			if float {
				return rval{f: roundFloat(v[0].f, d)}
			}
			return rval{i: roundInt(v[0].i, d)}
		}), nil
	case "mod":
		return strict(func(v []rval, _ *rowScratch) rval {
			if v[1].i == 0 || v[1].i == -1 {
				return rval{}
			}
			return rval{i: v[0].i % v[1].i}
		}), nil
	case "lower", "upper":
		upper := e.Fn == "upper"
		return strict(func(v []rval, sc *rowScratch) rval {
			return rval{s: mapCase(sc.str(len(v[0].s)), v[0].s, upper)}
		}), nil
	case "trim", "ltrim", "rtrim":
		lead, trail := e.Fn != "rtrim", e.Fn != "ltrim"
		return strict(func(v []rval, _ *rowScratch) rval {
			b := v[0].s
			for lead && len(b) > 0 && b[0] == ' ' {
				b = b[1:]
			}
			for trail && len(b) > 0 && b[len(b)-1] == ' ' {
				b = b[:len(b)-1]
			}
			return rval{s: b}
		}), nil
	case "char_length":
		return strict(func(v []rval, _ *rowScratch) rval { return rval{i: int64(utf8.RuneCount(v[0].s))} }), nil
	case "substring":
		return strict(func(v []rval, _ *rowScratch) rval {
			n := int64(-1)
			if len(v) == 3 {
				if n = v[2].i; n < 0 {
					return rnull
				}
			}
			return rval{s: substring(v[0].s, v[1].i, n)}
		}), nil
	case "concat":
		reals := make([]bool, len(e.Args))
		for i, a := range e.Args {
			reals[i] = types[i] == query.FloatValue && query.IsReal(a, query.SchemaReal(s))
		}
		return strict(func(v []rval, sc *rowScratch) rval {
			out := sc.buf[:0]
			for i, x := range v {
				out = appendText(out, x, types[i], reals[i])
			}
			sc.buf = out
			return rval{s: append(sc.str(len(out)), out...)}
		}), nil
	case "split_index":
		if f, ok := splitIndexByte(e, args[0]); ok {
			return f, nil
		}
		return strict(func(v []rval, _ *rowScratch) rval {
			b, ok := splitIndex(v[0].s, v[1].s, v[2].i)
			if !ok {
				return rnull
			}
			return rval{s: b}
		}), nil
	case "regexp_extract":
		m, err := compileRegex(e.Args[1].(query.StrConst).V)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e, err)
		}
		if g, ok := regexGroup(e); ok {
			// The group a literal (or none): one closure, no argument
			// values to fill.
			x := args[0]
			return func(t []byte, sc *rowScratch) rval {
				v := x(t, sc)
				if v.null {
					return rnull
				}
				lo, hi, ok := m.group(v.s, g)
				if !ok {
					return rnull
				}
				return rval{s: v.s[lo:hi]}
			}, nil
		}
		return strict(func(v []rval, _ *rowScratch) rval {
			g := int64(0)
			if len(v) == 3 {
				g = v[2].i
			}
			lo, hi, ok := m.group(v[0].s, g)
			if !ok {
				return rnull
			}
			return rval{s: v[0].s[lo:hi]}
		}), nil
	case "count_char":
		return strict(func(v []rval, _ *rowScratch) rval {
			c, size := utf8.DecodeRune(v[1].s)
			if size == 0 {
				return rval{}
			}
			if c < utf8.RuneSelf {
				// An ASCII byte is never part of another character's
				// encoding, nor of an invalid sequence's.
				return rval{i: int64(bytes.Count(v[0].s, v[1].s[:1]))}
			}
			n, b := int64(0), v[0].s
			for len(b) > 0 {
				r, w := utf8.DecodeRune(b)
				if r == c && (r != utf8.RuneError || (w == size && b[0] == v[1].s[0])) {
					n++
				}
				b = b[w:]
			}
			return rval{i: n}
		}), nil
	case "date_format":
		f, err := temporal.CompileFormat(e.Args[1].(query.StrConst).V)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e, err)
		}
		return strict(func(v []rval, sc *rowScratch) rval {
			sc.buf = f.Append(sc.buf[:0], v[0].i)
			return rval{s: append(sc.str(len(sc.buf)), sc.buf...)}
		}), nil
	case "coalesce":
		float := typeIn(e, s) == query.FloatValue
		if float {
			for i := range args {
				args[i] = asFloat(args[i], types[i])
			}
		}
		return func(t []byte, sc *rowScratch) rval {
			for _, a := range args {
				if v := a(t, sc); !v.null {
					return v
				}
			}
			return rnull
		}, nil
	}
	if u, ok := temporal.ParseUnit(e.Fn); ok {
		return strict(func(v []rval, _ *rowScratch) rval { return rval{i: temporal.Extract(u, v[0].i)} }), nil
	}
	if f, ok := query.ScalarFuncOf(e.Fn); ok {
		return strict(scalarFuncCall(f, types)), nil
	}
	return nil, fmt.Errorf("%s: no kernel for function %s", e, e.Fn)
}

// roundFloat rounds f to d decimals, halves away from zero, as its
// shortest decimal form reads (Flink rounds the BigDecimal of the
// double's string): 2.675 is 2.68, though 2.675*100 is 267.4999... .
func roundFloat(f float64, d int64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) || f == 0 || d > 340 {
		return f
	}
	var buf [48]byte
	b := strconv.AppendFloat(buf[:0], math.Abs(f), 'e', -1, 64)
	// b is "D[.DDD]e±X": the digits, and the exponent of the first.
	e := bytes.IndexByte(b, 'e')
	exp, _ := strconv.Atoi(string(b[e+1:]))
	var digits [24]byte
	nd := 0
	for _, c := range b[:e] {
		if c != '.' {
			digits[nd] = c
			nd++
		}
	}
	// The digits kept are those down to 10^-d.
	keep := int64(exp) + 1 + d
	if keep >= int64(nd) {
		return f
	}
	if keep < 0 {
		return 0
	}
	var v uint64
	for _, c := range digits[:keep] {
		v = v*10 + uint64(c-'0')
	}
	if digits[keep] >= '5' {
		v++
	}
	// The result is v * 10^-d, parsed from its decimal form so that it is
	// the float nearest to it.
	t := strconv.AppendUint(buf[:0], v, 10)
	t = append(t, 'e')
	t = strconv.AppendInt(t, -d, 10)
	out, _ := strconv.ParseFloat(string(t), 64)
	if f < 0 {
		out = -out
	}
	return out
}

// roundInt rounds i to a multiple of 10^-d for d < 0, halves away from
// zero (wrapping past int64); an integer has no decimals to round for
// d >= 0.
func roundInt(i, d int64) int64 {
	if d >= 0 {
		return i
	}
	if d < -19 {
		return 0
	}
	if d == -19 {
		// |i| < 9.3e18: it rounds to 0 or to ±10^19, which wraps.
		const half = 5_000_000_000_000_000_000
		var ten19 uint64 = 10_000_000_000_000_000_000
		switch {
		case i >= half:
			return int64(ten19)
		case i <= -half:
			return -int64(ten19)
		}
		return 0
	}
	p := int64(1)
	for range -d {
		p *= 10
	}
	q, r := i/p, i%p
	switch {
	case r >= (p+1)/2:
		q++
	case r <= -(p+1)/2:
		q--
	}
	return q * p
}

// textToInt reads a string cast to an integer as Flink does: an optional
// sign and decimal digits, then an optional '.' and digits, which are
// dropped (CAST('-7.9' AS BIGINT) is -7, '.5' is 0); anything else, or a
// number out of int64's range, does not parse.
func textToInt(b []byte) (int64, bool) {
	if k := bytes.IndexByte(b, '.'); k >= 0 {
		for _, c := range b[k+1:] {
			if c < '0' || c > '9' {
				return 0, false
			}
		}
		if b = b[:k]; len(b) == 0 || len(b) == 1 && (b[0] == '+' || b[0] == '-') {
			return 0, true
		}
	}
	i, err := strconv.ParseInt(string(b), 10, 64)
	return i, err == nil
}

// substring is Flink's SUBSTRING(s, start, n) over characters: from
// 1-based start (0 is 1; a negative start counts back from the end, the
// empty string where that is before the first), n of them (n < 0: to the
// end). A negative length is NULL, its caller's.
func substring(s []byte, start, n int64) []byte {
	if start < 0 {
		start += int64(utf8.RuneCount(s))
		if start < 0 {
			return s[:0]
		}
	} else if start > 0 {
		start--
	}
	i := 0
	for c := int64(0); c < start && i < len(s); c++ {
		_, w := utf8.DecodeRune(s[i:])
		i += w
	}
	j := len(s)
	if n >= 0 {
		j = i
		for c := int64(0); c < n && j < len(s); c++ {
			_, w := utf8.DecodeRune(s[j:])
			j += w
		}
	}
	return s[i:j]
}

// splitIndex is piece i (zero-based) of s split at every sep; an empty s
// has no pieces, as Flink's.
func splitIndex(s, sep []byte, i int64) ([]byte, bool) {
	if i < 0 || len(s) == 0 {
		return nil, false
	}
	if len(sep) == 0 {
		return s, i == 0
	}
	for ; ; i-- {
		k := bytes.Index(s, sep)
		if i == 0 {
			if k < 0 {
				return s, true
			}
			return s[:k], true
		}
		if k < 0 {
			return nil, false
		}
		s = s[k+len(sep):]
	}
}
