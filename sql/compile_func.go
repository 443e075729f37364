package sql

import (
	"regexp"
	"slices"
	"strings"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/temporal"
)

// Scalar functions, CASE and CAST: their rules are query.Funcs's.

// funcAliases are other dialects' names of query.Funcs's functions.
var funcAliases = map[string]string{
	"ceiling": "ceil", "character_length": "char_length", "length": "char_length",
	"substr": "substring", "dayofmonth": "dayofmonth",
}

// groupWindows are the window functions of GROUP BY.
var groupWindows = map[string]bool{"tumble": true, "hop": true, "session": true}

// windowFuncs are TUMBLE_START(...) and its kin: the property of the
// group window they name.
var windowFuncs = map[string]string{
	"tumble_start": "start", "tumble_end": "end", "tumble_rowtime": "rowtime", "tumble_proctime": "proctime",
	"hop_start": "start", "hop_end": "end", "hop_rowtime": "rowtime", "hop_proctime": "proctime",
	"session_start": "start", "session_end": "end", "session_rowtime": "rowtime", "session_proctime": "proctime",
}

// nondeterministic functions: their values depend on when a query runs.
var nondeterministic = map[string]bool{
	"proctime": true, "now": true, "current_timestamp": true, "localtimestamp": true, "current_date": true,
	"current_time": true, "localtime": true, "current_row_timestamp": true, "rand": true, "rand_integer": true, "uuid": true,
	"unix_timestamp": true,
}

// extractUnits are EXTRACT's units, as query.Funcs names them.
var extractUnits = map[string]string{
	"year": "year", "quarter": "quarter", "month": "month", "week": "week", "day": "day",
	"dow": "dayofweek", "doy": "dayofyear", "hour": "hour", "minute": "minute", "second": "second",
	"millisecond": "millisecond",
}

func funcNames() string {
	names := []string{"COUNT", "SUM", "AVG", "MIN", "MAX", "CAST", "EXTRACT", "IF", "NULLIF", "IFNULL", "CEILING", "CHARACTER_LENGTH", "SUBSTR"}
	for n := range query.Funcs {
		names = append(names, strings.ToUpper(n))
	}
	slices.Sort(names)
	return strings.Join(slices.Compact(names), ", ")
}

func (c *compiler) function(ctx *exprCtx, n *node) (val, error) {
	name := n.name
	upper := strings.ToUpper(name)
	switch {
	case groupWindows[name]:
		return val{}, errAt(n.pos, "%s(...) is a window: it stands in GROUP BY (GROUP BY %s(time_col, ...)) or in FROM", upper, upper)
	case windowFuncs[name] != "":
		return val{}, errAt(n.pos, "%s(...) needs GROUP BY %s(...) over the same arguments", upper, strings.ToUpper(name[:strings.IndexByte(name, '_')]))
	case name == "proctime":
		return val{}, errAt(n.pos, "PROCTIME is not supported: a query's results depend on its input alone (declare a column AS PROCTIME() in the source for the time of ingestion, or add one in a view of the source as it is: CREATE VIEW v AS SELECT *, PROCTIME() AS p FROM source)")
	case nondeterministic[name]:
		return val{}, errAt(n.pos, "%s is not supported: a query's results depend on its input alone (declare a column AS PROCTIME() in the source for the time of ingestion)", upper)
	case name == "extract":
		fn, ok := extractUnits[n.s]
		if !ok {
			return val{}, errAt(n.parenPos, "EXTRACT(%s FROM ...) is not supported (valid units: YEAR, QUARTER, MONTH, WEEK, DAY, DOW, DOY, HOUR, MINUTE, SECOND, MILLISECOND)", strings.ToUpper(n.s))
		}
		name = fn
	case name == "if":
		if len(n.args) != 3 {
			return val{}, errAt(n.pos, "IF takes 3 arguments (a condition, its value where it holds, else the other), not %d", len(n.args))
		}
		cond, err := c.boolean(ctx, n.args[0], "IF")
		if err != nil {
			return val{}, err
		}
		a, err := c.expr(ctx, n.args[1])
		if err != nil {
			return val{}, err
		}
		b, err := c.expr(ctx, n.args[2])
		if err != nil {
			return val{}, err
		}
		enum := enumBranches([]*val{&a, &b})
		v, err := typed(ctx, n, query.Case{Whens: []query.When{{Cond: cond.e, Then: a.e}}, Else: b.e})
		v.typ = enum
		return v, err
	case name == "nullif":
		if len(n.args) != 2 {
			return val{}, errAt(n.pos, "NULLIF takes 2 arguments, not %d", len(n.args))
		}
		a, err := c.expr(ctx, n.args[0])
		if err != nil {
			return val{}, err
		}
		b, err := c.expr(ctx, n.args[1])
		if err != nil {
			return val{}, err
		}
		if b, err = compatible(b, a, n.args[1], n.args[0]); err != nil {
			return val{}, err
		}
		v, err := typed(ctx, n, query.Case{Whens: []query.When{{Cond: query.Cmp(a.e, query.Eq, b.e), Then: query.Null{T: a.t}}}, Else: a.e})
		v.typ = a.typ
		return v, err
	case name == "ifnull" || name == "nvl":
		name = "coalesce"
	}
	if a, ok := funcAliases[name]; ok {
		name = a
	}
	if _, ok := query.Funcs[name]; !ok {
		return val{}, errAt(n.pos, "unknown function %s (valid: %s)", upper, funcNames())
	}
	if n.l != nil { // TRIM(... chars FROM s)
		if n.l.kind != eString || n.l.s != " " {
			return val{}, errAt(n.l.pos, "TRIM removes spaces only: TRIM(%s FROM s) is not supported", exprText(n.l))
		}
	}
	args := make([]query.Expr, len(n.args))
	for i, a := range n.args {
		v, err := c.expr(ctx, a)
		if err != nil {
			return val{}, err
		}
		if name == "concat" {
			v = enumText(v)
		}
		args[i] = v.e
	}
	call := query.Call{Fn: name, Args: args}
	switch name {
	case "date_format":
		if len(n.args) == 2 && n.args[1].kind == eString {
			if _, err := temporal.CompileFormat(n.args[1].s); err != nil {
				return val{}, errAt(n.args[1].pos, "DATE_FORMAT's format '%s': %v", n.args[1].s, err)
			}
		}
	case "regexp_extract":
		if len(n.args) >= 2 && n.args[1].kind == eString {
			if _, err := regexp.Compile(n.args[1].s); err != nil {
				return val{}, errAt(n.args[1].pos, "REGEXP_EXTRACT's pattern '%s': %v", n.args[1].s, err)
			}
		}
	}
	v, err := typed(ctx, n, call)
	if err == nil && name == "coalesce" && len(n.args) > 0 {
		if first, err := c.expr(ctx, n.args[0]); err == nil && first.typ.kind == tyEnum {
			v.typ = first.typ
		}
	}
	return v, err
}

// enumText is v as text where it is an ENUM column: its label (CASE over
// the codes), as the outputs print it; v itself otherwise.
func enumText(v val) val {
	if v.typ.kind != tyEnum {
		return v
	}
	whens := make([]query.When, len(v.typ.labels))
	for i, l := range v.typ.labels {
		whens[i] = query.When{Cond: query.Cmp(v.e, query.Eq, query.Int(int64(i))), Then: query.Str(l)}
	}
	return val{e: query.Case{Whens: whens, Else: query.Call{Fn: "concat", Args: []query.Expr{v.e}}}, t: query.StringValue}
}

// caseExpr compiles CASE [x] WHEN ... THEN ... [ELSE ...] END.
func (c *compiler) caseExpr(ctx *exprCtx, n *node) (val, error) {
	var x val
	if n.l != nil {
		var err error
		if x, err = c.expr(ctx, n.l); err != nil {
			return val{}, err
		}
	}
	var whens []query.When
	var branches []*val
	for i := 0; i < len(n.args); i += 2 {
		var cond query.Expr
		if n.l != nil {
			v, err := c.expr(ctx, n.args[i])
			if err != nil {
				return val{}, err
			}
			if v, err = compatible(v, x, n.args[i], n.l); err != nil {
				return val{}, err
			}
			xx, err := compatible(x, v, n.l, n.args[i])
			if err != nil {
				return val{}, err
			}
			cond = query.Cmp(xx.e, query.Eq, v.e)
		} else {
			v, err := c.boolean(ctx, n.args[i], "CASE WHEN")
			if err != nil {
				return val{}, err
			}
			cond = v.e
		}
		then, err := c.expr(ctx, n.args[i+1])
		if err != nil {
			return val{}, err
		}
		branches = append(branches, &then)
		whens = append(whens, query.When{Cond: cond})
	}
	var els *val
	if n.r != nil {
		v, err := c.expr(ctx, n.r)
		if err != nil {
			return val{}, err
		}
		els = &v
		branches = append(branches, els)
	}
	enum := enumBranches(branches)
	for i := range whens {
		whens[i].Then = branches[i].e
	}
	cs := query.Case{Whens: whens}
	if els != nil {
		cs.Else = els.e
	}
	v, err := typed(ctx, n, cs)
	if err != nil {
		return val{}, errAt(n.pos, "CASE: its branches are of types that do not mix (THEN and ELSE must be numbers, strings, timestamps or conditions alike)")
	}
	v.typ = enum
	return v, nil
}

// enumBranches makes the branches of a CASE or IF agree on ENUMs: where
// every one is the same ENUM (or NULL), the result is that ENUM (its
// labels printed); among strings, or ENUMs of other labels, an ENUM is
// its label, as CONCAT takes it (its code would be a number among
// strings). Among numbers it stays its code, as before.
func enumBranches(bs []*val) sqlType {
	var enum *sqlType
	same, text := true, false
	for _, b := range bs {
		if _, null := b.e.(query.Null); null {
			continue
		}
		switch {
		case b.typ.kind != tyEnum:
			same, text = false, text || b.t == query.StringValue
		case enum == nil:
			enum = &b.typ
		case !slices.Equal(enum.labels, b.typ.labels):
			same, text = false, true
		}
	}
	switch {
	case enum == nil:
		return sqlType{}
	case same:
		return *enum
	case text:
		for _, b := range bs {
			*b = enumText(*b)
		}
	}
	return sqlType{}
}

// castTarget is the value type of a CAST to t; ok false for the types a
// value is not cast to (UUID, BYTES, ENUM).
func castTarget(t sqlType) (query.ValueType, bool) {
	switch t.kind {
	case tyInt, tyBigint:
		return query.IntValue, true
	case tyReal, tyDouble:
		return query.FloatValue, true
	case tyString:
		return query.StringValue, true
	case tyTimestamp:
		return query.TimeValue, true
	case tyBool:
		return query.BoolValue, true
	}
	return 0, false
}

func (c *compiler) cast(ctx *exprCtx, n *node) (val, error) {
	x, err := c.expr(ctx, n.l)
	if err != nil {
		return val{}, err
	}
	to, ok := castTarget(n.typ)
	if !ok {
		return val{}, errAt(n.parenPos, "CAST to %s is not supported (valid: the numeric types, VARCHAR, TIMESTAMP, BOOLEAN)", n.typ)
	}
	if to == query.StringValue {
		x = enumText(x)
	}
	if x.t == query.BytesValue {
		return val{}, errAt(n.pos, "%s is %s: it cannot be cast", exprText(n.l), typeName(x))
	}
	if _, err := query.TypeOf(query.Cast{X: x.e, To: to}, ctx.scope); err != nil {
		return val{}, errAt(n.pos, "CAST(%s AS %s): %s does not convert to %s", exprText(n.l), n.typ, typeName(x), n.typ)
	}
	// CAST AS REAL rounds to a float32, and the value prints as one
	// CAST AS TIMESTAMP(p), p < 3, floors the fraction to p digits
	var e query.Expr = query.Cast{X: x.e, To: to, Real: n.typ.kind == tyReal, Unit: n.typ.unit}
	if n.typ.decimal {
		// Flink's CAST to DECIMAL(p, s) rounds to s decimals, halves away
		// from zero, as ROUND does (its precision p is not enforced).
		e = query.Call{Fn: "round", Args: []query.Expr{e, query.Int(int64(n.typ.scale))}}
	}
	return val{e: e, t: to}, nil
}
