package reference

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sort"

	"github.com/saber-hx/saber-hx/query"
)

// EvaluateJoin evaluates a window join (query.WindowJoin) literally. Each
// stream, on its own: a tuple's position is its event time (range windows)
// or its 0-based index in its stream (row windows); the watermark is the
// largest position of the stream's earlier tuples; a tuple is late when a
// watermark exists and it minus j.Window.Delay is >= the end of the first
// window containing the tuple (in unbounded integers: an end past
// math.MaxInt64 is never reached). A tuple whose first window starts below
// math.MinInt64 is refused: the error names its input, index, byte offset
// and position. Every window w holding an accepted tuple of both streams
// outputs, in order of w, each pair (l, r) of its accepted left tuples l
// and right tuples r, left ones in order of position (ties in stream
// order) as the outer loop and right ones likewise as the inner loop, for
// which Where is TRUE (l.<name> read from l with j.Left, r.<name> from r
// with j.Right), as the concatenated tuple l ++ r; Result.Values holds each
// output tuple's values, l's attributes then r's. Counts: Tuples of both
// streams, Late, and Counted = the rest.
//
// A regular join (j.Regular) outputs every pair (l, r) whose keys
// (j.LeftKey, j.RightKey) are equal and not NULL, left tuples in stream
// order as the outer loop and right ones as the inner loop: the pairs the
// engine outputs, in another order (it outputs each pair when the later of
// its tuples arrives). Counts: Tuples of both streams, all Counted.
func EvaluateJoin(j *query.WindowJoin, left, right []byte) (*Result, error) {
	if err := j.Validate(); err != nil {
		return nil, err
	}
	if j.Regular {
		return evaluateRegular(j, left, right)
	}
	out := j.OutputSchemaUnchecked()
	type accepted struct {
		pos   int64
		tuple []byte
	}
	perWindow := [2]map[int64][]accepted{{}, {}}
	res := &Result{}
	for side, data := range [][]byte{left, right} {
		ts := j.Left.TupleSize
		if side == 1 {
			ts = j.Right.TupleSize
		}
		if len(data)%ts != 0 {
			return nil, fmt.Errorf("join input %d: %d trailing bytes", side, len(data)%ts)
		}
		var wm int64
		has := false
		for i := 0; i*ts < len(data); i++ {
			t := data[i*ts : (i+1)*ts]
			pos := int64(i)
			if j.Window.Type == query.Range {
				pos = int64(binary.LittleEndian.Uint64(t))
			}
			res.Counts.Tuples++
			ws, err := windowsOf(pos, j.Window, positionName(j.Window))
			if err != nil {
				return nil, fmt.Errorf("reference: join %q: %s input: tuple %d (byte offset %d): %w", j.Name, [2]string{"left", "right"}[side], i, i*ts, err)
			}
			first := ws[len(ws)-1] // windowsOf lists windows in descending order
			isLate := has && late(wm, first, j.Window)
			if !has || pos > wm {
				wm, has = pos, true
			}
			if isLate {
				res.Counts.Late++
				continue
			}
			res.Counts.Counted++
			for _, b := range ws {
				perWindow[side][b.w] = append(perWindow[side][b.w], accepted{pos, t})
			}
		}
	}
	var windows []int64
	for w := range perWindow[0] {
		if len(perWindow[1][w]) > 0 {
			windows = append(windows, w)
		}
	}
	slices.Sort(windows)
	pair := make([]byte, out.TupleSize)
	// Once: each lays out the joined schema.
	joined := j.OutputSchemaUnchecked()
	pe := newPairEnv(j, query.SchemaScope(joined), query.SchemaReal(joined))
	var rows valueRows
	for _, w := range windows {
		l, r := perWindow[0][w], perWindow[1][w]
		sort.SliceStable(l, func(a, b int) bool { return l[a].pos < l[b].pos })
		sort.SliceStable(r, func(a, b int) bool { return r[a].pos < r[b].pos })
		// Each tuple decoded once, not once per pair.
		rvs := make([][]Value, len(r))
		for k, rt := range r {
			var err error
			if rvs[k], err = decodeTuple(j.Right, rt.tuple); err != nil {
				return nil, fmt.Errorf("reference: join %q: right tuple: %w", j.Name, err)
			}
		}
		for _, lt := range l {
			lv, err := decodeTuple(j.Left, lt.tuple)
			if err != nil {
				return nil, fmt.Errorf("reference: join %q: left tuple: %w", j.Name, err)
			}
			for k, rt := range r {
				keep := true
				if j.Where != nil {
					pe.l, pe.r = lv, rvs[k]
					if keep, err = pe.env.holds(j.Where); err != nil {
						return nil, fmt.Errorf("reference: join %q: where: %w", j.Name, err)
					}
				}
				if keep {
					copy(pair, lt.tuple)
					copy(pair[len(lt.tuple):], rt.tuple)
					res.Tuples = appendDoubling(res.Tuples, pair...)
					res.Values = appendDoubling(res.Values, rows.concat(lv, rvs[k]))
				}
			}
		}
	}
	return res, nil
}

// appendDoubling is internal/doubling's Append, kept here: the reference
// shares no code with the engine it checks (internal/deps).
func appendDoubling[T any](s []T, v ...T) []T {
	if cap(s)-len(s) < len(v) {
		s = slices.Grow(s, max(len(s), len(v)))
	}
	return append(s, v...)
}

// valueRows carves output rows out of shared chunks: one allocation per
// chunk, not per pair.
type valueRows struct{ chunk []Value }

func (v *valueRows) concat(a, b []Value) []Value {
	n := len(a) + len(b)
	if cap(v.chunk)-len(v.chunk) < n {
		v.chunk = make([]Value, 0, max(n, 1<<14))
	}
	start := len(v.chunk)
	v.chunk = append(append(v.chunk, a...), b...)
	return v.chunk[start : start+n : start+n]
}

// pairEnv resolves a join predicate's names for the pair it is set to:
// l.<name> is attribute <name> of the left tuple (j.Left's values in l),
// r.<name> of the right one (j.Right's in r). Names resolve to their
// attributes once; the pair's values are those decodeTuple read, each side
// with its own schema (so that a NULL bit is read where that side's schema
// puts it). scope and real are the joined schema's (j.Scope()).
type pairEnv struct {
	env
	l, r  []Value
	index map[string]pairColumn
}

type pairColumn struct {
	right bool
	i     int
}

func newPairEnv(j *query.WindowJoin, scope query.Scope, real query.RealScope) *pairEnv {
	p := &pairEnv{index: map[string]pairColumn{}}
	for side, s := range []*query.Schema{j.Left, j.Right} {
		prefix := [2]string{query.LeftPrefix, query.RightPrefix}[side]
		for i, a := range s.Attrs {
			if _, dup := p.index[prefix+a.Name]; !dup { // the first, as Schema.Lookup
				p.index[prefix+a.Name] = pairColumn{side == 1, i}
			}
		}
	}
	p.env = env{
		col: func(name string) (Value, error) {
			c, ok := p.index[name]
			switch {
			case !ok:
				return Value{}, fmt.Errorf("no column %q in the join (l.<name> or r.<name>)", name)
			case c.right:
				return p.r[c.i], nil
			}
			return p.l[c.i], nil
		},
		scope: scope,
		real:  real,
	}
	return p
}

// evaluateRegular is EvaluateJoin of a regular join: nested loops.
func evaluateRegular(j *query.WindowJoin, left, right []byte) (*Result, error) {
	res := &Result{}
	var vals [2][][]Value
	var keys [2][]Value
	for side, data := range [][]byte{left, right} {
		s, k := j.Left, j.LeftKey
		if side == 1 {
			s, k = j.Right, j.RightKey
		}
		if len(data)%s.TupleSize != 0 {
			return nil, fmt.Errorf("join input %d: %d trailing bytes", side, len(data)%s.TupleSize)
		}
		for o := 0; o < len(data); o += s.TupleSize {
			t := data[o : o+s.TupleSize]
			v, err := decodeTuple(s, t)
			if err != nil {
				return nil, fmt.Errorf("reference: join %q: %s tuple: %w", j.Name, [2]string{"left", "right"}[side], err)
			}
			vals[side] = append(vals[side], v)
			keys[side] = append(keys[side], v[k])
			res.Counts.Tuples++
			res.Counts.Counted++
		}
	}
	var rows valueRows
	for a, lv := range vals[0] {
		for b, rv := range vals[1] {
			if keys[0][a].Null || keys[1][b].Null || keys[0][a].I != keys[1][b].I || keys[0][a].Str != keys[1][b].Str {
				continue
			}
			res.Tuples = appendDoubling(res.Tuples, left[a*j.Left.TupleSize:(a+1)*j.Left.TupleSize]...)
			res.Tuples = appendDoubling(res.Tuples, right[b*j.Right.TupleSize:(b+1)*j.Right.TupleSize]...)
			res.Values = appendDoubling(res.Values, rows.concat(lv, rv))
		}
	}
	return res, nil
}
