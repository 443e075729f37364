package kernels

import (
	"math"
	"unsafe"

	"github.com/saber-hx/saber-hx/window"
)

// The aggregate kernel's fused pass, chosen when the kernel is made: where
// a chunk lies wholly in one pane, none of it late, and every key inside
// the direct mapping, one loop per (aggregate kind, argument type) counts
// each tuple in its direct slot and folds its argument into the same row,
// reading the argument column in place. The slots come from one pass per
// key part, also reading plain columns in place. This is the C loop's
// shape: slot, count, fold, no register of the column, no test per tuple
// of pane or lateness, no switch.

// fusedFold counts and folds the tuples sel of chunk cd into direct table
// st; dix holds their slots (fillDirectInPlace), all inside st.
type fusedFold func(st *window.GroupState, dix, sel []int32, cd []byte, ts int, ident []int64, args []aggArg)

// fusedFoldOf returns the fused pass for the aggregates args over rows of
// words words, nil where there is none (the count and fold passes serve).
func fusedFoldOf(args []aggArg, words int) fusedFold {
	if len(args) == 0 {
		return countFused
	}
	if len(args) > 1 || words != 2 {
		return nil
	}
	switch e := args[0].expr; args[0].kind {
	case window.AggAdd:
		switch e.kind {
		case vColI32:
			return sumFused[int32]
		case vColI64:
			return sumFused[int64]
		}
		return sumFusedReg
	case window.AggAddF:
		switch e.kind {
		case vColF32:
			return sumFFused[float32]
		case vColF64:
			return sumFFused[float64]
		}
		return sumFFusedReg
	}
	return nil
}

// column returns the address of the column at off of the first tuple of
// cd, after checking that the last tuple of sel (ascending) holds it.
func column(cd []byte, ts, off, width int, sel []int32) unsafe.Pointer {
	_ = cd[int(sel[len(sel)-1])*ts+off+width-1]
	return unsafe.Add(unsafe.Pointer(unsafe.SliceData(cd)), off)
}

func countFused(st *window.GroupState, dix, sel []int32, _ []byte, _ int, _ []int64, _ []aggArg) {
	vb := unsafe.Pointer(unsafe.SliceData(st.Vals))
	touched := st.Touched
	dix = dix[:chunk]
	for _, i := range sel {
		g := dix[i&(chunk-1)]
		// Rows of one word; g is a slot of st (fillDirectInPlace).
		c := (*int64)(unsafe.Add(vb, uintptr(g)*8))
		if *c == 0 {
			touched = append(touched, g)
		}
		*c++
	}
	st.Touched = touched
}

func sumFused[T int32 | int64](st *window.GroupState, dix, sel []int32, cd []byte, ts int, ident []int64, args []aggArg) {
	e := args[0].expr
	sumRows[T](st, dix, sel, column(cd, ts, e.off, int(unsafe.Sizeof(T(0))), sel), ts, ident[0])
}

// sumFusedReg folds an integer expression, evaluated into its register.
func sumFusedReg(st *window.GroupState, dix, sel []int32, cd []byte, ts int, ident []int64, args []aggArg) {
	e := args[0].expr
	e.eval(cd, ts, sel)
	sumRows[int64](st, dix, sel, unsafe.Pointer(unsafe.SliceData(e.ints[:chunk])), 8, ident[0])
}

// sumRows counts the tuples sel in their rows (count, sum) and adds the
// value of type T at col + i*stride of each; a row seen first starts at
// its count 0 and sum id.
func sumRows[T int32 | int64](st *window.GroupState, dix, sel []int32, col unsafe.Pointer, stride int, id int64) {
	vb := unsafe.Pointer(unsafe.SliceData(st.Vals))
	touched := st.Touched
	dix = dix[:chunk]
	for _, i := range sel {
		g := dix[i&(chunk-1)]
		// g is a slot of st (fillDirectInPlace), st.Vals two words a slot.
		row := (*[2]int64)(unsafe.Add(vb, uintptr(g)*16))
		if row[0] == 0 {
			row[1] = id
			touched = append(touched, g)
		}
		row[0]++
		row[1] += int64(*(*T)(unsafe.Add(col, int(i)*stride)))
	}
	st.Touched = touched
}

func sumFFused[T float32 | float64](st *window.GroupState, dix, sel []int32, cd []byte, ts int, ident []int64, args []aggArg) {
	e := args[0].expr
	sumFRows[T](st, dix, sel, column(cd, ts, e.off, int(unsafe.Sizeof(T(0))), sel), ts, ident[0])
}

// sumFFusedReg folds a float expression, evaluated into its register.
func sumFFusedReg(st *window.GroupState, dix, sel []int32, cd []byte, ts int, ident []int64, args []aggArg) {
	e := args[0].expr
	e.eval(cd, ts, sel)
	sumFRows[float64](st, dix, sel, unsafe.Pointer(unsafe.SliceData(e.flts[:chunk])), 8, ident[0])
}

// sumFRows is sumRows for a float sum: the values widened to float64 and
// added in tuple order, as the fold loops do (bit for bit).
func sumFRows[T float32 | float64](st *window.GroupState, dix, sel []int32, col unsafe.Pointer, stride int, id int64) {
	vb := unsafe.Pointer(unsafe.SliceData(st.Vals))
	touched := st.Touched
	dix = dix[:chunk]
	for _, i := range sel {
		g := dix[i&(chunk-1)]
		row := (*[2]int64)(unsafe.Add(vb, uintptr(g)*16))
		if row[0] == 0 {
			row[1] = id
			touched = append(touched, g)
		}
		row[0]++
		s := math.Float64frombits(uint64(row[1])) + float64(*(*T)(unsafe.Add(col, int(i)*stride)))
		row[1] = int64(math.Float64bits(s))
	}
	st.Touched = touched
}

// fillDirectInPlace computes the direct slot of each tuple of sel (k.dix)
// under the current mapping, reading plain key columns in place (other
// key parts are evaluated into their registers first); it reports whether
// every tuple lies inside the mapping.
func (k *aggregateKernel) fillDirectInPlace(cd []byte, ts int, sel []int32) bool {
	dm := &k.dm
	if k.cols != nil {
		return k.cols.slots(dm, k.dix, sel, cd, ts)
	}
	ok := true
	mul := int32(1)
	for j := range k.keys {
		kp := &k.keys[j]
		e, lo, n := kp.expr, dm.lo[j], uint64(dm.n[j])
		var in bool
		switch {
		case e.kind == vColI32:
			in = slotPart[int32](k.dix, sel, column(cd, ts, e.off, 4, sel), ts, lo, n, mul, j == 0)
		case e.kind == vColI64:
			in = slotPart[int64](k.dix, sel, column(cd, ts, e.off, 8, sel), ts, lo, n, mul, j == 0)
		default:
			e.eval(cd, ts, sel)
			// An expression's key part is 8 bytes (query.KeyWidth): its
			// register's values as they are.
			in = slotPart[int64](k.dix, sel, unsafe.Pointer(unsafe.SliceData(e.ints[:chunk])), 8, lo, n, mul, j == 0)
		}
		ok = ok && in
		mul *= int32(dm.n[j])
	}
	return ok
}

// slotPart sets (first) or adds to each tuple's slot in dix its part's
// offset from lo times mul, the part of type T at col + i*stride; it
// reports whether every offset is below n.
func slotPart[T int32 | int64](dix, sel []int32, col unsafe.Pointer, stride int, lo int64, n uint64, mul int32, first bool) bool {
	dix = dix[:chunk]
	var mx uint64 // the largest offset: all are below n where it is
	if first {
		for _, i := range sel {
			d := uint64(int64(*(*T)(unsafe.Add(col, int(i)*stride))) - lo)
			mx = max(mx, d)
			dix[i&(chunk-1)] = int32(d) * mul
		}
		return mx < n
	}
	for _, i := range sel {
		d := uint64(int64(*(*T)(unsafe.Add(col, int(i)*stride))) - lo)
		mx = max(mx, d)
		dix[i&(chunk-1)] += int32(d) * mul
	}
	return mx < n
}

// keyedFold is the fused pass of a single key that is an integer column:
// the slot is the key's offset from lo, read in place in the same loop.
// It counts and folds the tuples sel of chunk cd into direct table st
// from the first up to the first whose key lies outside [lo, lo+n), and
// returns how many it took.
type keyedFold func(st *window.GroupState, sel []int32, cd []byte, ts int, lo int64, n uint64, koff int, ident []int64, args []aggArg) int

// keyedFoldOf returns the keyed pass of a key column of type int64 (wide)
// or int32 and the aggregates args over rows of words words; nil where
// there is none.
func keyedFoldOf(wide bool, args []aggArg, words int) keyedFold {
	if len(args) == 0 {
		if wide {
			return countKeyed[int64]
		}
		return countKeyed[int32]
	}
	if len(args) > 1 || words != 2 {
		return nil
	}
	type pick struct {
		wide bool
		kind window.AggKind
		arg  vkind
	}
	return map[pick]keyedFold{
		{false, window.AggAdd, vColI32}:  sumKeyed[int32, int32],
		{false, window.AggAdd, vColI64}:  sumKeyed[int32, int64],
		{true, window.AggAdd, vColI32}:   sumKeyed[int64, int32],
		{true, window.AggAdd, vColI64}:   sumKeyed[int64, int64],
		{false, window.AggAddF, vColF32}: sumFKeyed[int32, float32],
		{false, window.AggAddF, vColF64}: sumFKeyed[int32, float64],
		{true, window.AggAddF, vColF32}:  sumFKeyed[int64, float32],
		{true, window.AggAddF, vColF64}:  sumFKeyed[int64, float64],
	}[pick{wide, args[0].kind, args[0].expr.kind}]
}

// firstRun reports whether sel is 0, 1, ..., len(sel)-1 (ascending, so its
// last index tells): every tuple from the chunk's first, read without it.
func firstRun(sel []int32) bool { return int(sel[len(sel)-1]) == len(sel)-1 }

func countKeyed[K int32 | int64](st *window.GroupState, sel []int32, cd []byte, ts int, lo int64, n uint64, koff int, _ []int64, _ []aggArg) int {
	kcol := column(cd, ts, koff, int(unsafe.Sizeof(K(0))), sel)
	vb := unsafe.Pointer(unsafe.SliceData(st.Vals))
	for j, i := range sel {
		d := uint64(int64(*(*K)(unsafe.Add(kcol, int(i)*ts))) - lo)
		if d >= n {
			return j
		}
		// d is a slot of st: a direct table of n one-word rows.
		c := (*int64)(unsafe.Add(vb, uintptr(d)*8))
		if *c == 0 {
			st.Touched = append(st.Touched, int32(d))
		}
		*c++
	}
	return len(sel)
}

func sumKeyed[K int32 | int64, T int32 | int64](st *window.GroupState, sel []int32, cd []byte, ts int, lo int64, n uint64, koff int, ident []int64, args []aggArg) int {
	kcol := column(cd, ts, koff, int(unsafe.Sizeof(K(0))), sel)
	acol := column(cd, ts, args[0].expr.off, int(unsafe.Sizeof(T(0))), sel)
	vb := unsafe.Pointer(unsafe.SliceData(st.Vals))
	id := ident[0]
	if firstRun(sel) {
		// o steps by the tuple size: no multiplication, and no pointer
		// formed past the chunk.
		o := 0
		for j := range sel {
			d := uint64(int64(*(*K)(unsafe.Add(kcol, o))) - lo)
			if d >= n {
				return j
			}
			// d is a slot of st: a direct table of n two-word rows.
			row := (*[2]int64)(unsafe.Add(vb, uintptr(d)*16))
			if row[0] == 0 {
				row[1] = id
				st.Touched = append(st.Touched, int32(d))
			}
			row[0]++
			row[1] += int64(*(*T)(unsafe.Add(acol, o)))
			o += ts
		}
		return len(sel)
	}
	for j, i := range sel {
		o := int(i) * ts
		d := uint64(int64(*(*K)(unsafe.Add(kcol, o))) - lo)
		if d >= n {
			return j
		}
		row := (*[2]int64)(unsafe.Add(vb, uintptr(d)*16))
		if row[0] == 0 {
			row[1] = id
			st.Touched = append(st.Touched, int32(d))
		}
		row[0]++
		row[1] += int64(*(*T)(unsafe.Add(acol, o)))
	}
	return len(sel)
}

func sumFKeyed[K int32 | int64, T float32 | float64](st *window.GroupState, sel []int32, cd []byte, ts int, lo int64, n uint64, koff int, ident []int64, args []aggArg) int {
	kcol := column(cd, ts, koff, int(unsafe.Sizeof(K(0))), sel)
	acol := column(cd, ts, args[0].expr.off, int(unsafe.Sizeof(T(0))), sel)
	vb := unsafe.Pointer(unsafe.SliceData(st.Vals))
	id := ident[0]
	if firstRun(sel) {
		o := 0
		for j := range sel {
			d := uint64(int64(*(*K)(unsafe.Add(kcol, o))) - lo)
			if d >= n {
				return j
			}
			row := (*[2]int64)(unsafe.Add(vb, uintptr(d)*16))
			if row[0] == 0 {
				row[1] = id
				st.Touched = append(st.Touched, int32(d))
			}
			row[0]++
			s := math.Float64frombits(uint64(row[1])) + float64(*(*T)(unsafe.Add(acol, o)))
			row[1] = int64(math.Float64bits(s))
			o += ts
		}
		return len(sel)
	}
	for j, i := range sel {
		o := int(i) * ts
		d := uint64(int64(*(*K)(unsafe.Add(kcol, o))) - lo)
		if d >= n {
			return j
		}
		row := (*[2]int64)(unsafe.Add(vb, uintptr(d)*16))
		if row[0] == 0 {
			row[1] = id
			st.Touched = append(st.Touched, int32(d))
		}
		row[0]++
		s := math.Float64frombits(uint64(row[1])) + float64(*(*T)(unsafe.Add(acol, o)))
		row[1] = int64(math.Float64bits(s))
	}
	return len(sel)
}
