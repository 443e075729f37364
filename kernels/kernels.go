// Package kernels holds the CPU kernels: batch functions that run one
// query shape over a task's bytes and return window fragments
// (window.TaskResult). A kernel is called once per task through the Kernel
// interface; inside, the loop over tuples has no interface call, allocation,
// channel operation or lock.
//
// Compile turns a validated query into a kernel and the Plan that the result
// stage needs to read its output (group keys, aggregate words).
package kernels

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/window"
)

// Kernel runs a query over the tuples of one task.
type Kernel interface {
	// Process aggregates data (whole tuples) into r, which the caller has
	// Reset with the plan's layout. first is the stream position (tuple
	// index) of data's first tuple: row windows are cut by it.
	Process(data []byte, first uint64, r *window.TaskResult)
}

// Plan describes a compiled query's output.
type Plan struct {
	Query     *query.Query
	TupleSize int
	Spec      window.Spec
	Layout    *window.Layout
	// GroupKeys[g] is the key of group ordinal g; ordinals follow the keys'
	// byte order, so emitting by ordinal emits by key.
	GroupKeys [][]byte
	// AggWord[i] is the word of the group row that holds aggregate i.
	AggWord []int
	// GroupCols are the GROUP BY columns of a hashed layout, in key order.
	GroupCols []GroupCol
}

// GroupCol is one GROUP BY column and where it sits in the 16-byte key.
// Integers are stored big-endian with the sign bit flipped, so that the
// key's byte order is the order of the values.
type GroupCol struct {
	Type   query.Type
	Offset int // in the tuple
	Size   int
	Pos    int // in the key
}

// encodeKey builds the two key words of tuple t.
func encodeKey(cols []GroupCol, t []byte) (uint64, uint64) {
	var kb [16]byte
	for i := range cols {
		c := &cols[i]
		switch c.Type {
		case query.Int32:
			binary.BigEndian.PutUint32(kb[c.Pos:], binary.LittleEndian.Uint32(t[c.Offset:])^(1<<31))
		case query.Int64:
			binary.BigEndian.PutUint64(kb[c.Pos:], binary.LittleEndian.Uint64(t[c.Offset:])^(1<<63))
		default:
			copy(kb[c.Pos:c.Pos+c.Size], t[c.Offset:c.Offset+c.Size])
		}
	}
	return binary.BigEndian.Uint64(kb[0:8]), binary.BigEndian.Uint64(kb[8:16])
}

// DecodeInt returns integer column c of a key built by encodeKey.
func (c GroupCol) DecodeInt(k0, k1 uint64) int64 {
	var kb [16]byte
	binary.BigEndian.PutUint64(kb[0:], k0)
	binary.BigEndian.PutUint64(kb[8:], k1)
	if c.Type == query.Int32 {
		return int64(int32(binary.BigEndian.Uint32(kb[c.Pos:]) ^ (1 << 31)))
	}
	return int64(binary.BigEndian.Uint64(kb[c.Pos:]) ^ (1 << 63))
}

// Compile builds the kernel for q.
func Compile(q *query.Query) (Kernel, *Plan, error) {
	if err := q.Validate(); err != nil {
		return nil, nil, err
	}
	spec, err := window.NewSpec(q.Window)
	if err != nil {
		return nil, nil, fmt.Errorf("query %q: %w", q.Name, err)
	}
	p := &Plan{Query: q, TupleSize: q.Schema.TupleSize, Spec: spec}
	k := &selectJoinAggregate{tupleSize: q.Schema.TupleSize, spec: spec, rows: q.Window.Type == query.Rows}

	for _, pr := range q.Where {
		a, _ := q.Schema.Lookup(pr.Column)
		k.preds = append(k.preds, predicate{off: a.Offset, wide: a.Type == query.Int64, op: pr.Op, val: pr.Value})
	}

	groups := 1
	p.GroupKeys = [][]byte{nil}
	hashed := false
	for _, g := range q.GroupBy {
		if q.Join != nil && g == q.Join.As {
			continue
		}
		a, _ := q.Schema.Lookup(g)
		pos := 0
		if n := len(p.GroupCols); n > 0 {
			pos = p.GroupCols[n-1].Pos + p.GroupCols[n-1].Size
		}
		p.GroupCols = append(p.GroupCols, GroupCol{Type: a.Type, Offset: a.Offset, Size: a.Size, Pos: pos})
		hashed = true
	}
	if hashed {
		groups, p.GroupKeys = 64, nil // initial capacity; tables grow
		k.groupCols = p.GroupCols
	}
	if j := q.Join; j != nil {
		a, _ := q.Schema.Lookup(j.Column)
		if j.Table.KeyWidth != 16 {
			return nil, nil, fmt.Errorf("query %q: join keys of %d bytes are not supported yet (16 only)", q.Name, j.Table.KeyWidth)
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
		k.join = newJoinTable16(j.Table.Keys, ord)
		k.joinOff = a.Offset
		if len(q.GroupBy) == 1 {
			groups = len(vals)
			p.GroupKeys = vals
			k.groupByJoin = true
		}
	}

	var kinds []window.AggKind
	for _, ag := range q.Aggregates {
		if ag.Func == query.Count {
			p.AggWord = append(p.AggWord, 0)
			continue
		}
		a, _ := q.Schema.Lookup(ag.Column)
		op := aggOp{off: a.Offset, wide: a.Type == query.Int64, word: 1 + len(kinds)}
		switch ag.Func {
		case query.Sum:
			op.kind = window.AggAdd
		case query.Min:
			op.kind = window.AggMin
		case query.Max:
			op.kind = window.AggMax
		}
		kinds = append(kinds, op.kind)
		k.aggs = append(k.aggs, op)
		p.AggWord = append(p.AggWord, op.word)
	}
	p.Layout = &window.Layout{Groups: groups, Hashed: hashed, Kinds: kinds}
	k.layout = p.Layout
	return k, p, nil
}
