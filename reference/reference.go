// Package reference is the naive reference evaluator of saber-hx: the oracle
// that tests and `saber-hx bench --validate` compare the engine against. It
// evaluates a query.Query literally, one tuple at a time, in input order,
// with no panes, no tasks and no parallelism. It is written to be obviously
// correct, not fast. It imports only package query (never package window,
// strview or temporal): it finds the windows of a tuple by brute force, reads
// string views, formats dates and applies the scalar functions with code of
// its own and Go's standard library (and golang.org/x/text/cases for UPPER
// and LOWER), so that it checks the engine instead of sharing its code.
//
// # Values
//
// A Value is NULL or an integer, a float, a string, a timestamp
// (milliseconds since the epoch, UTC), a boolean or a bytes column's value
// (Kind). A Column reads an attribute of the tuple, little-endian: NULL
// where the attribute is Nullable and its bit is set; int32 (sign extended)
// and int64 as integers, or as a timestamp (Logical Time) or a boolean
// (Logical Boolean: 0 or 1, anything else is an error); float32 (converted
// exactly to float64) and float64 as floats; a bytes column as its bytes; a
// String as the string of its 16-byte view (see view.go; a malformed view is
// an error). A Column naming the static join's As is the joined value (bytes;
// only valid as a group key).
//
// # Expressions
//
// Constants are themselves; Null{T} is the NULL of type T. Arith is NULL
// where an operand is; it computes in float64 when either operand is a
// float (converting the other), else in int64 with Go's wrapping arithmetic;
// integer division truncates toward zero, x/0 == 0, and
// math.MinInt64 / -1 == math.MinInt64 (Go's wrap-around); float division is
// IEEE 754 (x/0.0 is ±Inf or NaN). A timestamp plus or minus an integer is a
// timestamp, a timestamp minus a timestamp an integer. Compare is NULL where
// a side is; strings compare byte-wise, numbers as float64 when either side
// is a float (NaN compares false except with !=), else as int64 (a timestamp
// as its milliseconds), booleans false before true.
//
// AND, OR and NOT follow Kleene's three-valued logic: AND is FALSE where a
// term is FALSE, else NULL where a term is NULL, else TRUE; OR is TRUE where
// a term is TRUE, else NULL where one is NULL, else FALSE; NOT NULL is NULL.
// IS [NOT] NULL is never NULL. X IN (list) is TRUE where X equals an item,
// else NULL where X or an item is NULL, else FALSE; NOT IN negates it. LIKE
// (like.go) is NULL where X is. CASE takes the THEN of its first branch
// whose condition is TRUE, else ELSE, else NULL. CAST (cast.go) and the
// scalar functions (funcs.go, datefmt.go) follow query.Funcs's rules.
// Where the IR mixes types implicitly (CASE's branches, COALESCE's
// arguments, an integer where a float is expected), a value takes its
// expression's static type (query.TypeOf): CASE WHEN c THEN 1 ELSE 2.5 END
// is the float 1 where c holds.
//
// WHERE, HAVING, CASE WHEN and FILTER keep a row only where their condition
// is TRUE: FALSE and NULL drop it.
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
// input order: nothing when WHERE is not TRUE (Filtered); else (Counted) a
// tuple of q.OutputSchema(): the input tuple unchanged when there is no
// projection and no UDF; the UDF's output tuples for the input tuple alone
// (q.UDF.Fn over a batch of one) with a UDF; else the event time (attribute
// 0) followed by each projection's value, of the projection's type:
// integers and timestamps as int64, floats as float64, booleans as int32 0
// or 1, strings as views, a bytes column as its bytes; a NULL as its bit,
// its slot zero. Result.Values holds every output tuple's values
// (attribute 0 included); Result.Tuples their bytes, except for a
// projection with a String attribute (the reference has no memory outside
// the Go heap for the views to point to): there Tuples is nil. Windows,
// lateness and joins do not apply; Result.Rows is nil.
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
//   - WHERE not TRUE: Filtered;
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
// The group key (Row.Key) is the concatenation over q.GroupBy of each key's
// canonical form (query/key.go): for the join's As, the joined value's
// bytes; for a bytes column, its raw bytes (after a byte 1, or as the byte
// 0 and as many zeros for NULL, where q.KeyNullable); for an integer or a
// timestamp, query.AppendIntKey(v, 4) of an int32 column and
// query.AppendIntKey(v, 8) of any other integer expression, or
// query.AppendNullableIntKey where q.KeyNullable; for a boolean,
// query.AppendBoolKey; for a string, query.AppendStringKey. Without GROUP BY
// every tuple has the empty key "". NULL keys thus sort first.
//
// Aggregates per (window, key), over the tuples counted there for which the
// aggregate's FILTER (if any) is TRUE and, but for COUNT(*), whose argument
// is not NULL: COUNT is their integer count (COUNT(*) counts every tuple
// that passes the FILTER); SUM the int64 wrapping sum of an integer argument
// or the float64 sum (in input order) of a float argument; AVG the float64
// (float64(integer sum) or float sum) / float64(count); MIN and MAX are of
// the argument's type (an integer, a float or a timestamp; the first value
// starts the running minimum/maximum, and a later value replaces it only
// when strictly less/greater, but that a float NaN is skipped where there
// is a number, before or after it, and MIN prefers -0 to +0, MAX +0 to -0:
// floatBefore). SUM, AVG, MIN and MAX over no value are NULL.
//
// HAVING is evaluated per (window, key) after all input. Its columns are
// aggregates (by Aggregate.As; looked up first) — their values — and GROUP BY
// columns, whose value is read from the first tuple counted in that (window,
// key). Groups whose HAVING is not TRUE are dropped.
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
// number of tuples, a malformed value (a string view, a boolean other than 0
// or 1), a REGEXP_EXTRACT or DATE_FORMAT pattern or LIKE escape that does
// not make sense, and a tuple that passes WHERE and the join (late or not)
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

// Row is one output row of an aggregation: one group of one window.
type Row struct {
	Start, End int64
	Key        string  // the group key's canonical form (see the package doc)
	Values     []Value // in the order of q.Aggregates
}

// Counts classifies every input tuple exactly once:
// Tuples = Filtered + Unmatched + Late + Counted.
type Counts struct {
	Tuples    uint64 // all tuples read
	Filtered  uint64 // WHERE not TRUE
	Unmatched uint64 // join key not in the static table
	Late      uint64 // the first window containing it had closed
	Counted   uint64 // aggregated into windows (or output, when stateless)
}

// Result is the output of a query.
type Result struct {
	Rows []Row // aggregations: by Start, then Key bytes
	// Tuples are a stateless query's or a join's output tuples,
	// concatenated in output order (nil for a projection with a String
	// attribute: see the package doc).
	Tuples []byte
	// Values are a stateless query's or a join's output tuples' values,
	// attribute 0 included (DecodeTuples reads an engine's output the
	// same way).
	Values [][]Value
	Counts Counts
}

// OutputTupleSize is the size of a stateless query's output tuple: its
// output schema's (query.OutputSchema), 0 for a query that fails
// validation.
func OutputTupleSize(q *query.Query) int {
	s, err := q.OutputSchema()
	if err != nil {
		return 0
	}
	return s.TupleSize
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

// queryEnv resolves the attributes of tuple t of q's input, in scope,
// q.Scope() (where the static join's As is a bytes value); a lookup join's
// t is the tuple with its value after it (q.JoinedSchema()).
func queryEnv(q *query.Query, scope query.Scope, t []byte) env {
	en := tupleEnv(q.JoinedSchema(), t)
	en.scope = scope
	return en
}

// joinTable is a static join's table by key: a key as its bytes (a
// string key's string).
func joinTable(j *query.StaticJoin) map[string][]byte {
	table := make(map[string][]byte, len(j.Table.Keys))
	for i, k := range j.Table.Keys {
		table[string(k)] = j.Table.Values[i]
	}
	return table
}

// joinKeyOf is tuple t's join key as the table holds keys: a string
// column's string, another column's bytes; ok false for NULL, which
// matches nothing.
func joinKeyOf(a query.Attribute, t []byte) (key string, ok bool, err error) {
	if a.IsNull(t) {
		return "", false, nil
	}
	if a.Type == query.String {
		v, err := readAttr(a, t)
		if err != nil {
			return "", false, err
		}
		return v.Str, true, nil
	}
	return string(t[a.Offset : a.Offset+a.Size]), true, nil
}

// computedKeyOf is a computed join key's value over tuple t as the table
// holds keys: an integer's 8 little-endian bytes, a string's bytes; ok
// false for NULL.
func computedKeyOf(e query.Expr, s *query.Schema, t []byte) (key string, ok bool, err error) {
	v, err := Eval(e, s, t)
	if err != nil || v.Null {
		return "", false, err
	}
	switch v.kind() {
	case IntKind:
		return string(binary.LittleEndian.AppendUint64(nil, uint64(v.I))), true, nil
	case StringKind:
		return v.Str, true, nil
	}
	return "", false, fmt.Errorf("join key %s is %s", e, v.kind())
}

func evalStateless(q *query.Query, data []byte) (*Result, error) {
	out, err := q.OutputSchema()
	if err != nil {
		return nil, fmt.Errorf("reference: %w", err)
	}
	// A projection with a String attribute has no bytes here: its views
	// would have to point outside the Go heap.
	encode := true
	for _, a := range out.Attrs {
		if a.Type == query.String {
			encode = false
		}
	}
	// The projections' types, which their values take (conform): the
	// same for every tuple.
	scope := q.Scope()
	types := make([]query.ValueType, len(q.Project))
	for i, p := range q.Project {
		if types[i], err = query.TypeOf(p.Expr, scope); err != nil {
			return nil, fmt.Errorf("reference: query %q: projection %d: %w", q.Name, i, err)
		}
	}
	res := &Result{}
	size := q.Schema.TupleSize
	var table map[string][]byte
	var joinAttr query.Attribute
	if q.Join != nil {
		table = joinTable(q.Join)
		if q.Join.Key == nil {
			if joinAttr, err = q.Schema.Lookup(q.Join.Column); err != nil {
				return nil, fmt.Errorf("reference: query %q: join: %w", q.Name, err)
			}
		}
	}
	in := q.JoinedSchema()
	for off := 0; off < len(data); off += size {
		t := data[off : off+size]
		res.Counts.Tuples++
		if err := func() error {
			if q.Join != nil {
				// A lookup join: the tuple with its value after it, what
				// WHERE and the projection read; the join comes first.
				var key string
				var ok bool
				var err error
				if q.Join.Key != nil {
					key, ok, err = computedKeyOf(q.Join.Key, q.Schema, t)
				} else {
					key, ok, err = joinKeyOf(joinAttr, t)
				}
				if err != nil {
					return err
				}
				v, found := table[key]
				if !ok || !found {
					res.Counts.Unmatched++
					return nil
				}
				t = append(append([]byte{}, t...), v...)
			}
			en := queryEnv(q, scope, t)
			if q.Where != nil {
				ok, err := en.holds(q.Where)
				if err != nil {
					return fmt.Errorf("where: %w", err)
				}
				if !ok {
					res.Counts.Filtered++
					return nil
				}
			}
			res.Counts.Counted++
			switch {
			case q.UDF != nil:
				// A batch of one tuple: a UDF keeps no state between
				// calls, so any cut of the input into batches is
				// the same function.
				b := q.UDF.Fn(t, size, nil)
				vals, err := DecodeTuples(out, b)
				if err != nil {
					return fmt.Errorf("udf %q: %w", q.UDF.Name, err)
				}
				res.Tuples = appendDoubling(res.Tuples, b...)
				res.Values = appendDoubling(res.Values, vals...)
				return nil
			case len(q.Project) == 0:
				vals, err := decodeTuple(in, t)
				if err != nil {
					return err
				}
				res.Tuples = append(res.Tuples, t...)
				res.Values = appendDoubling(res.Values, vals)
				return nil
			}
			vals := make([]Value, 1+len(q.Project))
			var err error
			if vals[0], err = readAttr(q.Schema.Attrs[0], t); err != nil {
				return err
			}
			for i, p := range q.Project {
				v, err := en.eval(p.Expr)
				if err != nil {
					return fmt.Errorf("projection %d: %w", i, err)
				}
				vals[1+i] = conform(v, types[i])
			}
			if encode {
				b, err := encodeTuple(out, vals)
				if err != nil {
					return err
				}
				res.Tuples = appendDoubling(res.Tuples, b...)
			}
			res.Values = appendDoubling(res.Values, vals)
			return nil
		}(); err != nil {
			return nil, fmt.Errorf("reference: query %q: tuple %d (byte offset %d): %w", q.Name, off/size, off, err)
		}
	}
	return res, nil
}

// group is the state of one (window, key).
type group struct {
	first []byte     // the first tuple counted here: GROUP BY columns for HAVING
	aggs  []aggState // per aggregate
}

// aggState is one aggregate's running state in a group: n values
// aggregated (tuples, for COUNT(*)), and the running SUM (also for AVG),
// MIN or MAX of them.
type aggState struct {
	n   int64
	acc Value
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
	if small(pos) && small(win.Size) && small(win.Slide) && win.Size > 0 && win.Slide > 0 {
		if ws := windowsOfSmall(pos, win); len(ws) > 0 {
			return ws, nil
		}
	}
	return windowsOfBig(pos, win, what)
}

// small bounds the values windowsOfSmall and late compute with in int64:
// sums and products of two of them, and a slide more, stay far inside it.
func small(v int64) bool { return v > -1<<40 && v < 1<<40 }

// windowsOfSmall is windowsOfBig's search in int64, for positions and
// windows small enough that no start or end it computes can wrap (the
// reference's time goes mostly here: every tuple's windows).
func windowsOfSmall(pos int64, win query.Window) []bound {
	var ws []bound
	for w := pos/win.Slide + 1; ; w-- {
		start := w * win.Slide
		end := start + win.Size
		if end <= pos {
			break
		}
		if start <= pos && pos < end {
			ws = append(ws, bound{w: w, start: start, end: end})
		}
	}
	return ws
}

// windowsOfBig is windowsOf in unbounded integers.
func windowsOfBig(pos int64, win query.Window, what string) ([]bound, error) {
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
	if small(wm) && small(b.start) && small(win.Size) && small(win.Delay) {
		return wm-win.Delay >= b.start+win.Size
	}
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

// keyPart is how one GROUP BY expression is encoded: its type, whether
// the query gives it a NULL byte (q.KeyNullable), and an integer's width.
// The same for every tuple, so computed once per query.
type keyPart struct {
	typ      query.ValueType
	nullable bool
	width    int  // integers: 4 for an int32 column, else 8
	joined   bool // the static join's As: the joined value's bytes
	size     int  // a bytes column's size
}

// keyParts describes q's GROUP BY expressions.
func keyParts(q *query.Query) ([]keyPart, error) {
	scope := q.Scope()
	parts := make([]keyPart, len(q.GroupBy))
	for i, g := range q.GroupBy {
		c, isCol := g.(query.Column)
		if isCol && q.Join != nil && c.Name == q.Join.As {
			parts[i] = keyPart{joined: true}
			continue
		}
		typ, err := query.TypeOf(g, scope)
		if err != nil {
			return nil, fmt.Errorf("group by %d: %w", i, err)
		}
		p := keyPart{typ: typ, nullable: q.KeyNullable(g), width: 8}
		if isCol {
			if a, err := q.Schema.Lookup(c.Name); err == nil {
				if a.Type == query.Int32 {
					p.width = 4
				}
				p.size = a.Size
			}
		}
		parts[i] = p
	}
	return parts, nil
}

// groupKey builds the group key of tuple t (joined: the join's value): the
// canonical form of each GROUP BY value, in order (see the package doc).
func groupKey(q *query.Query, parts []keyPart, joined []byte, en env) (string, error) {
	var key []byte
	for i, g := range q.GroupBy {
		p := parts[i]
		if p.joined {
			key = append(key, joined...)
			continue
		}
		v, err := en.eval(g)
		if err != nil {
			return "", fmt.Errorf("group by %d: %w", i, err)
		}
		v = conform(v, p.typ)
		if v.Null && !p.nullable && p.typ != query.StringValue && p.typ != query.BoolValue {
			return "", fmt.Errorf("group by %d: %s is NULL, but the query gives its key no NULL byte", i, g)
		}
		switch p.typ {
		case query.StringValue:
			key = query.AppendStringKey(key, []byte(v.Str), v.Null)
		case query.BoolValue:
			key = query.AppendBoolKey(key, v.I != 0, v.Null)
		case query.BytesValue:
			switch {
			case v.Null:
				key = append(key, make([]byte, 1+p.size)...)
			case p.nullable:
				key = append(append(key, 1), v.Str...)
			default:
				key = append(key, v.Str...)
			}
		case query.IntValue, query.TimeValue:
			if p.nullable {
				key = query.AppendNullableIntKey(key, v.I, p.width, v.Null)
			} else {
				key = query.AppendIntKey(key, v.I, p.width)
			}
		default:
			return "", fmt.Errorf("group by %d: %s is %s", i, g, p.typ)
		}
	}
	return string(key), nil
}

func evalAggregation(q *query.Query, data []byte) (*Result, error) {
	if q.Window.Type == query.Session {
		return evalSessions(q, data)
	}
	res := &Result{}
	size := q.Schema.TupleSize
	scope := q.Scope()
	argType := make([]query.ValueType, len(q.Aggregates))
	for i, a := range q.Aggregates {
		if a.Arg != nil {
			t, err := query.TypeOf(a.Arg, scope)
			if err != nil {
				return nil, fmt.Errorf("reference: query %q: aggregate %d: %w", q.Name, i, err)
			}
			argType[i] = t
		}
	}
	parts, err := keyParts(q)
	if err != nil {
		return nil, fmt.Errorf("reference: query %q: %w", q.Name, err)
	}
	var table map[string][]byte
	var joinAttr query.Attribute
	if q.Join != nil {
		table = joinTable(q.Join)
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
			en := queryEnv(q, scope, t)
			if q.Where != nil {
				ok, err := en.holds(q.Where)
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
				key, ok, err := joinKeyOf(joinAttr, t)
				if err != nil {
					return err
				}
				v, found := table[key]
				if !ok || !found {
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
			key, err := groupKey(q, parts, joined, en)
			if err != nil {
				return err
			}
			// Per aggregate: whether this tuple is aggregated (its
			// FILTER is TRUE and, but for COUNT(*), its argument is
			// not NULL), and the argument, of its type.
			use := make([]bool, len(q.Aggregates))
			args := make([]Value, len(q.Aggregates))
			for i, a := range q.Aggregates {
				use[i] = true
				if a.Filter != nil {
					if use[i], err = en.holds(a.Filter); err != nil {
						return fmt.Errorf("aggregate %d: filter: %w", i, err)
					}
				}
				if a.Arg == nil {
					continue
				}
				v, err := en.eval(a.Arg)
				if err != nil {
					return fmt.Errorf("aggregate %d: %w", i, err)
				}
				args[i] = conform(v, argType[i])
				if args[i].Null {
					use[i] = false
				}
			}
			res.Counts.Counted++
			for _, b := range ws {
				bounds[b.w] = [2]int64{b.start, b.end}
				g := groups[wkey{b.w, key}]
				if g == nil {
					g = &group{first: t, aggs: make([]aggState, len(q.Aggregates))}
					groups[wkey{b.w, key}] = g
				}
				for i, a := range q.Aggregates {
					if use[i] {
						accumulate(&g.aggs[i], a.Func, args[i])
					}
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
			vals[i] = final(a.Func, g.aggs[i], q.AggType(a))
		}
		if q.Having != nil {
			ok, err := havingEnv(q, vals, g.first).holds(q.Having)
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

// accumulate adds argument v (not NULL; nothing for COUNT(*)) to the
// running state s of function f.
func accumulate(s *aggState, f query.AggFunc, v Value) {
	s.n++
	first := s.n == 1
	switch f {
	case query.Count:
		// the count is s.n
	case query.Sum, query.Avg:
		if first {
			s.acc = v
		} else if v.Float {
			s.acc.F += v.F
		} else {
			s.acc.I += v.I // wraps
		}
	case query.Min:
		if first || (v.Float && floatBefore(v.F, s.acc.F, -1)) || (!v.Float && v.I < s.acc.I) {
			s.acc = v
		}
	case query.Max:
		if first || (v.Float && floatBefore(v.F, s.acc.F, 1)) || (!v.Float && v.I > s.acc.I) {
			s.acc = v
		}
	}
}

// floatBefore reports whether float x replaces acc, the float MIN (dir
// -1) or MAX (dir 1) so far: where it is a number strictly smaller
// (larger), or acc is NaN (a NaN is skipped where the group has a number:
// MIN and MAX are NaN only over NaNs alone), or it is the zero of the
// sign MIN (-0) or MAX (+0) prefers and acc the other zero. The engine
// merges partial results in any grouping: a rule that keeps a first NaN
// (Flink's single pass) is not associative.
func floatBefore(x, acc float64, dir int) bool {
	switch {
	case math.IsNaN(x):
		return false
	case math.IsNaN(acc):
		return true
	case x == 0 && acc == 0:
		return math.Signbit(x) == (dir < 0) && math.Signbit(acc) != math.Signbit(x)
	case dir < 0:
		return x < acc
	}
	return x > acc
}

// final is the value of function f, of type t, with running state s: the
// count for COUNT; NULL for the others over no value; else AVG's mean, and
// SUM's, MIN's and MAX's running value.
func final(f query.AggFunc, s aggState, t query.ValueType) Value {
	switch {
	case f == query.Count:
		return Int(s.n)
	case s.n == 0:
		return Null(kindOf(t))
	case f == query.Avg:
		return Float(s.acc.asFloat() / float64(s.n))
	}
	return s.acc
}

// havingEnv resolves HAVING's columns: aggregates by As first, then GROUP
// BY columns, read from the group's first tuple.
func havingEnv(q *query.Query, vals []Value, first []byte) env {
	return env{
		col: func(name string) (Value, error) {
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
		},
		scope: q.HavingScope(),
		real:  q.HavingReal(),
	}
}

// evalSessions evaluates an aggregation over session windows, tuple by
// tuple (query.Sessions has the rules): before each tuple, the open
// sessions whose end (their last tuple's time plus the gap) the watermark
// before it minus the delay has reached are output, in order of end,
// start, then key; then the tuple is filtered, late (its time plus the gap
// reached too), or counted into the open sessions of its key it lies
// within the gap of (merged into one), or into a new one. At the end the
// sessions still open are output in the same order. Rows are in output
// order; a row's End is its session's end.
func evalSessions(q *query.Query, data []byte) (*Result, error) {
	if q.Join != nil {
		return nil, fmt.Errorf("reference: query %q: a static join over session windows", q.Name)
	}
	res := &Result{}
	size := q.Schema.TupleSize
	scope := q.Scope()
	gap, delay := q.Window.Size, q.Window.Delay
	parts, err := keyParts(q)
	if err != nil {
		return nil, fmt.Errorf("reference: query %q: %w", q.Name, err)
	}
	type sess struct {
		key         string
		start, last int64
		first       []byte
		aggs        []aggState
	}
	end := func(s *sess) *big.Int { return new(big.Int).Add(big.NewInt(s.last), big.NewInt(gap)) }
	endOf := func(s *sess) int64 {
		e := end(s)
		if !e.IsInt64() {
			return math.MaxInt64
		}
		return e.Int64()
	}
	// reached: the watermark wm minus the delay has reached e (exactly,
	// without int64 overflow; an end past MaxInt64 is never reached).
	reached := func(wm int64, haveWM bool, e *big.Int) bool {
		if !haveWM || !e.IsInt64() {
			return false
		}
		return new(big.Int).Sub(big.NewInt(wm), big.NewInt(delay)).Cmp(e) >= 0
	}
	var open []*sess
	emit := func(list []*sess) error {
		slices.SortFunc(list, func(a, b *sess) int {
			if c := end(a).Cmp(end(b)); c != 0 {
				return c
			}
			if c := cmp.Compare(a.start, b.start); c != 0 {
				return c
			}
			return bytes.Compare([]byte(a.key), []byte(b.key))
		})
		for _, s := range list {
			vals := make([]Value, len(q.Aggregates))
			for i, a := range q.Aggregates {
				vals[i] = final(a.Func, s.aggs[i], q.AggType(a))
			}
			if q.Having != nil {
				ok, err := havingEnv(q, vals, s.first).holds(q.Having)
				if err != nil {
					return fmt.Errorf("having: %w", err)
				}
				if !ok {
					continue
				}
			}
			res.Rows = append(res.Rows, Row{Start: s.start, End: endOf(s), Key: s.key, Values: vals})
		}
		return nil
	}
	var wm int64
	haveWM := false
	for off := 0; off < len(data); off += size {
		idx := off / size
		t := data[off : off+size]
		res.Counts.Tuples++
		ts := int64(binary.LittleEndian.Uint64(t[0:8]))
		if err := func() error {
			var closing, still []*sess
			for _, s := range open {
				if reached(wm, haveWM, end(s)) {
					closing = append(closing, s)
				} else {
					still = append(still, s)
				}
			}
			open = still
			if err := emit(closing); err != nil {
				return err
			}
			en := queryEnv(q, scope, t)
			if q.Where != nil {
				ok, err := en.holds(q.Where)
				if err != nil {
					return fmt.Errorf("where: %w", err)
				}
				if !ok {
					res.Counts.Filtered++
					return nil
				}
			}
			key, err := groupKey(q, parts, nil, en)
			if err != nil {
				return err
			}
			// The open sessions of key that ts lies within the gap of,
			// merged with the tuple into one.
			near := func(s *sess) bool {
				lo := new(big.Int).Sub(big.NewInt(s.start), big.NewInt(gap))
				hi := new(big.Int).Add(big.NewInt(s.last), big.NewInt(gap))
				x := big.NewInt(ts)
				return lo.Cmp(x) <= 0 && x.Cmp(hi) <= 0
			}
			// Late: its own session would have closed, and it joins no
			// open one (query.Sessions).
			if reached(wm, haveWM, new(big.Int).Add(big.NewInt(ts), big.NewInt(gap))) &&
				!slices.ContainsFunc(open, func(s *sess) bool { return s.key == key && near(s) }) {
				res.Counts.Late++
				return nil
			}
			res.Counts.Counted++
			merged := &sess{key: key, start: ts, last: ts, first: t, aggs: make([]aggState, len(q.Aggregates))}
			var keep []*sess
			var joined []*sess
			for _, s := range open {
				if s.key == key && near(s) {
					joined = append(joined, s)
				} else {
					keep = append(keep, s)
				}
			}
			if len(joined) > 0 {
				// The earliest session's first tuple and state start the
				// merge; the others' fold into them in start order.
				slices.SortFunc(joined, func(a, b *sess) int { return cmp.Compare(a.start, b.start) })
				merged = joined[0]
				for _, o := range joined[1:] {
					merged.start, merged.last = min(merged.start, o.start), max(merged.last, o.last)
					for i, a := range q.Aggregates {
						mergeAgg(&merged.aggs[i], a.Func, o.aggs[i])
					}
				}
				merged.start, merged.last = min(merged.start, ts), max(merged.last, ts)
			}
			open = append(keep, merged)
			for i, a := range q.Aggregates {
				use := true
				if a.Filter != nil {
					if use, err = en.holds(a.Filter); err != nil {
						return fmt.Errorf("aggregate %d: filter: %w", i, err)
					}
				}
				if !use {
					continue
				}
				if a.Arg == nil {
					accumulate(&merged.aggs[i], a.Func, Value{})
					continue
				}
				at, err := query.TypeOf(a.Arg, scope)
				if err != nil {
					return err
				}
				v, err := en.eval(a.Arg)
				if err != nil {
					return fmt.Errorf("aggregate %d: %w", i, err)
				}
				if v = conform(v, at); !v.Null {
					accumulate(&merged.aggs[i], a.Func, v)
				}
			}
			return nil
		}(); err != nil {
			return nil, fmt.Errorf("reference: query %q: tuple %d (byte offset %d): %w", q.Name, idx, off, err)
		}
		if !haveWM || ts > wm {
			wm, haveWM = ts, true
		}
	}
	if err := emit(open); err != nil {
		return nil, fmt.Errorf("reference: query %q: %w", q.Name, err)
	}
	return res, nil
}

// mergeAgg folds the state o of function f into s, as if s had seen o's
// values after its own.
func mergeAgg(s *aggState, f query.AggFunc, o aggState) {
	if o.n == 0 {
		return
	}
	if s.n == 0 {
		*s = o
		return
	}
	n := s.n + o.n
	switch f {
	case query.Sum, query.Avg:
		if s.acc.Float {
			s.acc.F += o.acc.F
		} else {
			s.acc.I += o.acc.I
		}
	case query.Min:
		if (o.acc.Float && o.acc.F < s.acc.F) || (!o.acc.Float && o.acc.I < s.acc.I) {
			s.acc = o.acc
		}
	case query.Max:
		if (o.acc.Float && o.acc.F > s.acc.F) || (!o.acc.Float && o.acc.I > s.acc.I) {
			s.acc = o.acc
		}
	}
	s.n = n
}
