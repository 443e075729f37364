package reference

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"syscall"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
)

// mmapArena hands out memory outside the Go heap (a private anonymous
// mapping) for the bytes of long strings, so that a view may hold their
// address: checkptr accepts pointers made from it, as it would not from
// the Go heap's.
type mmapArena struct {
	mem []byte
	off int
}

func newArena(t *testing.T) *mmapArena {
	mem, err := syscall.Mmap(-1, 0, 1<<16, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Munmap(mem) })
	return &mmapArena{mem: mem}
}

// copyOut copies s into the arena and returns the copy.
func (a *mmapArena) copyOut(s string) []byte {
	b := a.mem[a.off : a.off+len(s) : a.off+len(s)]
	copy(b, s)
	a.off += len(s)
	return b
}

// putView writes the view of s into dst[:16], its bytes in a when it is
// longer than 12 (the layout of query.String, written here by hand).
func (a *mmapArena) putView(dst []byte, s string) {
	clear(dst[:16])
	binary.LittleEndian.PutUint32(dst, uint32(len(s)))
	if len(s) <= 12 {
		copy(dst[4:16], s)
		return
	}
	b := a.copyOut(s)
	copy(dst[4:8], s)
	binary.LittleEndian.PutUint64(dst[8:], uint64(uintptr(unsafe.Pointer(&b[0]))))
}

// The nullable test schema: 64-byte tuples, NULL bits in byte 56.
//
//	ts int64 @0, x int64 @8 (bit 0), f float64 @16 (bit 1),
//	s string @24 (bit 2), b boolean @40 (bit 3), k int32 @44,
//	at time @48 (bit 4)
func nullSchema(t *testing.T) *query.Schema {
	s, err := query.NewSchema(64,
		query.Attribute{Name: "ts", Type: query.Int64},
		query.Attribute{Name: "x", Type: query.Int64, Offset: 8, Nullable: true, NullBit: 56 * 8},
		query.Attribute{Name: "f", Type: query.Float64, Offset: 16, Nullable: true, NullBit: 56*8 + 1},
		query.Attribute{Name: "s", Type: query.String, Offset: 24, Nullable: true, NullBit: 56*8 + 2},
		query.Attribute{Name: "b", Type: query.Int32, Logical: query.Boolean, Offset: 40, Nullable: true, NullBit: 56*8 + 3},
		query.Attribute{Name: "k", Type: query.Int32, Offset: 44},
		query.Attribute{Name: "at", Type: query.Int64, Logical: query.Time, Offset: 48, Nullable: true, NullBit: 56*8 + 4},
	)
	require.NoError(t, err)
	return s
}

// nt is one tuple of nullSchema; a nil pointer is NULL.
type nt struct {
	ts int64
	x  *int64
	f  *float64
	s  *string
	b  *bool
	k  int32
	at *int64
}

func ip(v int64) *int64     { return &v }
func fp(v float64) *float64 { return &v }
func sp(v string) *string   { return &v }
func bp(v bool) *bool       { return &v }

// bytes lays x out. A NULL's slot holds garbage (0xEE), as the format
// allows: nothing may read it.
func (x nt) bytes(a *mmapArena) []byte {
	le := binary.LittleEndian
	t := make([]byte, 64)
	le.PutUint64(t[0:], uint64(x.ts))
	le.PutUint32(t[44:], uint32(x.k))
	null := func(bit int, slot []byte) {
		t[56] |= 1 << bit
		for i := range slot {
			slot[i] = 0xEE
		}
	}
	if x.x == nil {
		null(0, t[8:16])
	} else {
		le.PutUint64(t[8:], uint64(*x.x))
	}
	if x.f == nil {
		null(1, t[16:24])
	} else {
		le.PutUint64(t[16:], math.Float64bits(*x.f))
	}
	if x.s == nil {
		null(2, t[24:40])
	} else {
		a.putView(t[24:40], *x.s)
	}
	if x.b == nil {
		null(3, t[40:44])
	} else if *x.b {
		le.PutUint32(t[40:], 1)
	}
	if x.at == nil {
		null(4, t[48:56])
	} else {
		le.PutUint64(t[48:], uint64(*x.at))
	}
	return t
}

func ndata(a *mmapArena, ts ...nt) []byte {
	var d []byte
	for _, x := range ts {
		d = append(d, x.bytes(a)...)
	}
	return d
}

// noCols is an env without columns: expressions of constants only.
var noCols = env{
	col:   func(name string) (Value, error) { return Value{}, errors.New("no columns here") },
	scope: func(name string) (query.ValueType, error) { return 0, errors.New("no columns here") },
}

// ev evaluates an expression of constants.
func ev(t *testing.T, e query.Expr) Value {
	t.Helper()
	_, err := query.TypeOf(e, noCols.scope)
	require.NoError(t, err, "%s must type-check", e)
	v, err := noCols.eval(e)
	require.NoError(t, err, "%s", e)
	return v
}

// same asserts got is want: of the same kind, NULL alike, and equal (two
// NaNs are equal; floats exactly, with the sign of a zero).
func same(t *testing.T, want, got Value, msgAndArgs ...any) {
	t.Helper()
	ok := want.kind() == got.kind() && want.Null == got.Null && sameValue(want, got, 0)
	if ok && want.kind() == FloatKind && !want.Null && want.F == 0 {
		ok = math.Signbit(want.F) == math.Signbit(got.F)
	}
	msg := fmt.Sprintf("want %v, got %v", want, got)
	if len(msgAndArgs) > 0 {
		if f, isFormat := msgAndArgs[0].(string); isFormat {
			msg += ": " + fmt.Sprintf(f, msgAndArgs[1:]...)
		}
	}
	assert.True(t, ok, msg)
}

// Constants for the tables.
var (
	T  = query.BoolConst{V: true}
	F  = query.BoolConst{V: false}
	N  = query.Null{T: query.BoolValue}
	NI = query.Null{T: query.IntValue}
	NS = query.Null{T: query.StringValue}
	NF = query.Null{T: query.FloatValue}
	NT = query.Null{T: query.TimeValue}
)

func I(v int64) query.Expr    { return query.Int(v) }
func Fl(v float64) query.Expr { return query.Float(v) }
func S(v string) query.Expr   { return query.Str(v) }

// Ts is a timestamp constant: CAST(ms AS TIMESTAMP(3)).
func Ts(ms int64) query.Expr { return query.Cast{X: query.Int(ms), To: query.TimeValue} }

func call(fn string, args ...query.Expr) query.Expr { return query.Call{Fn: fn, Args: args} }
