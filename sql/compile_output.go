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
	case n.kind == eCall && n.l.kind == eCol:
		return n.name + "_" + n.l.name
	case n.kind == eCall:
		return n.name
	}
	return fmt.Sprintf("expr%d", i+1)
}

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
		return "'" + n.s + "'"
	case eNeg:
		return "-" + exprText(n.l)
	case eNot:
		return "NOT " + exprText(n.l)
	case eCall:
		if n.star {
			return strings.ToUpper(n.name) + "(*)"
		}
		return strings.ToUpper(n.name) + "(" + exprText(n.l) + ")"
	}
	return "(" + exprText(n.l) + " " + strings.ToUpper(n.op) + " " + exprText(n.r) + ")"
}

// outType is the SQL type of the values of v in an output tuple.
func outType(v val) (string, []string) {
	switch {
	case v.typ.isBytes():
		return v.typ.String(), nil
	case v.typ.kind == tyEnum:
		return "BIGINT", v.typ.labels
	case v.t == query.FloatValue:
		return "DOUBLE", nil
	case v.t == query.BytesValue:
		return fmt.Sprintf("BYTES(%d)", v.typ.size), nil
	}
	return "BIGINT", nil
}

// outSQLType is the declared type of output attribute a, as a view's column.
func outSQLType(a query.Attribute, labels []string) sqlType {
	switch a.Type {
	case query.Int32:
		if labels != nil {
			return sqlType{kind: tyEnum, labels: labels}
		}
		return sqlType{kind: tyInt}
	case query.Int64:
		if labels != nil {
			return sqlType{kind: tyEnum, labels: labels}
		}
		return sqlType{kind: tyBigint}
	case query.Float32:
		return sqlType{kind: tyReal}
	case query.Float64:
		return sqlType{kind: tyDouble}
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
		return errAt(at, "%v", err)
	}
	q.Spec.Query, q.Output = mq, out
	return nil
}

// viewRelation fills out, the relation a view of q is, from q's output
// schema renamed to the visible columns cols (in attribute order of their
// first use): attribute i is named after the first visible column on it,
// or $i.
func (c *compiler) viewRelation(out *relation, q *Query, cols []relCol) {
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
			if i == 0 && !taken["window_start"] && q.Spec.Query != nil && !q.Spec.Query.Stateless() {
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
		cols = append(cols, relCol{name: "window_start", attr: "window_start", typ: sqlType{kind: tyBigint}})
	}
	s, err := query.NewSchema(q.Output.TupleSize, attrs...)
	if err != nil {
		panic(fmt.Sprintf("sql: renaming %s's output: %v", q.Name, err))
	}
	out.schema, out.cols = s, cols
}
