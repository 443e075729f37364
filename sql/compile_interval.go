package sql

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/saber-hx/saber-hx/query"
)

// An interval join (Flink's regular join under a time-range condition,
// Nexmark's q7): a stream S joined with a view V of TUMBLE windows of size
// W, whose ON and WHERE keep S's event time within each V row's window:
//
//	FROM bid B JOIN (SELECT MAX(price) AS maxprice, window_end AS t
//	                 FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(ts), INTERVAL '10' SECOND))
//	                 GROUP BY window_start, window_end) B1
//	ON B.price = B1.maxprice
//	WHERE B.ts BETWEEN B1.t - INTERVAL '10' SECOND AND B1.t
//
// Its meaning: every pair of an S tuple and a V row for which ON and WHERE
// hold, once. The bounds, terms of ON and WHERE (ANDed, at the top) that
// compare S's time with a column of V that is its window's start or end
// (window_start, window_end, as they are) plus or minus constants, must
// keep S's time within [start, start + W] of the V row's window (the
// bounds may be narrower, and strict).
//
// It runs as a window join over tumbling windows of size W (in S's time
// unit), the predicate ON AND WHERE as it is, of V's rows (timed their
// window's start: one join window, their own, holds each) and of S
// through a part that times each S tuple t, and a tuple on a bound (t a
// multiple of W) a second time, t - 1 (a stateless query whose UDF
// prepends the time to each tuple, which keeps its columns). The join
// window of V's row of [start, start + W) then holds the S tuples of
// times start to start + W, the last by its copy: every pair the bounds
// admit meets in exactly one window, once, and the predicate keeps
// exactly the pairs for which ON and WHERE hold. (Sliding windows of size
// W + 1 and slide W say the same, but their panes are 1 unit wide: a
// join that files and pins each pane on its own runs many times slower.)
//
// Lateness: V's rows come in order of their windows, and are never late.
// The join's windows close W plus S's watermark delay after their ends,
// so that every S tuple that V's aggregation over the same stream would
// count (one not later than its window's close) joins: the copy of a
// tuple on a bound, at the end of the join window before its own, is
// late exactly when V's aggregation finds the tuple late.

// intervalShape is the interval join supported, in words, for errors.
const intervalShape = "an interval join is supported: of a stream S with a view V of TUMBLE windows of size W, whose ON and WHERE keep S's event time within V's window, as Nexmark's q7's S.ts BETWEEN V.window_end - INTERVAL 'W' AND V.window_end"

// intervalJoin lowers FROM left JOIN right, neither of which has a window,
// where it is an interval join: it returns the two sides the window join
// reads (V's rows timed start + 1) and its window, or an error naming the
// shape supported. Where neither side is a view of windows, it returns
// the sides as they are and no window (Window.Size 0).
func (c *compiler) intervalJoin(name string, sel *selectStmt, left, right *relation) (*relation, *relation, query.Window, error) {
	lq, rq := qualOf(&sel.from), qualOf(sel.join)
	if lq == rq && (left.slide > 0 || right.slide > 0) {
		return nil, nil, query.Window{}, errAt(sel.join.name.pos, "both sides of the join are called %s: give them aliases", lq)
	}
	sc := &scope{cols: append(streamScope(left, lq, sideLeft, ""), streamScope(right, rq, sideRight, "")...)}
	var first error
	for _, vRight := range []bool{true, false} {
		s, v, sq, vq, vSide, vAt := left, right, lq, rq, sideRight, sel.join.name.pos
		if !vRight {
			s, v, sq, vq, vSide, vAt = right, left, rq, lq, sideLeft, sel.from.name.pos
		}
		if v.slide == 0 || v.view == nil {
			continue
		}
		err := c.intervalSides(sel, sc, s, v, sq, vq, vSide, vAt)
		if err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		w := v.size
		win := query.Window{Type: query.Range, Size: w, Slide: w, Delay: w + windowDelay(s)}
		st := c.boundsTwice(s, w, sideColumnsRead(sel, sc, sideOf(s == left), sq), name, sel.pos.line)
		if vRight {
			return st, v, win, nil
		}
		return v, st, win, nil
	}
	return left, right, query.Window{}, first
}

// intervalSides checks that s (called sq) and v (vq, on side vSide, named
// at vAt) are an interval join's stream and view of TUMBLE windows, and
// that ON and WHERE bound s's time within v's windows.
func (c *compiler) intervalSides(sel *selectStmt, sc *scope, s, v *relation, sq, vq string, vSide side, vAt pos) error {
	switch {
	case v.size != v.slide:
		return errAt(vAt, "%s is a view of HOP windows (size %d, slide %d): an interval join reads a view of TUMBLE windows, whose every row's window is one join window (%s)", vq, v.size, v.slide, intervalShape)
	case s.unitNs == 0:
		return errAt(vAt, "%s's times are row positions (it is windowed by ROWS): an interval join bounds an event time", sq)
	case s.timeName == "":
		return errAt(vAt, "%s has no visible event time for an interval join to bound", sq)
	case s.unitNs != v.unitNs:
		return errAt(vAt, "%s's time is in %s, %s's in %s: an interval join compares them in one unit", sq, unitName(s.unitNs), vq, unitName(v.unitNs))
	}
	w := v.size
	// the bounds that keep s's time within v's windows, for the messages
	shape := fmt.Sprintf("%s.%s BETWEEN %s.%s AND %s.%s + %s", sq, s.timeName, vq, v.timeName, vq, v.timeName, unitsText(w, s.unitNs))
	if len(v.ends) > 0 {
		shape = fmt.Sprintf("%s.%s BETWEEN %s.%s - %s AND %s.%s", sq, s.timeName, vq, v.ends[0], unitsText(w, s.unitNs), vq, v.ends[0])
	}
	lo, hi := timeBounds(sel, sc, s, v, vSide)
	switch {
	case !lo.ok || !hi.ok:
		at, what := sel.onPos, "below and above"
		if sel.where != nil {
			at = sel.where.pos
		}
		if lo.ok {
			what = "above"
		} else if hi.ok {
			what = "below"
		}
		return errAt(at, "a join of %s with %s, a view of TUMBLE windows of %s, is an interval join where ON or WHERE bound %s.%s %s by the window's start or end (%s); %s", sq, vq, unitsText(w, s.unitNs), sq, s.timeName, what, shape, intervalShape)
	case lo.v < 0:
		return errAt(lo.at, "this bound lets %s.%s reach %s before the start of %s's window: an interval join keeps it within the window's start and end (%s)", sq, s.timeName, unitsText(-lo.v, s.unitNs), vq, shape)
	case hi.v > w:
		return errAt(hi.at, "this bound lets %s.%s reach %s past the end of %s's window: an interval join keeps it within the window's start and end (%s)", sq, s.timeName, unitsText(hi.v-w, s.unitNs), vq, shape)
	}
	return nil
}

// unitsText writes n units of unitNs ns as an interval where they are
// milliseconds (the unit of intervals in expressions), else as a number.
func unitsText(n, unitNs int64) string {
	if unitNs != 1e6 {
		return fmt.Sprint(n)
	}
	for _, u := range []struct {
		ms   int64
		name string
	}{{86_400_000, "DAY"}, {3_600_000, "HOUR"}, {60_000, "MINUTE"}, {1000, "SECOND"}} {
		if n != 0 && n%u.ms == 0 {
			return fmt.Sprintf("INTERVAL '%d' %s", n/u.ms, u.name)
		}
	}
	return fmt.Sprintf("INTERVAL '%d' MILLISECOND", n)
}

// timeBound is a bound of s's time, relative to v's window start, and the
// term that sets it.
type timeBound struct {
	v  int64
	at pos
	ok bool
}

// timeBounds reads, from the terms that ON and WHERE AND at their top,
// the tightest bounds [lo, hi] (inclusive, in s's time unit) of s's time
// relative to the window start of v's row: terms s.time op v.col + k
// (either way round, BETWEEN too), where v.col is v's window start or end
// as it is and k sums integer and interval constants (milliseconds, as
// expressions compute them).
func timeBounds(sel *selectStmt, sc *scope, s, v *relation, vSide side) (lo, hi timeBound) {
	sTime := func(x scol) bool { return x.side != vSide && isTime(s, x) }
	vOff := func(x scol) (int64, bool) {
		switch {
		case x.side != vSide:
		case isTime(v, x):
			return 0, true
		case slices.Contains(v.ends, x.col.name):
			return v.size, true
		}
		return 0, false
	}
	apply := func(op string, x int64, at pos) {
		lower := func(x int64) {
			if !lo.ok || x > lo.v {
				lo = timeBound{x, at, true}
			}
		}
		upper := func(x int64) {
			if !hi.ok || x < hi.v {
				hi = timeBound{x, at, true}
			}
		}
		switch op {
		case ">=":
			lower(x)
		case ">":
			lower(x + 1)
		case "<=":
			upper(x)
		case "<":
			upper(x - 1)
		case "=":
			lower(x)
			upper(x)
		}
	}
	flip := map[string]string{"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "="}
	cmp := func(a *node, op string, b *node, at pos) {
		sa, ka, oka := linearTime(sc, a, s.unitNs)
		sb, kb, okb := linearTime(sc, b, s.unitNs)
		if !oka || !okb {
			return
		}
		if off, ok := vOff(sb); ok && sTime(sa) {
			apply(op, off+kb-ka, at)
		} else if off, ok := vOff(sa); ok && sTime(sb) {
			apply(flip[op], off+ka-kb, at)
		}
	}
	var term func(n *node)
	term = func(n *node) {
		switch {
		case n == nil:
		case n.kind == eBinary && n.op == "and":
			term(n.l)
			term(n.r)
		case n.kind == eBetween && !n.not:
			cmp(n.l, ">=", n.args[0], n.pos)
			cmp(n.l, "<=", n.args[1], n.pos)
		case n.kind == eBinary && flip[n.op] != "":
			cmp(n.l, n.op, n.r, n.pos)
		}
	}
	term(sel.on)
	term(sel.where)
	return lo, hi
}

// linearTime reads n as a column plus a constant: col, col + k, col - k,
// k + col, nested; k an integer or an interval (in unitNs, the time's
// unit, as expressions compute it: intervalArith).
func linearTime(sc *scope, n *node, unitNs int64) (scol, int64, bool) {
	switch n.kind {
	case eCol:
		s, err := sc.resolve(n)
		return s, 0, err == nil
	case eBinary:
		if k, ok := constantUnits(n.r, unitNs); ok && (n.op == "+" || n.op == "-") {
			s, k0, ok := linearTime(sc, n.l, unitNs)
			if n.op == "-" {
				k = -k
			}
			return s, k0 + k, ok
		}
		if k, ok := constantUnits(n.l, unitNs); ok && n.op == "+" {
			s, k0, ok := linearTime(sc, n.r, unitNs)
			return s, k0 + k, ok
		}
	}
	return scol{}, 0, false
}

// constantUnits is the value of an integer or interval constant, as
// expressions compute it beside a time in unitNs (an interval: in that
// unit).
func constantUnits(n *node, unitNs int64) (int64, bool) {
	switch n.kind {
	case eInt:
		return n.i, true
	case eInterval:
		k, err := toUnits(n.iv, unitNs, "the interval")
		if err != nil {
			return 0, false
		}
		if n.i < 0 {
			k = -k
		}
		return k, true
	}
	return 0, false
}

// boundsTwice is a part of query of that reads s and outputs its tuples
// after a time (prepended: s's columns keep their values, its own time
// too): a tuple's time t, and a tuple whose t is a multiple of w a second
// time, after t - 1 (first, as it is earlier). Where reads is not nil, of
// s's columns only those it is true for follow the time.
func (c *compiler) boundsTwice(s *relation, w int64, reads func(col string) bool, of string, line int) *relation {
	taken := func(n string) bool { _, err := s.schema.Lookup(n); return err == nil }
	tname, t := procSlotName("$time", taken), s.schema.Attrs[0].Name
	name := fmt.Sprintf("time := %s, and %s - 1 where a multiple of %d, then ", t, t, w)
	if reads != nil {
		out, cols, from, names := timedColumns(s, tname, s.schema.Attrs[0].Logical, reads)
		q := c.udfPart(s, out, name+names, timeTwiceAndColumns(w, newColumnCopy(from, out)), of, line)
		return &relation{name: q.Name, schema: out, view: q, unitNs: s.unitNs, line: s.line, cols: cols}
	}
	out, _ := prependTime(s.schema, tname, s.schema.Attrs[0].Logical)
	q := c.udfPart(s, out, name+"the input tuple", timeTwiceOnBounds(w), of, line)
	return &relation{name: q.Name, schema: out, view: q, unitNs: s.unitNs, line: s.line, cols: slices.Clone(s.cols)}
}

// sideOf is the side of a join's left input (left) or its right.
func sideOf(left bool) side {
	if left {
		return sideLeft
	}
	return sideRight
}

// sideColumnsRead is whether the join sel reads the column of the side sd
// of scope sc (called sq) by that name: in its select list, ON, WHERE,
// GROUP BY, HAVING or aggregates' FILTERs. It is nil where the join may
// read them all: a * over that side, or a name sc does not resolve (the
// error that says so lists every column).
func sideColumnsRead(sel *selectStmt, sc *scope, sd side, sq string) func(col string) bool {
	if slices.ContainsFunc(sel.items, func(it selectItem) bool { return it.star && (it.qual == "" || it.qual == sq) }) {
		return nil
	}
	read, defined := map[string]bool{}, selectAliases(sel)
	ok := true
	selectColumns(sel, func(x *node) {
		f, err := sc.resolve(x)
		switch {
		case err == nil:
			if f.side == sd {
				read[f.col.name] = true
			}
		case x.qual == "" && (defined[x.name] || isPseudo(x) != ""):
		default:
			ok = false
		}
	})
	if !ok {
		return nil
	}
	return func(col string) bool { return read[col] }
}

// timeTwiceAndColumns is timeTwiceOnBounds with cc's attributes of each
// tuple after the time, not the tuple whole.
func timeTwiceAndColumns(w int64, cc *columnCopy) func(in []byte, tupleSize int, out []byte) []byte {
	le := binary.LittleEndian
	return func(in []byte, ts int, dst []byte) []byte {
		n := len(in) / ts
		dst, o := cc.grow(dst, 2*n)
		for i := range n {
			t := in[i*ts : (i+1)*ts]
			at := int64(le.Uint64(t))
			if at%w == 0 && at != math.MinInt64 {
				cc.put(dst[o:o+cc.size], uint64(at-1), t)
				o += cc.size
			}
			cc.put(dst[o:o+cc.size], uint64(at), t)
			o += cc.size
		}
		return dst[:o]
	}
}

// timeTwiceOnBounds is a UDF's function that outputs each input tuple
// after its time t (the int64 at offset 0), and a tuple whose t is a
// multiple of w also after t - 1, before it.
func timeTwiceOnBounds(w int64) func(in []byte, tupleSize int, out []byte) []byte {
	le := binary.LittleEndian
	return func(in []byte, ts int, out []byte) []byte {
		n := len(in) / ts
		out = slices.Grow(out, n*(ts+8))
		for i := range n {
			t := in[i*ts : (i+1)*ts]
			at := int64(le.Uint64(t))
			if at%w == 0 && at != math.MinInt64 {
				out = le.AppendUint64(out, uint64(at-1))
				out = append(out, t...)
			}
			out = le.AppendUint64(out, uint64(at))
			out = append(out, t...)
		}
		return out
	}
}
