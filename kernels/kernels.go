// Package kernels holds the CPU kernels: batch functions that run a query
// over a task's bytes and return window fragments or output tuples
// (window.TaskResult).
//
// Kernels are vectorised: a task is processed in chunks of 1024 tuples, and
// each operator (a column load, an arithmetic operator, a comparison, the
// join probe, the aggregation) is one tight loop over the chunk's selection
// vector. Dispatch on the operator happens once per operator per chunk, so
// the loop over tuples has no interface call, allocation, channel operation
// or lock. A kernel is called once per task through the Kernel interface.
//
// Compile checks a query and returns its Plan; each worker makes its own
// Kernel from the plan (kernels keep per-chunk registers), sharing the
// read-only join table.
package kernels

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/strview"
	"github.com/saber-hx/saber-hx/window"
)

// Kernel runs a query over the tuples of one task. It is not safe for
// concurrent use: each worker has its own.
type Kernel interface {
	// Process aggregates data (whole tuples) into r, which the caller has
	// Reset with the plan's layout. first is the stream position (tuple
	// index) of data's first tuple: row windows are cut by it.
	Process(data []byte, first uint64, r *window.TaskResult)
}

// KeyPart is one part of a hashed group key: a GROUP BY value, or the
// NULL flag before one (lowerGroups).
type KeyPart struct {
	Name  string // the column's name, "" for an expression
	Pos   int    // offset in the encoded key
	Width int
	Int   bool // integer (encoded by query.AppendIntKey), else bytes
	// Key is the GROUP BY value the part belongs to (its index); Kind
	// says what of it the part holds.
	Key  int
	Kind KeyKind
}

// KeyKind says what a key part holds.
type KeyKind uint8

const (
	KeyInt      KeyKind = iota // an integer or a time
	KeyBytes                   // a bytes column's bytes
	KeyString                  // a string's number in the query's Strings (0: NULL)
	KeyBool                    // 0 NULL, 1 false, 2 true
	KeyNullFlag                // 0: the next part's value is NULL; 1: it is not
)

// AggOut says how to read aggregate i from a group row.
type AggOut struct {
	Word  int  // the row word holding it (0: the count)
	Float bool // the result is a float
	Avg   bool // word holds the sum; the result is sum / count
	// floatWord: the word holds float64 bits.
	floatWord bool
	// Present is the word that counts the tuples the aggregate took,
	// where it can skip some (a FILTER, an argument that can be NULL):
	// the aggregate is NULL where it is 0, and it divides AVG. 0: the
	// group's count, word 0.
	Present int
}

// Plan is a compiled query: what its output looks like.
type Plan struct {
	Query     *query.Query
	TupleSize int

	// Aggregations.
	Spec      window.Spec
	Layout    *window.Layout
	GroupKeys [][]byte  // dense groups: the key of each ordinal, in byte order
	KeyParts  []KeyPart // hashed groups: the parts of the encoded key
	Aggs      []AggOut

	// OutTupleSize is the size of an output tuple (query.OutputSchema).
	OutTupleSize int

	// Fused reports whether the kernels are the fused, shape-specialised
	// ones (see fusedKernel) rather than the vectorised ones.
	Fused bool

	// kq is the query the kernels run: Query with its aggregates lowered
	// (lowerAggregates). nq, where a column can be NULL, is kq over a
	// schema without NULLs (noNulls): what a task without a NULL in the
	// columns it reads runs (nullSwitch).
	kq, nq *query.Query
	// nullBytes are the tuple bytes that hold NULL bits (nq's test).
	nullBytes []int
	// strings numbers the strings the query groups by (nil: none): the
	// input's (Options.DictColumns) where a key is one of its encoded columns.
	strings *strview.Dict
	dicts   *DictColumns

	join *joinTable // shared by the kernels, read-only
	// direct is the widest direct mapping the kernels learnt (hashed
	// layouts merged by key), shared by them.
	direct *sharedDirect
	// canonInt is, per GROUP BY value, how AppendCanonicalKey writes it
	// where it is an integer (the query's types, worked out once).
	canonInt []canonInt
}

// canonInt is an integer key's canonical form: its width, and whether it
// has a NULL byte.
type canonInt struct {
	width    int
	nullable bool
}

// Stateless reports whether the query outputs tuples rather than windows.
func (p *Plan) Stateless() bool { return p.Query.Stateless() }

// Options tune Compile.
type Options struct {
	// Vectorised forces the general vectorised kernel even where the fused
	// one fits the query (to compare them, and in tests of both).
	Vectorised bool
	// DictColumns, where set, describes the input's dictionary-encoded
	// string columns: a GROUP BY of one of them reads its number rather
	// than hashing its string.
	DictColumns *DictColumns
}

// DictColumns describes the dictionary-encoded string columns of a query's
// input tuples (a source's decoders write them: source.Column.Dict): beside
// each one's view, an int32 at Numbers[column] holds the string's number
// in Dict, 0 where the value is NULL. The query groups by that number, an
// integer key, and Dict is its dictionary of strings: the kernels neither
// hash a string nor probe a cache of their own for it, which is what a
// string key costs them otherwise (docs/performance.md).
type DictColumns struct {
	Dict    *strview.Dict
	Numbers map[string]int
}

// Encode dictionary-encodes the columns of tuples of schema s that no
// decoder encoded (a Go program's): through c, a cache of Dict, each
// string's view pointed into Dict and its number written beside it, 0 for
// a NULL.
func (dc *DictColumns) Encode(s *query.Schema, c *strview.DictCache, tuples []byte) error {
	ts := s.TupleSize
	for name, at := range dc.Numbers {
		a, err := s.Lookup(name)
		if err != nil {
			return fmt.Errorf("encoded column %q: %w", name, err)
		}
		for o := 0; o+ts <= len(tuples); o += ts {
			t := tuples[o : o+ts]
			var id int64
			if !a.IsNull(t) {
				v := t[a.Offset : a.Offset+strview.Size]
				id = c.Put(v, strview.Bytes(v))
			}
			binary.LittleEndian.PutUint32(t[at:], uint32(id))
		}
	}
	return nil
}

// numberAt is the offset of the number of string key g where g is an
// encoded column of the input.
func (p *Plan) numberAt(g query.Expr) (int, bool) {
	c, ok := g.(query.Column)
	if !ok || p.dicts == nil {
		return 0, false
	}
	at, ok := p.dicts.Numbers[c.Name]
	return at, ok
}

// Compile checks q and prepares its kernels.
func Compile(q *query.Query) (*Plan, error) { return CompileWith(q, Options{}) }

// CompileWith is Compile with options.
func CompileWith(q *query.Query, o Options) (*Plan, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	p := &Plan{Query: q, TupleSize: q.Schema.TupleSize, direct: &sharedDirect{}}
	if e := o.DictColumns; e != nil {
		for name, at := range e.Numbers {
			a, err := q.Schema.Lookup(name)
			switch {
			case err != nil:
				return nil, fmt.Errorf("query %q: encoded column %q: %w", q.Name, name, err)
			case a.Type != query.String:
				return nil, fmt.Errorf("query %q: encoded column %q is a %s column, not a string", q.Name, name, a.Type)
			case at < 0 || at+4 > q.Schema.TupleSize:
				return nil, fmt.Errorf("query %q: encoded column %q: its number at byte %d is outside the %d-byte tuple", q.Name, name, at, q.Schema.TupleSize)
			}
		}
		p.dicts = e
	}
	out, err := q.OutputSchema()
	if err != nil {
		return nil, err
	}
	p.OutTupleSize = out.TupleSize
	p.kq = q
	if j := q.Join; j != nil && j.Values != nil {
		// A lookup join: entry i is value i.
		ord := make([]int32, len(j.Table.Keys))
		for i := range ord {
			ord[i] = int32(i)
		}
		p.join = joinTableOf(j.Table, ord)
	}
	if !q.Stateless() {
		p.kq, p.Aggs = lowerAggregates(q)
		if q.Window.Type != query.Session {
			spec, err := window.NewSpec(q.Window)
			if err != nil {
				return nil, fmt.Errorf("query %q: %w", q.Name, err)
			}
			p.Spec = spec
		}
		if err := p.compileGroups(); err != nil {
			return nil, fmt.Errorf("query %q: %w", q.Name, err)
		}
		for _, g := range q.GroupBy {
			p.canonInt = append(p.canonInt, canonInt{width: q.KeyWidth(g), nullable: q.KeyNullable(g)})
		}
	}
	if readsNullable(q) {
		p.nq = noNulls(p.kq)
		for _, a := range q.Schema.Attrs {
			if a.Nullable && !slices.Contains(p.nullBytes, a.NullBit>>3) {
				p.nullBytes = append(p.nullBytes, a.NullBit>>3)
			}
		}
	}
	// Compile one kernel now, so that every error shows before anything runs.
	if _, err := p.newKernel(); err != nil {
		return nil, fmt.Errorf("query %q: %w", q.Name, err)
	}
	// The fused kernel is chosen for the one shape its fast loop serves
	// (fastScanner: YSB's filter, static join and count); for every other
	// dense shape its general per-tuple loop is slower than the vectorised
	// dense kernel, and stays only as an oracle of the tests.
	fk := newFusedKernel(p)
	p.Fused = !o.Vectorised && fk != nil && fk.fast
	return p, nil
}

// NewKernel returns a kernel for one worker.
func (p *Plan) NewKernel() Kernel {
	k, err := p.newKernel()
	if err != nil {
		panic(err) // Compile compiled the same plan without error
	}
	return k
}

func (p *Plan) newKernel() (Kernel, error) {
	if p.Fused {
		return newFusedKernel(p), nil
	}
	k, err := p.kernelOf(p.kq)
	if err != nil || p.nq == nil {
		return k, err
	}
	nk, err := p.kernelOf(p.nq)
	if err != nil {
		return nil, err
	}
	return &nullSwitch{nulls: k, none: nk, ts: p.TupleSize, at: p.nullBytes}, nil
}

// kernelOf compiles the vectorised kernel of q (kq or nq).
func (p *Plan) kernelOf(q *query.Query) (Kernel, error) {
	var where *vpred
	if q.Where != nil {
		var err error
		if where, err = compilePred(q.Where, q.JoinedSchema()); err != nil {
			return nil, fmt.Errorf("where: %w", err)
		}
	}
	if p.Stateless() { // not q's: a lowered query with only COUNT(*) has no aggregate left
		return newStatelessKernel(p, q, where)
	}
	if q.Window.Type == query.Session {
		return newSessionKernel(p, q, where)
	}
	// The dense layouts (one group, the join's ordinals) have a kernel of
	// their own, whose passes are chosen for the query's shape; the hashed
	// ones need the key machinery of the aggregate kernel.
	if !p.Layout.Hashed {
		return newDenseKernel(p, q, where)
	}
	return newAggregateKernel(p, q, where)
}

// nullSwitch runs a task on the kernel without NULLs where none of the
// bytes that hold the NULL bits has one set (one byte or a few per tuple,
// read once), else on the kernel that handles them.
type nullSwitch struct {
	nulls, none Kernel
	ts          int
	at          []int
}

func (k *nullSwitch) Process(data []byte, first uint64, r *window.TaskResult) {
	if k.anyNull(data) {
		k.nulls.Process(data, first, r)
	} else {
		k.none.Process(data, first, r)
	}
}

func (k *nullSwitch) anyNull(data []byte) bool {
	ts := k.ts
	n := len(data) / ts * ts
	for _, at := range k.at {
		var acc byte
		for o := at; o < n; o += ts {
			acc |= data[o]
		}
		if acc != 0 {
			return true
		}
	}
	return false
}

// compileGroups sets the layout: dense ordinals for the values of a static
// join (or one group without GROUP BY), a hashed key otherwise.
func (p *Plan) compileGroups() error {
	q := p.Query
	groups, hashed := 1, false
	p.GroupKeys = [][]byte{nil}
	if j := q.Join; j != nil {
		if j.Table.KeyWidth > 16 {
			return fmt.Errorf("join keys of %d bytes are not supported yet (at most 16)", j.Table.KeyWidth)
		}
		if j.Values != nil {
			return fmt.Errorf("a lookup join (Join.Values) is for a query without aggregates")
		}
		// Dense group ordinals for the distinct joined values, in byte
		// order; the join table maps a key straight to its value's ordinal.
		vals := slices.Clone(j.Table.Values)
		slices.SortFunc(vals, bytes.Compare)
		vals = slices.CompactFunc(vals, bytes.Equal)
		ord := make([]int32, len(j.Table.Keys))
		for i, v := range j.Table.Values {
			o, _ := slices.BinarySearchFunc(vals, v, bytes.Compare)
			ord[i] = int32(o)
		}
		p.join = joinTableOf(j.Table, ord)
		if groupsByJoin(q) {
			groups, p.GroupKeys = len(vals), vals
		}
	}
	if len(q.GroupBy) > 0 && !groupsByJoin(q) {
		hashed, groups, p.GroupKeys = true, 64, nil
		exprs, parts, err := lowerGroups(q)
		if err != nil {
			return err
		}
		p.KeyParts = parts
		kq := *p.kq
		kq.GroupBy = exprs
		p.kq = &kq
		switch {
		case slices.ContainsFunc(q.GroupBy, func(g query.Expr) bool { _, ok := p.numberAt(g); return ok }):
			// One dictionary for all the string keys: the encoded
			// columns' numbers are its.
			p.strings = p.dicts.Dict
		case slices.ContainsFunc(parts, func(kp KeyPart) bool { return kp.Kind == KeyString }):
			p.strings = strview.NewDict()
		}
	}
	// One word per aggregate of the lowered query (p.Aggs says how the
	// query's own read them).
	var kinds []window.AggKind
	for _, ag := range p.kq.Aggregates {
		t, err := query.TypeOf(ag.Arg, p.kq.Scope())
		if err != nil {
			return err
		}
		var k window.AggKind
		switch ag.Func {
		case query.Sum, query.Avg:
			k = window.AggAdd
		case query.Min:
			k = window.AggMin
		default:
			k = window.AggMax
		}
		if t == query.FloatValue {
			k += window.AggAddF - window.AggAdd
		}
		kinds = append(kinds, k)
	}
	p.Layout = &window.Layout{Groups: groups, Hashed: hashed, Kinds: kinds}
	return nil
}

func groupsByJoin(q *query.Query) bool {
	if q.Join == nil || len(q.GroupBy) != 1 {
		return false
	}
	c, ok := q.GroupBy[0].(query.Column)
	return ok && c.Name == q.Join.As
}

// AggValue reads aggregate a of a group row: an integer, or a float when
// isFloat (AggNull says whether it is NULL).
func (p *Plan) AggValue(row []int64, a int) (i int64, f float64, isFloat bool) {
	o := p.Aggs[a]
	w := row[o.Word]
	n := row[o.Present]
	switch {
	case o.Avg && o.floatWord:
		return 0, math.Float64frombits(uint64(w)) / float64(n), true
	case o.Avg:
		return 0, float64(w) / float64(n), true
	case o.floatWord:
		return 0, math.Float64frombits(uint64(w)), true
	}
	return w, 0, false
}

// AggNull reports whether aggregate a of a group row is NULL: it took no
// tuple (a FILTER, NULL arguments).
func (p *Plan) AggNull(row []int64, a int) bool {
	o := p.Aggs[a]
	return o.Present != 0 && row[o.Present] == 0
}

// joinTableOf makes the join table of t's keys, ord their ordinals.
func joinTableOf(t *query.StaticTable, ord []int32) *joinTable {
	if t.KeyWidth == 0 {
		return newStringJoinTable(t.Keys, ord)
	}
	return newJoinTable(t.Keys, ord)
}
