package sql

import (
	"fmt"
	"strings"

	"github.com/saber-hx/saber-hx/query"
)

// Explain describes the program in words, one block per source, table and
// query: layouts, options, and each query's plan in the model's terms
// (window, WHERE, join, GROUP BY, aggregates, HAVING, projections, its input
// and sink), for `saber-hx explain`.
func (p *Program) Explain() string {
	var b strings.Builder
	for _, s := range p.Sources {
		fmt.Fprintf(&b, "source %s (line %d): %s", s.Name, s.Line, s.Connector)
		switch {
		case s.Path != "":
			fmt.Fprintf(&b, " %s", s.Path)
		case s.Workload != "":
			fmt.Fprintf(&b, " workload %s", s.Workload)
		case s.Connector == "kafka":
			fmt.Fprintf(&b, " topic %s at %s", s.Topic, strings.Join(s.Brokers, ","))
			if s.Group != "" {
				fmt.Fprintf(&b, ", group %s", s.Group)
			}
			fmt.Fprintf(&b, " (%s)", s.KafkaSecurity)
		}
		unit := s.TimeUnit
		if s.Schema.Attrs[0].Logical == query.Time {
			unit = "TIMESTAMP, ms"
			if s.EventTime == s.ProcTime {
				unit = "the processing time, ms"
			}
		}
		fmt.Fprintf(&b, ", format %s, %d-byte tuples, event time %s (%s)", s.Format, s.Schema.TupleSize, s.EventTime, unit)
		if s.OnError == "skip" {
			b.WriteString(", bad records skipped")
		}
		b.WriteByte('\n')
		for _, c := range s.Columns {
			fmt.Fprintf(&b, "  %-16s %-12s at %d", c.Name, c.Type, c.Attr.Offset)
			switch {
			case c.Name == s.ProcTime:
				b.WriteString(", the processing time")
			case c.Attr.Nullable:
				fmt.Fprintf(&b, ", NULL bit %d", c.Attr.NullBit)
			}
			if at, ok := s.DictNumbers[c.Attr.Name]; ok {
				fmt.Fprintf(&b, ", dictionary-encoded (number at %d)", at)
			}
			b.WriteByte('\n')
		}
	}
	for _, t := range p.Tables {
		fmt.Fprintf(&b, "table %s (line %d): %s %s, format %s, %d rows loaded\n", t.Name, t.Line, t.Connector, t.Path, t.Format, t.rows)
		for _, c := range t.Columns {
			fmt.Fprintf(&b, "  %-16s %s\n", c.Name, c.Type)
		}
	}
	for _, q := range p.Queries {
		what := "query"
		if q.View {
			what = "view"
		}
		if q.Part != "" {
			what = "part of " + q.Part + ":"
		}
		fmt.Fprintf(&b, "%s %s (line %d)\n", what, q.Name, q.Line)
		in := func(source, from string) string {
			if from != "" {
				return "view " + from
			}
			return "source " + source
		}
		if j := q.Spec.Join; j != nil && j.Regular {
			fmt.Fprintf(&b, "  regular join of %s and %s\n", in(q.Input, q.From), in(q.InputRight, q.FromRight))
			fmt.Fprintf(&b, "  on: l.%s = r.%s (both sides kept)\n", j.Left.Attrs[j.LeftKey].Name, j.Right.Attrs[j.RightKey].Name)
		} else if j != nil {
			fmt.Fprintf(&b, "  window join of %s and %s\n", in(q.Input, q.From), in(q.InputRight, q.FromRight))
			fmt.Fprintf(&b, "  window: %s", windowText(j.Window))
			if j.Window.Delay > 0 {
				fmt.Fprintf(&b, ", delay %d", j.Window.Delay)
			}
			b.WriteByte('\n')
			if j.Where != nil {
				fmt.Fprintf(&b, "  on: %s\n", j.Where)
			}
		} else {
			mq := q.Spec.Query
			fmt.Fprintf(&b, "  from %s\n", in(q.Input, q.From))
			if !mq.Stateless() {
				fmt.Fprintf(&b, "  window: %s\n", windowText(mq.Window))
			}
			if mq.Where != nil {
				fmt.Fprintf(&b, "  where: %s\n", mq.Where)
			}
			if j := mq.Join; j != nil {
				keys := fmt.Sprintf("%d-byte keys", j.Table.KeyWidth)
				if j.Table.KeyWidth == 0 {
					keys = "string keys"
				}
				if j.Values != nil {
					names := make([]string, len(j.Values.Attrs))
					for i, a := range j.Values.Attrs {
						names[i] = a.Name
					}
					fmt.Fprintf(&b, "  lookup join: %s with a table's %s, values %s\n", j.KeyText(), keys, strings.Join(names, ", "))
				} else {
					fmt.Fprintf(&b, "  join: %s with a table's %s, value as %s\n", j.Column, keys, j.As)
				}
			}
			if len(mq.GroupBy) > 0 {
				fmt.Fprintf(&b, "  group by: %s\n", exprList(mq.GroupBy))
			}
			for _, a := range mq.Aggregates {
				arg := "*"
				if a.Arg != nil {
					arg = a.Arg.String()
				}
				filter := ""
				if a.Filter != nil {
					filter = " FILTER (WHERE " + a.Filter.String() + ")"
				}
				fmt.Fprintf(&b, "  aggregate %s: %s(%s)%s\n", a.As, strings.ToUpper(a.Func.String()), arg, filter)
			}
			if mq.Having != nil {
				fmt.Fprintf(&b, "  having: %s\n", mq.Having)
			}
			for _, pr := range mq.Project {
				fmt.Fprintf(&b, "  project %s: %s\n", pr.As, pr.Expr)
			}
			if mq.UDF != nil {
				fmt.Fprintf(&b, "  udf: %s\n", mq.UDF.Name)
			}
		}
		names := make([]string, len(q.Columns))
		for i, c := range q.Columns {
			names[i] = c.Name
		}
		fmt.Fprintf(&b, "  columns: %s\n", strings.Join(names, ", "))
		if s := q.Sink; s != nil {
			fmt.Fprintf(&b, "  sink: %s", s.Connector)
			switch s.Connector {
			case "kafka":
				fmt.Fprintf(&b, " topic %s at %s (%s), format %s\n", s.Topic, strings.Join(s.Brokers, ","), s.KafkaSecurity, s.Format)
			case "redis":
				// Redis's String shows the password as ***.
				fmt.Fprintf(&b, " %s, layout %s\n", s.Redis, s.Layout)
			case "blackhole":
				fmt.Fprintf(&b, " (rows counted, not written)\n")
			default:
				if s.Path != "" {
					fmt.Fprintf(&b, " %s", s.Path)
				}
				fmt.Fprintf(&b, ", format %s\n", s.Format)
			}
		}
	}
	return b.String()
}

func windowText(w query.Window) string {
	unit := ""
	if w.Type == query.Range {
		unit = " (event-time units)"
	}
	if w.Size == w.Slide {
		return fmt.Sprintf("tumbling %s %d%s", w.Type, w.Size, unit)
	}
	return fmt.Sprintf("sliding %s %d, slide %d%s", w.Type, w.Size, w.Slide, unit)
}

func exprList(es []query.Expr) string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.String()
	}
	return strings.Join(s, ", ")
}
