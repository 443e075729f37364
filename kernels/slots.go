package kernels

import "unsafe"

// slotCols is the one-pass slot computation of a key of two or three
// parts, each an int32 column, the last one perhaps divided by a constant
// (lrb1's highway, direction, position/5280): every part read in place and
// the division done by its magic number in the same loop, so that no part
// goes through a register or a pass of its own. Chosen when the kernel is
// made (slotColsOf); nil where the key has another shape.
type slotCols struct {
	offs [3]int
	np   int  // parts: 2 or 3
	div  bool // the last part is its column divided by magic, shift, neg
	m    uint64
	s    uint
	neg  int64
}

// slotColsOf returns the one-pass slot computation of the key parts ks,
// nil where they are not two or three int32 columns, the last perhaps
// divided by a constant that is not a power of two.
func slotColsOf(ks []keyPart) *slotCols {
	if len(ks) < 2 || len(ks) > 3 {
		return nil
	}
	sc := &slotCols{np: len(ks)}
	for j := range ks {
		e := ks[j].expr
		switch {
		case e == nil:
			return nil
		case e.kind == vColI32:
			sc.offs[j] = e.off
		case j == len(ks)-1 && e.kind == vArith && e.divide && e.l.kind == vColI32 && e.div.kind == divMagic:
			sc.offs[j], sc.div = e.l.off, true
			sc.m, sc.s, sc.neg = e.div.magic, e.div.shift, e.div.neg
		default:
			return nil
		}
	}
	return sc
}

// slots computes the direct slot of each tuple of sel (dix) under mapping
// dm, reporting whether every tuple lies inside it.
func (sc *slotCols) slots(dm *directMap, dix, sel []int32, cd []byte, ts int) bool {
	base := column(cd, ts, 0, ts, sel)
	dix = dix[:chunk]
	o0, o1, o2 := sc.offs[0], sc.offs[1], sc.offs[2]
	lo0, lo1 := dm.lo[0], dm.lo[1]
	n0, n1 := uint64(dm.n[0]), uint64(dm.n[1])
	mul1 := int32(dm.n[0])
	at := func(t unsafe.Pointer, off int) int64 { return int64(*(*int32)(unsafe.Add(t, off))) }
	var mx0, mx1, mx2 uint64 // the largest offsets: all are inside where these are
	if sc.np == 2 {
		if !sc.div {
			for _, i := range sel {
				t := unsafe.Add(base, int(i)*ts)
				d0, d1 := uint64(at(t, o0)-lo0), uint64(at(t, o1)-lo1)
				mx0, mx1 = max(mx0, d0), max(mx1, d1)
				dix[i&(chunk-1)] = int32(d0) + int32(d1)*mul1
			}
			return mx0 < n0 && mx1 < n1
		}
		m, s, neg := sc.m, sc.s, sc.neg
		for _, i := range sel {
			t := unsafe.Add(base, int(i)*ts)
			q := magicQuo(at(t, o1), m, s)
			d0, d1 := uint64(at(t, o0)-lo0), uint64((q^neg)-neg-lo1)
			mx0, mx1 = max(mx0, d0), max(mx1, d1)
			dix[i&(chunk-1)] = int32(d0) + int32(d1)*mul1
		}
		return mx0 < n0 && mx1 < n1
	}
	lo2, n2 := dm.lo[2], uint64(dm.n[2])
	mul2 := mul1 * int32(dm.n[1])
	if !sc.div {
		for _, i := range sel {
			t := unsafe.Add(base, int(i)*ts)
			d0, d1, d2 := uint64(at(t, o0)-lo0), uint64(at(t, o1)-lo1), uint64(at(t, o2)-lo2)
			mx0, mx1, mx2 = max(mx0, d0), max(mx1, d1), max(mx2, d2)
			dix[i&(chunk-1)] = int32(d0) + int32(d1)*mul1 + int32(d2)*mul2
		}
		return mx0 < n0 && mx1 < n1 && mx2 < n2
	}
	m, s, neg := sc.m, sc.s, sc.neg
	for _, i := range sel {
		t := unsafe.Add(base, int(i)*ts)
		q := magicQuo(at(t, o2), m, s)
		d0, d1, d2 := uint64(at(t, o0)-lo0), uint64(at(t, o1)-lo1), uint64((q^neg)-neg-lo2)
		mx0, mx1, mx2 = max(mx0, d0), max(mx1, d1), max(mx2, d2)
		dix[i&(chunk-1)] = int32(d0) + int32(d1)*mul1 + int32(d2)*mul2
	}
	return mx0 < n0 && mx1 < n1 && mx2 < n2
}
