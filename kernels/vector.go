package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/strview"
)

// chunk is the number of tuples a kernel processes per step. Every
// intermediate result is a vector of chunk values indexed by the tuple's
// position in the chunk, so that each operator is one tight loop over a
// selection vector per chunk: one switch per operator per chunk, none per
// tuple. 1024 values of 8 bytes keep a vector in L1.
const chunk = 1024

// vexpr is a compiled numeric expression: evaluated over the selected tuples
// of a chunk into its own register (ints or floats).
type vexpr struct {
	float bool
	kind  vkind
	off   int // column offset
	op    query.ArithOp
	l, r  *vexpr
	ints  []int64   // register, or the broadcast constant
	flts  []float64 // register, or the broadcast constant
	// div: an integer division by a constant, by multiplication (divisor).
	div    divisor
	divide bool
	// vAffine: the column at off (int64 if wide, else int32) times mul
	// plus add.
	wide     bool
	mul, add int64
	// str: the register holds strings (strs: each a slice of its view's
	// tuple or of the memory the view points to, or of the kernel's
	// scratch for a computed one).
	str  bool
	strs [][]byte
	// nulls, where the value can be NULL, says which are (nil: none can).
	// A column's NULL bit is bit nullBit of its tuple.
	nulls   []bool
	nullBit int
	// row: the register is filled by the row evaluator, tuple by tuple.
	row     *rexpr
	scratch *rowScratch
	// memoKey is a vRow register's expression where it is a call that a
	// projection may read from the register (chunkMemo); memo and stamps
	// are set where one does: stamps[i] is the chunk number when row i
	// was last evaluated.
	memoKey string
	memo    *chunkMemo
	stamps  []uint64
	// vIntern's cache of the query's string numbers.
	intern *strview.DictCache
	// vSplit: piece `piece` of l's strings split at byte sep. vRegex:
	// group `piece` of regex's match in l's strings.
	sep   byte
	piece int64
	regex *regexMatcher
}

// internExpr is the register of string register l's numbers in dict.
func internExpr(l *vexpr, dict *strview.Dict) *vexpr {
	return &vexpr{kind: vIntern, l: l, ints: make([]int64, chunk), intern: strview.NewDictCache(dict)}
}

type vkind uint8

const (
	vColI32 vkind = iota + 1
	vColI64
	vColF32
	vColF64
	vConst
	vArith
	vToFloat // l converted to float
	vAffine  // integer column * mul + add (affineOf), read in place
	vColStr  // a string column: its views' bytes
	vRow     // the row evaluator's value (rexpr)
	vIntern  // l's strings as their numbers in the query's Strings (NULL: 0)
	vSplit   // SPLIT_INDEX(l, 'c', k) for a one-byte separator and k >= 0
	vRegex   // REGEXP_EXTRACT(l, 'literal', k) for a literal group k
	vMod     // MOD(l, c) of an integer l and a constant c (mul), by div
)

// compileExpr compiles e over schema s. Constants become registers filled
// once, so that arithmetic and comparisons have one shape: register op
// register. What has no vectorised operator (CASE, casts, functions, ...)
// is the row evaluator's (vRow).
func compileExpr(e query.Expr, s *query.Schema) (*vexpr, error) {
	switch e := e.(type) {
	case query.Column:
		a, err := s.Lookup(e.Name)
		if err != nil {
			return nil, err
		}
		v := &vexpr{off: a.Offset}
		switch a.Type {
		case query.Int32:
			v.kind = vColI32
		case query.Int64:
			v.kind = vColI64
		case query.Float32:
			v.kind, v.float = vColF32, true
		case query.Float64:
			v.kind, v.float = vColF64, true
		case query.String:
			v.kind, v.str = vColStr, true
		default:
			// A bytes column (a UUID) has no register of its own: the row
			// evaluator reads it (its NULL bit, its value as text).
			return compileRowExpr(e, s)
		}
		v.alloc()
		if a.Nullable {
			v.nullBit, v.nulls = a.NullBit, make([]bool, chunk)
		}
		return v, nil
	case query.StrConst:
		v := &vexpr{kind: vConst, str: true, strs: make([][]byte, chunk)}
		b := []byte(e.V)
		for i := range v.strs {
			v.strs[i] = b
		}
		return v, nil
	case query.BoolConst:
		return compileExpr(query.Int(map[bool]int64{false: 0, true: 1}[e.V]), s)
	case query.Null:
		t := e.T
		if t == 0 {
			t = query.IntValue
		}
		v := &vexpr{kind: vConst, float: t == query.FloatValue, str: t == query.StringValue, nulls: make([]bool, chunk)}
		v.alloc()
		for i := range v.nulls {
			v.nulls[i] = true
		}
		return v, nil
	case query.IntConst:
		v := &vexpr{kind: vConst, ints: make([]int64, chunk)}
		for i := range v.ints {
			v.ints[i] = e.V
		}
		return v, nil
	case query.FloatConst:
		v := &vexpr{kind: vConst, float: true, flts: make([]float64, chunk)}
		for i := range v.flts {
			v.flts[i] = e.V
		}
		return v, nil
	case query.Arith:
		if v, ok := affineOf(e, s); ok {
			return v, nil
		}
		l, r, err := compileOperands(e.L, e.R, s)
		if err != nil {
			return nil, err
		}
		v := &vexpr{kind: vArith, op: e.Op, float: l.float, l: l, r: r}
		if e.Op == query.OpDiv && !v.float && r.kind == vConst && r.nulls == nil {
			v.div, v.divide = newDivisor(r.ints[0]), true
		}
		v.alloc()
		if l.nulls != nil || r.nulls != nil {
			v.nulls = make([]bool, chunk)
		}
		return v, nil
	case query.Call:
		if v, ok, err := modExpr(e, s); ok || err != nil {
			return v, err
		}
		if v, ok, err := splitExpr(e, s); ok || err != nil {
			return v, err
		}
		if v, ok, err := regexExpr(e, s); ok || err != nil {
			return v, err
		}
	}
	return compileRowExpr(e, s)
}

// modExpr compiles MOD(x, c) of an integer register x and a constant c
// into x - (x / c) * c, the quotient by multiplication (divisor): one loop
// over the register, where the row evaluator calls a closure per tuple and
// the hardware's division costs tens of cycles. Truncated, as Go's % and
// Java's: the result has x's sign. MOD by 0 (0 there, where Java's %
// throws) stays the row evaluator's.
func modExpr(e query.Call, s *query.Schema) (*vexpr, bool, error) {
	if e.Fn != "mod" || len(e.Args) != 2 {
		return nil, false, nil
	}
	c, ok := e.Args[1].(query.IntConst)
	if !ok || c.V == 0 {
		return nil, false, nil
	}
	if t, err := query.TypeOf(e.Args[0], query.SchemaScope(s)); err != nil || t != query.IntValue {
		return nil, false, nil
	}
	l, err := compileExpr(e.Args[0], s)
	if err != nil || l.float || l.str {
		return nil, false, err
	}
	v := &vexpr{kind: vMod, l: l, div: newDivisor(c.V), mul: c.V, nulls: l.nulls}
	v.alloc()
	return v, true, nil
}

// regexExpr compiles REGEXP_EXTRACT(x, 'pattern', k) of a literal group
// over a string register x into one loop over x's register (NULL where
// nothing matches), without the row evaluator's calls per tuple: Nexmark
// q21's WHERE. It is memoized as the row evaluator's register of the call
// is (chunkMemo).
func regexExpr(e query.Call, s *query.Schema) (*vexpr, bool, error) {
	if e.Fn != "regexp_extract" || len(e.Args) < 2 {
		return nil, false, nil
	}
	pat, isLit := e.Args[1].(query.StrConst)
	g, litGroup := regexGroup(e)
	if !isLit || !litGroup {
		return nil, false, nil
	}
	l, err := compileExpr(e.Args[0], s)
	if err != nil || !l.str {
		return nil, false, err
	}
	m, err := compileRegex(pat.V)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", e, err)
	}
	v := &vexpr{kind: vRegex, str: true, l: l, regex: m, piece: g, nulls: make([]bool, chunk), memoKey: e.String()}
	v.alloc()
	return v, true, nil
}

// splitExpr compiles SPLIT_INDEX(x, 'c', k) of a one-byte separator and a
// literal k >= 0 into one loop over x's register (NULL past the last
// piece), without the row evaluator's call per tuple.
func splitExpr(e query.Call, s *query.Schema) (*vexpr, bool, error) {
	sep, piece, ok := byteSplit(e)
	if !ok || piece < 0 {
		return nil, false, nil
	}
	l, err := compileExpr(e.Args[0], s)
	if err != nil || !l.str {
		return nil, false, err
	}
	v := &vexpr{kind: vSplit, str: true, l: l, sep: sep, piece: piece, nulls: make([]bool, chunk)}
	v.alloc()
	return v, true, nil
}

// compileRowExpr makes e a register of the row evaluator.
func compileRowExpr(e query.Expr, s *query.Schema) (*vexpr, error) {
	rx, err := compileRow(e, s)
	if err != nil {
		return nil, err
	}
	// A bytes value (a bytes column projected) is a register of slices, as
	// a string's.
	str := rx.t == query.StringValue || rx.t == query.BytesValue
	v := &vexpr{kind: vRow, row: rx, float: rx.t == query.FloatValue, str: str, scratch: &rowScratch{}}
	if c, ok := e.(query.Call); ok && rowCost(c) >= memoCost {
		v.memoKey = c.String()
	}
	v.alloc()
	if query.MayBeNull(e, query.SchemaNulls(s)) {
		v.nulls = make([]bool, chunk)
	}
	return v, nil
}

// compileOperands compiles the operands of a binary operator (arithmetic
// or comparison), both as floats when either is.
func compileOperands(le, re query.Expr, s *query.Schema) (l, r *vexpr, err error) {
	if l, err = compileExpr(le, s); err != nil {
		return nil, nil, err
	}
	if r, err = compileExpr(re, s); err != nil {
		return nil, nil, err
	}
	if l.float || r.float {
		l, r = toFloat(l), toFloat(r)
	}
	return l, r, nil
}

func (v *vexpr) alloc() {
	switch {
	case v.str:
		v.strs = make([][]byte, chunk)
	case v.float:
		v.flts = make([]float64, chunk)
	default:
		v.ints = make([]int64, chunk)
	}
}

func toFloat(v *vexpr) *vexpr {
	if v.float {
		return v
	}
	if v.kind == vConst {
		c := &vexpr{kind: vConst, float: true, flts: make([]float64, chunk), nulls: v.nulls}
		for i := range c.flts {
			c.flts[i] = float64(v.ints[0])
		}
		return c
	}
	c := &vexpr{kind: vToFloat, float: true, l: v, nulls: v.nulls}
	c.alloc()
	return c
}

// eval computes v for the tuples sel of the chunk data (tuples of size ts).
// A selection of every tuple (no WHERE, no join) loads columns in one
// strided pass, without reading the selection.
func (v *vexpr) eval(data []byte, ts int, sel []int32) {
	if n := len(data) / ts; len(sel) == n && n > 0 && v.kind <= vColF64 {
		v.load(data, ts, n)
		v.loadNulls(data, ts, sel)
		return
	}
	switch v.kind {
	case vColStr:
		dst := v.strs
		for _, i := range sel {
			o := int(i)*ts + v.off
			dst[i] = strview.Bytes(data[o : o+strview.Size])
		}
		v.loadNulls(data, ts, sel)
	case vRow:
		v.evalRow(data, ts, sel)
	case vRegex:
		v.l.eval(data, ts, sel)
		if v.stamps != nil {
			for _, i := range sel {
				v.stamps[i] = v.memo.chunk
			}
		}
		for _, i := range sel {
			if v.l.nulls != nil && v.l.nulls[i] {
				v.nulls[i] = true
				continue
			}
			x := v.l.strs[i]
			lo, hi, ok := v.regex.group(x, v.piece)
			if !ok {
				v.nulls[i] = true
				continue
			}
			v.strs[i], v.nulls[i] = x[lo:hi], false
		}
	case vSplit:
		v.l.eval(data, ts, sel)
		for _, i := range sel {
			if v.l.nulls != nil && v.l.nulls[i] {
				v.nulls[i] = true
				continue
			}
			b, ok := splitAtByte(v.l.strs[i], v.sep, v.piece)
			v.strs[i], v.nulls[i] = b, !ok
		}
	case vIntern:
		if v.l.kind == vColStr {
			// The views themselves: no register of the strings' bytes.
			v.l.loadNulls(data, ts, sel)
			v.intern.IDs(v.ints, data, ts, v.l.off, sel, v.l.nulls)
			return
		}
		v.l.eval(data, ts, sel)
		for _, i := range sel {
			if v.l.nulls != nil && v.l.nulls[i] {
				v.ints[i] = 0
			} else {
				v.ints[i] = v.intern.ID(v.l.strs[i])
			}
		}
	case vConst:
	case vAffine:
		v.affine(data, ts, sel)
	case vColI32:
		dst := v.ints
		for _, i := range sel {
			o := int(i)*ts + v.off
			dst[i] = int64(int32(binary.LittleEndian.Uint32(data[o : o+4])))
		}
		v.loadNulls(data, ts, sel)
	case vColI64:
		dst := v.ints
		for _, i := range sel {
			o := int(i)*ts + v.off
			dst[i] = int64(binary.LittleEndian.Uint64(data[o : o+8]))
		}
		v.loadNulls(data, ts, sel)
	case vColF32:
		dst := v.flts
		for _, i := range sel {
			o := int(i)*ts + v.off
			dst[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(data[o : o+4])))
		}
		v.loadNulls(data, ts, sel)
	case vColF64:
		dst := v.flts
		for _, i := range sel {
			o := int(i)*ts + v.off
			dst[i] = math.Float64frombits(binary.LittleEndian.Uint64(data[o : o+8]))
		}
		v.loadNulls(data, ts, sel)
	case vToFloat:
		v.l.eval(data, ts, sel)
		src, dst := v.l.ints, v.flts
		for _, i := range sel {
			dst[i] = float64(src[i])
		}
	case vMod:
		v.l.eval(data, ts, sel)
		x, c := v.l.ints, v.mul
		if n := len(data) / ts; len(sel) == n {
			v.div.divAll(v.ints[:n], x[:n])
			for i, q := range v.ints[:n] {
				v.ints[i] = x[i] - q*c
			}
		} else {
			v.div.divSel(v.ints, x, sel)
			for _, i := range sel {
				v.ints[i] = x[i] - v.ints[i]*c
			}
		}
	case vArith:
		v.l.eval(data, ts, sel)
		v.r.eval(data, ts, sel)
		n := len(data) / ts
		switch {
		case v.divide && len(sel) == n:
			v.div.divAll(v.ints[:n], v.l.ints[:n])
		case v.divide:
			v.div.divSel(v.ints, v.l.ints, sel)
		case v.float && len(sel) == n:
			arithAll(v.op, v.flts[:n], v.l.operand(n), v.r.operand(n), v.r.kind == vConst, false)
		case v.float:
			arith(v.op, v.flts, v.l.flts, v.r.flts, sel, false)
		case len(sel) == n:
			arithAll(v.op, v.ints[:n], v.l.operandInts(n), v.r.operandInts(n), v.r.kind == vConst, true)
		default:
			arith(v.op, v.ints, v.l.ints, v.r.ints, sel, true)
		}
		if v.nulls != nil {
			orNulls(v.nulls, v.l.nulls, v.r.nulls, sel)
		}
	}
}

// loadNulls reads a nullable column's NULL bits for sel.
func (v *vexpr) loadNulls(data []byte, ts int, sel []int32) {
	if v.nulls == nil {
		return
	}
	at, bit := v.nullBit>>3, byte(1)<<(v.nullBit&7)
	for _, i := range sel {
		v.nulls[i] = data[int(i)*ts+at]&bit != 0
	}
}

// orNulls sets dst's NULLs where either operand's is (a nil operand has
// none).
func orNulls(dst, a, b []bool, sel []int32) {
	switch {
	case a != nil && b != nil:
		for _, i := range sel {
			dst[i] = a[i] || b[i]
		}
	case a != nil:
		for _, i := range sel {
			dst[i] = a[i]
		}
	case b != nil:
		for _, i := range sel {
			dst[i] = b[i]
		}
	}
}

// evalRow fills the register from the row evaluator. Computed strings go
// to the register's scratch, which the chunk before this one no longer
// needs (its outputs are written).
func (v *vexpr) evalRow(data []byte, ts int, sel []int32) {
	sc := v.scratch
	sc.arena.Reset()
	fn := v.row.fn
	if v.stamps != nil {
		for _, i := range sel {
			v.stamps[i] = v.memo.chunk
		}
	}
	for _, i := range sel {
		sc.row = int(i)
		r := fn(data[int(i)*ts:int(i+1)*ts], sc)
		switch {
		case v.str:
			v.strs[i] = r.s
		case v.float:
			v.flts[i] = r.f
		default:
			v.ints[i] = r.i
		}
		if v.nulls != nil {
			v.nulls[i] = r.null
		}
	}
}

// affineOf compiles `int column * k1 + k2` and its parts (`column * k`,
// `column + k`, `column - k`, `column * k1 - k2`, constants either side of +
// and *) into one vAffine pass. The integers wrap as the separate
// operations do (x*k1 + k2, and x - k as x + -k, are the same bits), so
// the values are the operations'.
func affineOf(e query.Arith, s *query.Schema) (*vexpr, bool) {
	col, mul, add, ok := affineParts(e)
	if !ok {
		return nil, false
	}
	a, err := s.Lookup(col)
	if err != nil || (a.Type != query.Int32 && a.Type != query.Int64) || a.Nullable {
		return nil, false
	}
	v := &vexpr{kind: vAffine, off: a.Offset, wide: a.Type == query.Int64, mul: mul, add: add}
	v.alloc()
	return v, true
}

// affineParts matches e as col*mul + add.
func affineParts(e query.Expr) (col string, mul, add int64, ok bool) {
	ar, isArith := e.(query.Arith)
	if !isArith {
		if c, isCol := e.(query.Column); isCol {
			return c.Name, 1, 0, true
		}
		return "", 0, 0, false
	}
	l, r := ar.L, ar.R
	lk, lConst := l.(query.IntConst)
	rk, rConst := r.(query.IntConst)
	switch ar.Op {
	case query.OpAdd, query.OpMul:
		if lConst && !rConst { // k op x: commutes
			l, r, rk, rConst = r, l, lk, true
		}
	case query.OpSub:
	default:
		return "", 0, 0, false
	}
	if !rConst {
		return "", 0, 0, false
	}
	switch ar.Op {
	case query.OpMul:
		// Only a column scaled: (x*m + c)*k would reorder the wrapping
		// multiplication of c.
		if c, isCol := l.(query.Column); isCol {
			return c.Name, rk.V, 0, true
		}
		return "", 0, 0, false
	default:
		inner, isArith := l.(query.Arith)
		if isArith && inner.Op != query.OpMul {
			return "", 0, 0, false // x + k1 + k2: left to the general path
		}
		col, mul, add, ok := affineParts(l)
		if !ok || add != 0 {
			return "", 0, 0, false
		}
		if ar.Op == query.OpSub {
			return col, mul, -rk.V, true
		}
		return col, mul, rk.V, true
	}
}

// affine computes column * mul + add for the tuples sel of the chunk data,
// all of them in one strided pass when sel is every tuple.
func (v *vexpr) affine(data []byte, ts int, sel []int32) {
	n := len(data) / ts
	if n == 0 || len(sel) == 0 {
		return
	}
	width := 4
	if v.wide {
		width = 8
	}
	_ = data[(n-1)*ts+v.off+width-1]
	col := unsafe.Add(unsafe.Pointer(unsafe.SliceData(data)), v.off)
	m, c := v.mul, v.add
	dst := v.ints
	switch {
	case len(sel) == n && v.wide:
		for i := range dst[:n] {
			dst[i] = int64(load64(col, i*ts))*m + c
		}
	case len(sel) == n:
		for i := range dst[:n] {
			dst[i] = int64(int32(load32(col, i*ts)))*m + c
		}
	case v.wide:
		for _, i := range sel {
			dst[i] = int64(load64(col, int(i)*ts))*m + c
		}
	default:
		for _, i := range sel {
			dst[i] = int64(int32(load32(col, int(i)*ts)))*m + c
		}
	}
}

// operand is a float register's first n values (a constant's broadcast).
func (v *vexpr) operand(n int) []float64 { return v.flts[:n] }

func (v *vexpr) operandInts(n int) []int64 { return v.ints[:n] }

// load reads column v of all n tuples of the chunk data.
func (v *vexpr) load(data []byte, ts, n int) {
	d := data[v.off:]
	switch v.kind {
	case vColI32:
		dst := v.ints[:n]
		for i := range dst {
			o := i * ts
			dst[i] = int64(int32(binary.LittleEndian.Uint32(d[o : o+4])))
		}
	case vColI64:
		dst := v.ints[:n]
		for i := range dst {
			o := i * ts
			dst[i] = int64(binary.LittleEndian.Uint64(d[o : o+8]))
		}
	case vColF32:
		dst := v.flts[:n]
		for i := range dst {
			o := i * ts
			dst[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(d[o : o+4])))
		}
	case vColF64:
		dst := v.flts[:n]
		for i := range dst {
			o := i * ts
			dst[i] = math.Float64frombits(binary.LittleEndian.Uint64(d[o : o+8]))
		}
	}
}

// arith computes dst = a op b over sel. Integer division by zero gives 0
// (intDiv), so that one bad tuple cannot stop the stream; a float one
// follows IEEE 754.
func arith[T number](op query.ArithOp, dst, a, b []T, sel []int32, intDiv bool) {
	switch op {
	case query.OpAdd:
		for _, i := range sel {
			dst[i] = a[i] + b[i]
		}
	case query.OpSub:
		for _, i := range sel {
			dst[i] = a[i] - b[i]
		}
	case query.OpMul:
		for _, i := range sel {
			dst[i] = a[i] * b[i]
		}
	default:
		for _, i := range sel {
			if intDiv && b[i] == 0 {
				dst[i] = 0
			} else {
				dst[i] = a[i] / b[i]
			}
		}
	}
}

// arithAll computes dst = a op b for every tuple of the chunk (no WHERE
// narrowed it): loops over ranges, without the selection's indirection,
// and with b's first value as a scalar when b is a constant (bConst).
// Integer division by zero gives 0, as in arith.
func arithAll[T number](op query.ArithOp, dst, a, b []T, bConst, intDiv bool) {
	a, b = a[:len(dst)], b[:len(dst)]
	if bConst && len(b) > 0 {
		c := b[0]
		switch op {
		case query.OpAdd:
			for i := range dst {
				dst[i] = a[i] + c
			}
		case query.OpSub:
			for i := range dst {
				dst[i] = a[i] - c
			}
		case query.OpMul:
			for i := range dst {
				dst[i] = a[i] * c
			}
		default:
			if intDiv && c == 0 {
				clear(dst)
				return
			}
			for i := range dst {
				dst[i] = a[i] / c
			}
		}
		return
	}
	switch op {
	case query.OpAdd:
		for i := range dst {
			dst[i] = a[i] + b[i]
		}
	case query.OpSub:
		for i := range dst {
			dst[i] = a[i] - b[i]
		}
	case query.OpMul:
		for i := range dst {
			dst[i] = a[i] * b[i]
		}
	default:
		for i := range dst {
			if intDiv && b[i] == 0 {
				dst[i] = 0
			} else {
				dst[i] = a[i] / b[i]
			}
		}
	}
}

type number interface{ ~int64 | ~float64 }
