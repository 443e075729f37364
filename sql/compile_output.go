package sql

import (
	"fmt"
	"slices"
	"strings"

	"github.com/saber-hx/saber-hx/query"
)

func outputName(it selectItem, i int) string {
	if it.alias != nil {
		return it.alias.name
	}
	n := it.expr
	switch {
	case n.kind == eCol:
		return n.name
	case n.kind == eCall && (n.name == "count"):
		return "count"
	case n.kind == eCall && n.l != nil && n.l.kind == eCol:
		return n.name + "_" + n.l.name
	case n.kind == eCall:
		return n.name
	case n.kind == eFunc && windowFuncs[n.name] != "":
		return n.name
	}
	return fmt.Sprintf("expr%d", i+1)
}

// uniqueOutputName is outputName, where a name without AS is an earlier
// item's (names) or an alias of the list (aliases), with the least
// number after it that makes it unique, as Flink (Calcite) names it: x0,
// x1, ... (Nexmark's q20 selects B.dateTime and A.dateTime; COUNT(*)
// beside COUNT(x) gives count and count0). Two aliases alike stay an
// error.
func uniqueOutputName(names, aliases map[string]bool, it selectItem, i int) string {
	name := outputName(it, i)
	if it.alias != nil {
		return name
	}
	base := name
	for k := 0; names[name] || aliases[name]; k++ {
		name = fmt.Sprintf("%s%d", base, k)
	}
	return name
}

func upperName(s string) string { return strings.ToUpper(s) }

func exprText(n *node) string {
	switch n.kind {
	case eCol:
		if n.qual != "" {
			return n.qual + "." + n.name
		}
		return n.name
	case eInt:
		return fmt.Sprint(n.i)
	case eFloat:
		return fmt.Sprint(n.f)
	case eString:
		return "'" + strings.ReplaceAll(n.s, "'", "''") + "'"
	case eBool:
		return strings.ToUpper(fmt.Sprint(n.b))
	case eNull:
		return "NULL"
	case eInterval:
		return n.iv.text
	case eTime:
		return strings.ToUpper(n.name) + " '" + n.s + "'"
	case eNeg:
		return "-" + exprText(n.l)
	case eNot:
		return "NOT " + exprText(n.l)
	case eCall:
		switch {
		case n.star:
			return strings.ToUpper(n.name) + "(*)"
		case n.distinct:
			return strings.ToUpper(n.name) + "(DISTINCT " + exprText(n.l) + ")"
		}
		return strings.ToUpper(n.name) + "(" + exprText(n.l) + ")"
	case eFunc:
		args := make([]string, len(n.args))
		for i, a := range n.args {
			args[i] = exprText(a)
		}
		return strings.ToUpper(n.name) + "(" + strings.Join(args, ", ") + ")"
	case eCast:
		return "CAST(" + exprText(n.l) + " AS " + n.typ.String() + ")"
	case eCase:
		return "CASE ... END"
	case eIn:
		return exprText(n.l) + " IN (...)"
	case eBetween:
		return exprText(n.l) + " BETWEEN " + exprText(n.args[0]) + " AND " + exprText(n.args[1])
	case eLike:
		return exprText(n.l) + " LIKE '" + n.s + "'"
	case eIsNull:
		return exprText(n.l) + " IS NULL"
	case eIsBool:
		return exprText(n.l) + " IS " + strings.ToUpper(fmt.Sprint(n.b))
	}
	return "(" + exprText(n.l) + " " + strings.ToUpper(n.op) + " " + exprText(n.r) + ")"
}

// outType is the SQL type of the values of v in an output tuple, and an
// ENUM's labels.
func outType(v val) (string, []string) {
	switch {
	case v.typ.isBytes():
		return v.typ.String(), nil
	case v.typ.kind == tyEnum:
		return "BIGINT", v.typ.labels
	case realVal(v):
		return "REAL", nil
	}
	return valueTypeText(v.t), nil
}

// valueTypeText is the SQL type of a value of type t in an output tuple.
func valueTypeText(t query.ValueType) string {
	switch t {
	case query.FloatValue:
		return "DOUBLE"
	case query.StringValue:
		return "VARCHAR"
	case query.TimeValue:
		return "TIMESTAMP(3)"
	case query.BoolValue:
		return "BOOLEAN"
	}
	return "BIGINT"
}

// realVal reports whether v is a REAL (query.IsReal): a REAL column, or
// a CAST AS REAL.
func realVal(v val) bool {
	return v.t == query.FloatValue && (v.typ.kind == tyReal || query.IsReal(v.e, nil))
}

// outDecl is the declared type of v as a view's column.
func outDecl(v val) sqlType {
	switch {
	case v.typ.isBytes():
		return v.typ
	case v.typ.kind == tyEnum:
		return sqlType{kind: tyEnum, labels: v.typ.labels}
	case realVal(v):
		return sqlType{kind: tyReal}
	}
	switch v.t {
	case query.FloatValue:
		return sqlType{kind: tyDouble}
	case query.StringValue:
		return sqlType{kind: tyString}
	case query.TimeValue:
		return sqlType{kind: tyTimestamp}
	case query.BoolValue:
		return sqlType{kind: tyBool}
	}
	return sqlType{kind: tyBigint}
}

// typeText is the SQL type of attribute a's values, declared decl (kind
// 0: computed).
func typeText(a query.Attribute, decl sqlType) string {
	switch {
	case decl.kind == tyEnum:
		return "INT"
	case decl.kind != 0:
		return decl.String()
	}
	return outSQLType(a, nil).String()
}

// outSQLType is the declared type of output attribute a, as a view's column.
func outSQLType(a query.Attribute, labels []string) sqlType {
	switch {
	case labels != nil && (a.Type == query.Int32 || a.Type == query.Int64):
		return sqlType{kind: tyEnum, labels: labels}
	case a.Logical == query.Time:
		return sqlType{kind: tyTimestamp}
	case a.Logical == query.Boolean:
		return sqlType{kind: tyBool}
	case a.IsReal():
		return sqlType{kind: tyReal}
	}
	switch a.Type {
	case query.Int32:
		return sqlType{kind: tyInt}
	case query.Int64:
		return sqlType{kind: tyBigint}
	case query.Float32:
		return sqlType{kind: tyReal}
	case query.Float64:
		return sqlType{kind: tyDouble}
	case query.String:
		return sqlType{kind: tyString}
	}
	if a.Size == 16 {
		return sqlType{kind: tyUUID, size: 16}
	}
	return sqlType{kind: tyBytes, size: a.Size}
}

// finishQuery validates mq with the model (a last check: the compiler's
// own checks come first, with better positions) and sets q's spec.
func (c *compiler) finishQuery(q *Query, mq *query.Query, sel *selectStmt) error {
	out, err := mq.OutputSchema()
	if err != nil {
		at := sel.pos
		if strings.Contains(err.Error(), "group by") && len(sel.groupBy) > 0 {
			at = sel.groupBy[0].pos
		}
		hint := ""
		if strings.Contains(err.Error(), "bytes are supported") {
			hint = "; declare NOT NULL the key columns that never are (COUNT(DISTINCT x) groups by x too)"
		}
		return errAt(at, "%v%s", err, hint)
	}
	q.Spec.Query, q.Output = mq, out
	return nil
}

// viewRelation fills out, the relation a view of q is, from q's output
// schema renamed to the visible columns cols (in attribute order of their
// first use): attribute i is named after the first visible column on it,
// or $i.
//
// With start, attribute 0 is a window's start: named window_start where
// no column is on it, and visible under that name.
func (c *compiler) viewRelation(out *relation, q *Query, cols []relCol, start bool) {
	attrs := slices.Clone(q.Output.Attrs)
	named := make([]bool, len(attrs))
	taken := map[string]bool{}
	colAttr := make([]int, len(cols))
	vi := 0
	for _, oc := range q.Columns {
		if oc.Attr < 0 {
			continue
		}
		colAttr[vi] = oc.Attr
		vi++
	}
	for i, col := range cols {
		a := colAttr[i]
		if !named[a] && !taken[col.name] {
			attrs[a].Name = col.name
			named[a], taken[col.name] = true, true
		}
	}
	for i := range attrs {
		if !named[i] {
			name := fmt.Sprintf("$%d", i)
			if i == 0 && !taken["window_start"] && start {
				name = "window_start"
			}
			for taken[name] { // a quoted select name may look like ours
				name = "$" + name
			}
			attrs[i].Name = name
			taken[name] = true
		}
	}
	for i := range cols {
		cols[i].attr = attrs[colAttr[i]].Name
		if colAttr[i] == 0 && out.timeName == "" {
			out.timeName = cols[i].name
		}
	}
	if out.timeName == "" && attrs[0].Name == "window_start" {
		out.timeName = "window_start"
		cols = append(cols, relCol{name: "window_start", attr: "window_start", typ: outSQLType(attrs[0], nil)})
	}
	s, err := query.NewSchema(q.Output.TupleSize, attrs...)
	if err != nil {
		panic(fmt.Sprintf("sql: renaming %s's output: %v", q.Name, err))
	}
	out.schema, out.cols = s, cols
}
