// Package reference is the naive reference evaluator of saber-hx: the oracle
// that tests and `saber-hx bench --validate` compare the engine against. It
// evaluates a query.Query literally, one tuple at a time, in input order,
// with no panes, no tasks and no parallelism. It is written to be obviously
// correct, not fast. It imports only package query (never package window): it
// finds the windows of a tuple by brute force, so that it checks the
// engine's pane arithmetic instead of sharing it.
//
// # Expressions
//
// A Column reads an attribute of the tuple, little-endian: int32 (sign
// extended) and int64 as integers, float32 (converted exactly to float64)
// and float64 as floats. A Column naming the static join's As is the joined
// value (bytes; only valid as a group key). IntConst and FloatConst are
// constants. Arith computes in float64 when either operand is a float
// (converting the integer one), else in int64 with Go's wrapping arithmetic;
// integer division truncates toward zero, x/0 == 0, and
// math.MinInt64 / -1 == math.MinInt64 (Go's wrap-around); float division is
// IEEE 754 (x/0.0 is ±Inf or NaN). Compare compares as float64 when either
// side is a float (NaN compares false except with !=), else as int64. AndExpr
// holds when every term holds; OrExpr when any term holds.
//
// # Static join
//
// With q.Join, the tuple's bytes column q.Join.Column is looked up among
// q.Join.Table.Keys; the joined value is the Values entry of the matching
// key. A tuple whose key is not in the table is "unmatched".
//
// # Stateless queries
//
// A query without aggregates (q.Stateless()) outputs, for every tuple, in
// input order: nothing when WHERE is false (Filtered); else (Counted) the
// input tuple's bytes unchanged when q.Project is empty, or else the event
// time (attribute 0, int64) as 8 bytes little-endian followed, for each
// projection, by 8 bytes little-endian: the int64 value, or
// math.Float64bits of a float value. Windows, lateness and joins do not
// apply; Result.Rows is nil.
//
// # Aggregations
//
// Every tuple has a position: its event time (attribute 0) for a range
// window, its 0-based index in the input (counting every tuple, before WHERE)
// for a row window. The watermark W is the maximum position of all PREVIOUS
// tuples; there is none before the first tuple. Window w covers positions
// [w*Slide, w*Slide+Size). D is q.Window.Delay (0 unless set), in the same
// units as positions. For each tuple, in order:
//
//   - WHERE false: Filtered;
//   - else, with a join, its key not in the table: Unmatched;
//   - else the windows containing its position are found by brute force
//     (every w with w*Slide <= position < w*Slide+Size; they are consecutive,
//     first..last). If the FIRST of them starts below math.MinInt64, the
//     tuple is refused (see Errors). If a watermark exists and W - D >= the
//     end of the FIRST of them (computed in unbounded integers), the tuple
//     is Late and counted in no window (for a sliding window, a tuple that
//     is late for its first window only is counted in none); an end past
//     math.MaxInt64 is never reached;
//   - else Counted: added to every window first..last under its group key.
//
// Then W = max(W, position): every tuple advances the watermark, filtered,
// unmatched and late ones too. A tuple out of order but whose first window
// has not closed is counted.
//
// The group key is the concatenation over q.GroupBy of: for the join's As,
// the joined value's bytes; for a bytes column, its raw bytes; for an int32
// column, query.AppendIntKey(v, 4); for any other integer expression (an
// int64 column, a constant, arithmetic), query.AppendIntKey(v, 8). Without
// GROUP BY every tuple has the empty key "".
//
// Aggregates per (window, key), over the tuples counted there: COUNT is the
// integer count; SUM the int64 wrapping sum of an integer argument or the
// float64 sum (in input order) of a float argument; AVG the float64
// (float64(integer sum) or float sum) / float64(count); MIN and MAX are of
// the argument's type (floats compared with <, >: the first value starts
// the running minimum/maximum, and a later value replaces it only when
// strictly less/greater).
//
// HAVING is evaluated per (window, key) after all input. Its columns are
// aggregates (by Aggregate.As; looked up first) — their values — and GROUP BY
// columns, whose value is read from the first tuple counted in that (window,
// key). Groups failing HAVING are dropped.
//
// The output has one Row per (window, key) that counted at least one tuple
// and passes HAVING, ordered by window start, then key bytes. Windows never
// appear without rows. Row.Values holds the aggregates in the order of
// q.Aggregates. Every tuple is classified exactly once:
// Counts.Tuples = Filtered + Unmatched + Late + Counted.
//
// # Errors
//
// Evaluate refuses a query that fails q.Validate(), data that is not a whole
// number of tuples, and a tuple that passes WHERE and the join (late or not)
// whose first window starts below math.MinInt64 (its start is not an
// int64): the error names the tuple's index, its byte offset in data and
// its position. Window bounds are computed without overflow: a window whose
// end lies past math.MaxInt64 is closed by no watermark (its tuples are
// never late; it is output at the end like every window), and its Row.End
// is math.MaxInt64.
package reference

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"

	"github.com/saber-hx/saber-hx/query"
)

// Value is one aggregate or projected value: an integer (Float false, in I)
// or a float (Float true, in F).
type Value struct {
	Float bool
	I     int64
	F     float64
}

// Int returns an integer Value.
func Int(v int64) Value { return Value{I: v} }

// Float returns a float Value.
func Float(v float64) Value { return Value{Float: true, F: v} }

// String formats v: an integer in decimal, a float with the precision needed
// to round-trip it, each marked with its kind.
func (v Value) String() string {
	if v.Float {
		return fmt.Sprintf("%v (float)", v.F)
	}
	return fmt.Sprintf("%d (int)", v.I)
}

// asFloat is v as a float64, converting an integer.
func (v Value) asFloat() float64 {
	if v.Float {
		return v.F
	}
	return float64(v.I)
}

// Row is one output row of an aggregation: one group of one window.
type Row struct {
	Start, End int64
	Key        string
	Values     []Value // in the order of q.Aggregates
}

// Counts classifies every input tuple exactly once:
// Tuples = Filtered + Unmatched + Late + Counted.
type Counts struct {
	Tuples    uint64 // all tuples read
	Filtered  uint64 // WHERE false
	Unmatched uint64 // join key not in the static table
	Late      uint64 // the first window containing it had closed
	Counted   uint64 // aggregated into windows (or output, when stateless)
}

// Result is the output of a query.
type Result struct {
	Rows   []Row  // aggregations: by Start, then Key bytes
	Tuples []byte // stateless queries: output tuples, concatenated in input order
	Counts Counts
}

// OutputTupleSize is the size of a stateless query's output tuple: the
// input's when q.Project is empty, else 8 + 8*len(q.Project).
func OutputTupleSize(q *query.Query) int {
	if len(q.Project) == 0 {
		return q.Schema.TupleSize
	}
	return 8 + 8*len(q.Project)
}

// Evaluate runs q over data, a whole number of q.Schema.TupleSize-byte
// tuples, as the package documentation describes.
func Evaluate(q *query.Query, data []byte) (*Result, error) {
	if q == nil {
		return nil, errors.New("reference: nil query")
	}
	if err := q.Validate(); err != nil {
		return nil, fmt.Errorf("reference: %w", err)
	}
	size := q.Schema.TupleSize
	if rem := len(data) % size; rem != 0 {
		return nil, fmt.Errorf("reference: query %q: %d bytes of input is not a whole number of %d-byte tuples (%d trailing bytes)", q.Name, len(data), size, rem)
	}
	if q.Stateless() {
		return evalStateless(q, data)
	}
	return evalAggregation(q, data)
}

func evalStateless(q *query.Query, data []byte) (*Result, error) {
	res := &Result{}
	size := q.Schema.TupleSize
	for off := 0; off < len(data); off += size {
		t := data[off : off+size]
		res.Counts.Tuples++
		col := tupleScope(q.Schema, t)
		if q.Where != nil {
			ok, err := pred(q.Where, col)
			if err != nil {
				return nil, fmt.Errorf("reference: query %q: tuple %d: where: %w", q.Name, off/size, err)
			}
			if !ok {
				res.Counts.Filtered++
				continue
			}
		}
		res.Counts.Counted++
		if len(q.Project) == 0 {
			res.Tuples = append(res.Tuples, t...)
			continue
		}
		res.Tuples = binary.LittleEndian.AppendUint64(res.Tuples, binary.LittleEndian.Uint64(t[0:8]))
		for i, p := range q.Project {
			v, err := num(p.Expr, col)
			if err != nil {
				return nil, fmt.Errorf("reference: query %q: tuple %d: projection %d: %w", q.Name, off/size, i, err)
			}
			if v.Float {
				res.Tuples = binary.LittleEndian.AppendUint64(res.Tuples, math.Float64bits(v.F))
			} else {
				res.Tuples = binary.LittleEndian.AppendUint64(res.Tuples, uint64(v.I))
			}
		}
	}
	return res, nil
}

// group is the state of one (window, key).
type group struct {
	first []byte  // the first tuple counted here: GROUP BY columns for HAVING
	count int64   // tuples counted
	acc   []Value // per aggregate: running SUM (also for AVG), MIN or MAX
}

// bound is one window of a position: its index and bounds. An end past
// math.MaxInt64 is reported as math.MaxInt64, with past set: no watermark
// reaches it.
type bound struct {
	w, start, end int64
	past          bool
}

var (
	bigOne = big.NewInt(1)
	bigMin = big.NewInt(math.MinInt64)
	bigMax = big.NewInt(math.MaxInt64)
)

// windowsOf returns, by brute force, every window w with
// start(w) <= pos < end(w), in descending order of w, with their bounds.
// The bounds are computed in unbounded integers (math/big), so that no
// window near either end of int64 wraps around. It refuses a position one
// of whose windows starts below math.MinInt64 (what names the position in
// the error: "event time" or "position").
//
// The search starts at hi = trunc(pos/Slide) + 1, which is above the last
// window containing pos (hi*Slide > pos whether pos/Slide truncated up or
// down), and walks down while end(w) > pos; the membership test itself is the
// literal definition.
func windowsOf(pos int64, win query.Window, what string) ([]bound, error) {
	slide, size, p := big.NewInt(win.Slide), big.NewInt(win.Size), big.NewInt(pos)
	w := new(big.Int).Add(big.NewInt(pos/win.Slide), bigOne)
	start, end := new(big.Int), new(big.Int)
	var ws []bound
	for ; ; w.Sub(w, bigOne) {
		start.Mul(w, slide)
		end.Add(start, size)
		if end.Cmp(p) <= 0 {
			break
		}
		if start.Cmp(p) <= 0 && p.Cmp(end) < 0 {
			if start.Cmp(bigMin) < 0 {
				return nil, fmt.Errorf("%s %d lies in a window starting below the int64 range (window [%s, %s))", what, pos, start, end)
			}
			b := bound{w: w.Int64(), start: start.Int64(), end: math.MaxInt64, past: end.Cmp(bigMax) > 0}
			if end.IsInt64() {
				b.end = end.Int64()
			}
			ws = append(ws, b)
		}
	}
	if len(ws) == 0 {
		return nil, fmt.Errorf("position %d is in no window (size %d, slide %d)", pos, win.Size, win.Slide)
	}
	return ws, nil
}

// late reports whether watermark wm, minus the window's delay, has reached
// the end of window b: wm - Delay >= end, in unbounded integers, so that
// neither the subtraction nor an end past math.MaxInt64 wraps.
func late(wm int64, b bound, win query.Window) bool {
	end := new(big.Int).Add(big.NewInt(b.start), big.NewInt(win.Size))
	seen := new(big.Int).Sub(big.NewInt(wm), big.NewInt(win.Delay))
	return seen.Cmp(end) >= 0
}

// positionName is what a window's positions are: event times or indexes.
func positionName(w query.Window) string {
	if w.Type == query.Rows {
		return "position"
	}
	return "event time"
}

// groupKey builds the group key of tuple t (joined: the join's value).
func groupKey(q *query.Query, t, joined []byte, col func(string) (Value, error)) (string, error) {
	var key []byte
	for i, g := range q.GroupBy {
		if c, ok := g.(query.Column); ok {
			if q.Join != nil && c.Name == q.Join.As {
				key = append(key, joined...)
				continue
			}
			a, err := q.Schema.Lookup(c.Name)
			if err != nil {
				return "", fmt.Errorf("group by %d: %w", i, err)
			}
			switch a.Type {
			case query.Bytes:
				key = append(key, t[a.Offset:a.Offset+a.Size]...)
				continue
			case query.Int32:
				v, err := readAttr(a, t)
				if err != nil {
					return "", err
				}
				key = query.AppendIntKey(key, v.I, 4)
				continue
			}
		}
		v, err := num(g, col)
		if err != nil {
			return "", fmt.Errorf("group by %d: %w", i, err)
		}
		if v.Float {
			return "", fmt.Errorf("group by %d: %s is a float", i, g)
		}
		key = query.AppendIntKey(key, v.I, 8)
	}
	return string(key), nil
}

func evalAggregation(q *query.Query, data []byte) (*Result, error) {
	res := &Result{}
	size := q.Schema.TupleSize
	scope := q.Scope()
	argFloat := make([]bool, len(q.Aggregates))
	for i, a := range q.Aggregates {
		if a.Func != query.Count {
			t, err := query.TypeOf(a.Arg, scope)
			if err != nil {
				return nil, fmt.Errorf("reference: query %q: aggregate %d: %w", q.Name, i, err)
			}
			argFloat[i] = t == query.FloatValue
		}
	}
	var table map[string][]byte
	var joinAttr query.Attribute
	if q.Join != nil {
		table = make(map[string][]byte, len(q.Join.Table.Keys))
		for i, k := range q.Join.Table.Keys {
			table[string(k)] = q.Join.Table.Values[i]
		}
		var err error
		if joinAttr, err = q.Schema.Lookup(q.Join.Column); err != nil {
			return nil, fmt.Errorf("reference: query %q: join: %w", q.Name, err)
		}
	}

	type wkey struct {
		w   int64
		key string
	}
	groups := map[wkey]*group{}
	bounds := map[int64][2]int64{} // window -> start, end

	var wm int64
	haveWM := false
	for off := 0; off < len(data); off += size {
		idx := off / size
		t := data[off : off+size]
		res.Counts.Tuples++
		var pos int64
		if q.Window.Type == query.Rows {
			pos = int64(idx)
		} else {
			pos = int64(binary.LittleEndian.Uint64(t[0:8]))
		}
		if err := func() error {
			col := tupleScope(q.Schema, t)
			if q.Where != nil {
				ok, err := pred(q.Where, col)
				if err != nil {
					return fmt.Errorf("where: %w", err)
				}
				if !ok {
					res.Counts.Filtered++
					return nil
				}
			}
			var joined []byte
			if q.Join != nil {
				v, ok := table[string(t[joinAttr.Offset:joinAttr.Offset+joinAttr.Size])]
				if !ok {
					res.Counts.Unmatched++
					return nil
				}
				joined = v
			}
			ws, err := windowsOf(pos, q.Window, positionName(q.Window))
			if err != nil {
				return err
			}
			first := ws[len(ws)-1] // ws is descending
			if haveWM && late(wm, first, q.Window) {
				res.Counts.Late++
				return nil
			}
			key, err := groupKey(q, t, joined, col)
			if err != nil {
				return err
			}
			args := make([]Value, len(q.Aggregates))
			for i, a := range q.Aggregates {
				if a.Func == query.Count {
					continue
				}
				if args[i], err = num(a.Arg, col); err != nil {
					return fmt.Errorf("aggregate %d: %w", i, err)
				}
				if args[i].Float != argFloat[i] {
					return fmt.Errorf("aggregate %d: %s evaluated to %v, not of its type", i, a.Arg, args[i])
				}
			}
			res.Counts.Counted++
			for _, b := range ws {
				bounds[b.w] = [2]int64{b.start, b.end}
				g := groups[wkey{b.w, key}]
				if g == nil {
					g = &group{first: t, acc: make([]Value, len(q.Aggregates))}
					groups[wkey{b.w, key}] = g
				}
				g.count++
				for i, a := range q.Aggregates {
					accumulate(&g.acc[i], a.Func, args[i], g.count == 1)
				}
			}
			return nil
		}(); err != nil {
			return nil, fmt.Errorf("reference: query %q: tuple %d (byte offset %d): %w", q.Name, idx, off, err)
		}
		if !haveWM || pos > wm {
			wm, haveWM = pos, true
		}
	}

	for wk, g := range groups {
		vals := make([]Value, len(q.Aggregates))
		for i, a := range q.Aggregates {
			vals[i] = final(a.Func, g.acc[i], g.count)
		}
		if q.Having != nil {
			ok, err := pred(q.Having, havingScope(q, vals, g.first))
			if err != nil {
				return nil, fmt.Errorf("reference: query %q: having: %w", q.Name, err)
			}
			if !ok {
				continue
			}
		}
		b := bounds[wk.w]
		res.Rows = append(res.Rows, Row{Start: b[0], End: b[1], Key: wk.key, Values: vals})
	}
	slices.SortFunc(res.Rows, func(a, b Row) int {
		if c := cmp.Compare(a.Start, b.Start); c != 0 {
			return c
		}
		return bytes.Compare([]byte(a.Key), []byte(b.Key))
	})
	return res, nil
}

// accumulate adds argument v to the running state acc of function f; first
// is true for the group's first tuple.
func accumulate(acc *Value, f query.AggFunc, v Value, first bool) {
	switch f {
	case query.Count:
		// the count is the group's count
	case query.Sum, query.Avg:
		if first {
			*acc = v
		} else if v.Float {
			acc.F += v.F
		} else {
			acc.I += v.I // wraps
		}
	case query.Min:
		if first || (v.Float && v.F < acc.F) || (!v.Float && v.I < acc.I) {
			*acc = v
		}
	case query.Max:
		if first || (v.Float && v.F > acc.F) || (!v.Float && v.I > acc.I) {
			*acc = v
		}
	}
}

// final is the value of function f with running state acc over count tuples.
func final(f query.AggFunc, acc Value, count int64) Value {
	switch f {
	case query.Count:
		return Int(count)
	case query.Avg:
		return Float(acc.asFloat() / float64(count))
	}
	return acc
}

// havingScope resolves HAVING's columns: aggregates by As first, then GROUP
// BY columns, read from the group's first tuple.
func havingScope(q *query.Query, vals []Value, first []byte) func(string) (Value, error) {
	return func(name string) (Value, error) {
		for i, a := range q.Aggregates {
			if a.As != "" && a.As == name {
				return vals[i], nil
			}
		}
		for _, g := range q.GroupBy {
			if c, ok := g.(query.Column); ok && c.Name == name {
				a, err := q.Schema.Lookup(name)
				if err != nil {
					return Value{}, err
				}
				return readAttr(a, first)
			}
		}
		return Value{}, fmt.Errorf("%q is neither an aggregate nor a GROUP BY column", name)
	}
}
