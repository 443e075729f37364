package reference

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
)

// layout writes vals as a tuple of schema s, as an engine would: strings
// as views (long ones in a), NULLs as their bits over a slot of garbage.
func layout(a *mmapArena, s *query.Schema, vals []Value) []byte {
	t := make([]byte, s.TupleSize)
	le := binary.LittleEndian
	for i, at := range s.Attrs {
		v := vals[i]
		b := t[at.Offset : at.Offset+at.Size]
		if v.Null {
			at.SetNull(t, true)
			for j := range b {
				b[j] = 0xA5
			}
			continue
		}
		switch at.Type {
		case query.Int64:
			le.PutUint64(b, uint64(v.I))
		case query.Int32:
			le.PutUint32(b, uint32(v.I))
		case query.Float64:
			le.PutUint64(b, math.Float64bits(v.F))
		case query.String:
			a.putView(b, v.Str)
		case query.Bytes:
			copy(b, v.Str)
		}
	}
	return t
}

func TestStatelessStrings(t *testing.T) {
	a := newArena(t)
	const long = "a string of more than twelve bytes"
	q := &query.Query{Name: "str", Schema: nullSchema(t),
		Where: query.IsNull{X: query.C("k"), Not: true},
		Project: []query.Projection{
			{Expr: query.C("s"), As: "s"},
			{Expr: query.Call{Fn: "upper", Args: []query.Expr{query.C("s")}}, As: "u"},
			{Expr: query.Call{Fn: "concat", Args: []query.Expr{query.C("s"), S("!")}}, As: "bang"},
			{Expr: query.C("x"), As: "x"},
			{Expr: query.C("b"), As: "b"},
			{Expr: query.Add(query.C("at"), I(1)), As: "at1"},
			{Expr: query.Call{Fn: "char_length", Args: []query.Expr{query.C("s")}}, As: "len"},
			{Expr: query.Call{Fn: "coalesce", Args: []query.Expr{query.C("s"), S("none")}}, As: "c"},
			{Expr: query.Mul(query.C("k"), Fl(0.5)), As: "half"},
		}}
	out, err := q.OutputSchema()
	require.NoError(t, err)
	res := run(t, q, ndata(a,
		nt{ts: 1, s: sp("héllo"), x: ip(-3), b: bp(true), at: ip(1000), k: 3},
		nt{ts: 2, k: 4}, // every nullable value NULL
		nt{ts: 3, s: sp(long), x: ip(0), b: bp(false), at: ip(-1), k: -1},
	))
	assert.Nil(t, res.Tuples, "a String output has no bytes here")
	assert.Equal(t, [][]Value{
		{Int(1), Str("héllo"), Str("HÉLLO"), Str("héllo!"), Int(-3), Bool(true), Time(1001), Int(5), Str("héllo"), Float(1.5)},
		{Int(2), Null(StringKind), Null(StringKind), Null(StringKind), Null(IntKind), Null(BoolKind), Null(TimeKind), Null(IntKind), Str("none"), Float(2)},
		{Int(3), Str(long), Str("A STRING OF MORE THAN TWELVE BYTES"), Str(long + "!"), Int(0), Bool(false), Time(0), Int(34), Str(long), Float(-0.5)},
	}, res.Values)
	assert.Equal(t, Counts{Tuples: 3, Counted: 3}, res.Counts)

	// An engine's output of the same values, laid out as views, decodes to
	// them, and Diff finds none.
	var tuples []byte
	for _, v := range res.Values {
		tuples = append(tuples, layout(a, out, v)...)
	}
	got := &Result{Tuples: tuples, Counts: res.Counts}
	assert.Equal(t, "", Diff(q, res, got, 0))
	dec, err := DecodeTuples(out, tuples)
	require.NoError(t, err)
	assert.Equal(t, res.Values, dec)
}

// TestStatelessNullableNumbers: without strings the output has bytes, a
// NULL as its bit over a zeroed slot; Diff compares the values, so that an
// engine's slot under a NULL may hold anything.
func TestStatelessNullableNumbers(t *testing.T) {
	a := newArena(t)
	q := &query.Query{Name: "num", Schema: nullSchema(t), Project: []query.Projection{
		{Expr: query.Add(query.C("x"), I(1)), As: "x1"},
		{Expr: query.C("b"), As: "b"},
		{Expr: query.Call{Fn: "coalesce", Args: []query.Expr{query.C("x"), I(0)}}, As: "c"},
		{Expr: query.C("at"), As: "at"},
	}}
	out, err := q.OutputSchema()
	require.NoError(t, err)
	// timestamp @0, x1 @8, b @16 (int32), c @20, at @28, NULL bits at byte 36: x1 bit 0, b bit 1, at bit 2.
	require.Equal(t, 37, out.TupleSize)
	res := run(t, q, ndata(a, nt{ts: 7, x: ip(41), b: bp(true), at: ip(5)}, nt{ts: 8}))
	le := binary.LittleEndian
	want := make([]byte, 74)
	le.PutUint64(want[0:], 7)
	le.PutUint64(want[8:], 42)
	le.PutUint32(want[16:], 1)
	le.PutUint64(want[20:], 41)
	le.PutUint64(want[28:], 5)
	le.PutUint64(want[37:], 8)
	want[37+36] = 0b111 // x1, b and at NULL; c is 0
	assert.Equal(t, want, res.Tuples)
	assert.Equal(t, [][]Value{
		{Int(7), Int(42), Bool(true), Int(41), Time(5)},
		{Int(8), Null(IntKind), Null(BoolKind), Int(0), Null(TimeKind)},
	}, res.Values)
	assert.Equal(t, 37, OutputTupleSize(q))

	got := &Result{Tuples: append([]byte(nil), res.Tuples...), Counts: res.Counts}
	got.Tuples[37+8] = 0xFF // under x1's NULL
	assert.Equal(t, "", Diff(q, res, got, 0))
	got.Tuples[20] = 40 // c of tuple 0
	assert.Contains(t, Diff(q, res, got, 0), `output tuple 0: attribute 3 ("c"): want 41 (int), got 40 (int)`)
	got.Tuples[20] = 41
	got.Tuples[37+36] = 0b110 // x1 not NULL
	assert.Contains(t, Diff(q, res, got, 0), `output tuple 1: attribute 1 ("x1"): want NULL (int), got`)
}

func TestSelectStarAndUDFValues(t *testing.T) {
	a := newArena(t)
	s := nullSchema(t)
	in := ndata(a, nt{ts: 1, s: sp("a string that is long"), x: ip(2), k: 9}, nt{ts: 2, k: 10})
	res := run(t, &query.Query{Name: "star", Schema: s}, in)
	assert.Equal(t, in, res.Tuples, "SELECT * outputs the input's bytes")
	assert.Equal(t, [][]Value{
		{Int(1), Int(2), Null(FloatKind), Str("a string that is long"), Null(BoolKind), Int(9), Null(TimeKind)},
		{Int(2), Null(IntKind), Null(FloatKind), Null(StringKind), Null(BoolKind), Int(10), Null(TimeKind)},
	}, res.Values)

	// A UDF runs over batches of one tuple: here two output tuples per
	// input tuple, ts and k and ts and 2k.
	outS, err := query.NewSchema(16, query.Attribute{Name: "ts", Type: query.Int64}, query.Attribute{Name: "v", Type: query.Int64, Offset: 8})
	require.NoError(t, err)
	udf := &query.UDF{Name: "twice", Output: outS, Fn: func(in []byte, size int, out []byte) []byte {
		for o := 0; o < len(in); o += size {
			k := int64(int32(binary.LittleEndian.Uint32(in[o+44:])))
			out = append(out, in[o:o+8]...)
			out = binary.LittleEndian.AppendUint64(out, uint64(k))
			out = append(out, in[o:o+8]...)
			out = binary.LittleEndian.AppendUint64(out, uint64(2*k))
		}
		return out
	}}
	res = run(t, &query.Query{Name: "udf", Schema: s, Where: query.Cmp(query.C("k"), query.Gt, I(9)), UDF: udf}, in)
	assert.Equal(t, [][]Value{{Int(2), Int(10)}, {Int(2), Int(20)}}, res.Values)
	assert.Equal(t, le64(2, 10, 2, 20), res.Tuples)
	assert.Equal(t, Counts{Tuples: 2, Filtered: 1, Counted: 1}, res.Counts)
}

func TestDecodeTuples(t *testing.T) {
	a := newArena(t)
	s, err := query.NewSchema(57,
		query.Attribute{Name: "ts", Type: query.Int64, Logical: query.Time},
		query.Attribute{Name: "s", Type: query.String, Offset: 8},
		query.Attribute{Name: "n", Type: query.String, Offset: 24, Nullable: true, NullBit: 56 * 8},
		query.Attribute{Name: "b", Type: query.Int32, Logical: query.Boolean, Offset: 40},
		query.Attribute{Name: "f", Type: query.Float32, Offset: 44},
		query.Attribute{Name: "id", Type: query.Bytes, Offset: 48, Size: 8},
	)
	require.NoError(t, err)
	le := binary.LittleEndian
	tuple := func(ts int64, str string, null bool, n string, b uint32) []byte {
		tu := make([]byte, 57)
		le.PutUint64(tu, uint64(ts))
		a.putView(tu[8:24], str)
		if null {
			tu[56] = 1
			for i := 24; i < 40; i++ {
				tu[i] = 0xEE // garbage under the NULL: never read
			}
		} else {
			a.putView(tu[24:40], n)
		}
		le.PutUint32(tu[40:], b)
		le.PutUint32(tu[44:], math.Float32bits(0.1))
		copy(tu[48:], "8 bytes!")
		return tu
	}
	twelve, thirteen := "exactly 12 b", "exactly 13 by"
	big := string(make([]byte, 5000)) + "end" // zeros inside a long string are bytes like any
	var in []byte
	in = append(in, tuple(5, "", false, "x", 1)...)
	in = append(in, tuple(-5, twelve, true, "", 0)...)
	in = append(in, tuple(6, thirteen, false, big, 1)...)
	in = append(in, tuple(7, "日本語", false, "a\x00b", 0)...)
	vals, err := DecodeTuples(s, in)
	require.NoError(t, err)
	f32 := Float(float64(float32(0.1)))
	id := Bytes([]byte("8 bytes!"))
	assert.Equal(t, [][]Value{
		{Time(5), Str(""), Str("x"), Bool(true), f32, id},
		{Time(-5), Str(twelve), Null(StringKind), Bool(false), f32, id},
		{Time(6), Str(thirteen), Str(big), Bool(true), f32, id},
		{Time(7), Str("日本語"), Str("a\x00b"), Bool(false), f32, id},
	}, vals)
	// The long string's view holds its length, its first 4 bytes, an address.
	v := in[57*2+8 : 57*2+24]
	assert.Equal(t, uint32(13), le.Uint32(v))
	assert.Equal(t, "exac", string(v[4:8]))
	assert.NotZero(t, le.Uint64(v[8:]))

	// Malformed input is an error naming the tuple.
	bad := func(mutate func(tu []byte)) error {
		tu := tuple(1, thirteen, false, "short", 1)
		mutate(tu)
		_, err := DecodeTuples(s, append(tuple(0, "", false, "", 0), tu...))
		return err
	}
	assert.ErrorContains(t, bad(func(tu []byte) { tu[24+4+6] = 'x' }), "tuple 1 (byte offset 57)")
	assert.ErrorContains(t, bad(func(tu []byte) { tu[24+4+6] = 'x' }), "padding byte 10")
	assert.ErrorContains(t, bad(func(tu []byte) { clear(tu[16:24]) }), "at address 0")
	assert.ErrorContains(t, bad(func(tu []byte) { tu[12] = 'X' }), "prefix")
	assert.ErrorContains(t, bad(func(tu []byte) { le.PutUint32(tu[40:], 2) }), `boolean column "b" holds 2`)
	_, err = DecodeTuples(s, in[:57*2+1])
	assert.ErrorContains(t, err, "1 trailing bytes")
	_, err = DecodeTuples(nil, in)
	assert.Error(t, err)
	vals, err = DecodeTuples(s, nil)
	require.NoError(t, err)
	assert.Empty(t, vals)
}

func TestDiffValues(t *testing.T) {
	a := newArena(t)
	q := &query.Query{Name: "dv", Schema: nullSchema(t), Project: []query.Projection{
		{Expr: query.C("s"), As: "s"},
		{Expr: query.C("x"), As: "x"},
		{Expr: query.C("f"), As: "f"},
	}}
	want := run(t, q, ndata(a, nt{ts: 1, s: sp("abc"), x: ip(5), f: fp(1000)}, nt{ts: 2}))
	clone := func() *Result {
		c := &Result{Counts: want.Counts}
		for _, v := range want.Values {
			c.Values = append(c.Values, append([]Value(nil), v...))
		}
		return c
	}
	assert.Equal(t, "", Diff(q, want, clone(), 0))

	got := clone()
	got.Values[0][1] = Str("abd")
	assert.Equal(t, `output tuple 0: attribute 1 ("s"): want "abc" (string), got "abd" (string)`, Diff(q, want, got, 0))
	got = clone()
	got.Values[1][2] = Int(5) // a value for a NULL
	assert.Equal(t, `output tuple 1: attribute 2 ("x"): want NULL (int), got 5 (int)`, Diff(q, want, got, 0))
	got = clone()
	got.Values[0][2] = Null(IntKind) // a NULL for a value
	assert.Equal(t, `output tuple 0: attribute 2 ("x"): want 5 (int), got NULL (int)`, Diff(q, want, got, 0))
	got = clone()
	got.Values[0][1] = Str("") // the empty string is not NULL
	got.Values[1][1] = Str("")
	assert.Contains(t, Diff(q, want, got, 0), "output tuple 0")
	got = clone()
	got.Values[0][3] = Float(1000 + 1e-7) // floats with the tolerance
	assert.Equal(t, "", Diff(q, want, got, 1e-9))
	assert.Contains(t, Diff(q, want, got, 0), `attribute 3 ("f")`)
	got = clone()
	got.Values[0][0] = Time(1) // the kind counts
	assert.Contains(t, Diff(q, want, got, 0), "want 1 (int), got 1 (time 1970-01-01 00:00:00.001)")
	got = clone()
	got.Values = got.Values[:1]
	assert.Contains(t, Diff(q, want, got, 0), "want 2 tuples, got 1: tuple 1")
	assert.Contains(t, Diff(q, got, want, 0), "want 1 tuples, got 2: tuple 1")
	got = clone()
	got.Counts.Filtered++
	assert.Contains(t, Diff(q, want, got, 0), "counts differ")
	got = &Result{Tuples: []byte{1, 2, 3}, Counts: want.Counts}
	assert.Contains(t, Diff(q, want, got, 0), "got: reference: DecodeTuples")

	// Rows: a NULL aggregate against a value, and a time against an integer.
	rq := &query.Query{Name: "rows", Schema: nullSchema(t), Window: query.Tumbling(10),
		Aggregates: []query.Aggregate{agg(query.Sum, query.C("x"), "s"), agg(query.Max, query.C("at"), "m")}}
	rw := run(t, rq, ndata(a, nt{ts: 1, at: ip(5)}))
	require.Equal(t, []Row{row(0, 10, "", Null(IntKind), Time(5))}, rw.Rows)
	rg := &Result{Rows: []Row{row(0, 10, "", Int(0), Time(5))}, Counts: rw.Counts}
	assert.Contains(t, Diff(rq, rw, rg, 0), `value 0 (sum "s"): want NULL (int), got 0 (int)`)
	rg.Rows[0].Values = []Value{Null(IntKind), Int(5)}
	assert.Contains(t, Diff(rq, rw, rg, 0), `value 1 (max "m"): want 5 (time 1970-01-01 00:00:00.005), got 5 (int)`)
	rg.Rows[0].Values = []Value{Null(IntKind), Time(5)}
	assert.Equal(t, "", Diff(rq, rw, rg, 0))
}
