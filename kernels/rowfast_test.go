package kernels

import (
	"encoding/binary"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
	"github.com/saber-hx/saber-hx/strview"
)

// TestSplitAtByte: the word-at-a-time split gives the general
// splitIndex's piece for every index, over strings of separators and
// other bytes at every length around a word's.
func TestSplitAtByte(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 33))
	for range 5000 {
		n := r.IntN(40)
		b := make([]byte, n)
		for i := range b {
			b[i] = "ab/\x00\xff"[r.IntN(5)]
		}
		for i := int64(0); i < 14; i++ {
			want, wantOK := splitIndex(b, []byte("/"), i)
			got, ok := splitAtByte(b, '/', i)
			require.Equal(t, wantOK, ok, "%q %d", b, i)
			assert.Equal(t, string(want), string(got), "%q %d", b, i)
		}
	}
}

func FuzzSplitAtByte(f *testing.F) {
	f.Add([]byte("https://www.nexmark.com/abc/de_f/g/item.htm?query=1"), byte('/'), int64(4))
	f.Add([]byte("a,b,,c,,,,,,,,,,,d"), byte(','), int64(9))
	f.Fuzz(func(t *testing.T, s []byte, c byte, i int64) {
		if i < 0 {
			return
		}
		want, wantOK := splitIndex(s, []byte{c}, i)
		got, ok := splitAtByte(s, c, i)
		require.Equal(t, wantOK, ok)
		assert.Equal(t, want, got)
	})
}

// TestRowFastPathsMatchReference: the row evaluator's fast shapes (a
// function of one column and literals, comparisons and IN with literals,
// LOWER/UPPER against literals, a CASE over one value, AND and OR in
// cost order) give the reference evaluator's value for every tuple: ASCII
// and non-ASCII strings (whose other case is another length, or ASCII),
// NULLs, literals either side, NULL in the list. The vectorised WHERE
// keeps the tuples the reference's WHERE does.
func TestRowFastPathsMatchReference(t *testing.T) {
	const ts = 40 // x string at 8, n int64 at 24, NULL bits at byte 32
	s, err := query.NewSchema(ts, query.Attribute{Name: "ts", Type: query.Int64},
		query.Attribute{Name: "x", Type: query.String, Offset: 8, Nullable: true, NullBit: 32 * 8},
		query.Attribute{Name: "n", Type: query.Int64, Offset: 24, Nullable: true, NullBit: 32*8 + 1})
	require.NoError(t, err)
	words := []string{"apple", "Apple", "APPLE", "google", "Google", "a/b/c", "/a//b/", "", "é", "É", "café", "CAFÉ",
		"\u212a", "k", "K", "İ", "i", "ǅ", "a very long string/with/more/than/twelve/bytes", "baidu", "Baidu/x"}
	r := rand.New(rand.NewPCG(5, 55))
	const n = 600
	var arena strview.Arena
	defer arena.Free()
	data := make([]byte, n*ts)
	for i := range n {
		tu := data[i*ts : (i+1)*ts]
		x := s.Attrs[1]
		if r.IntN(8) == 0 {
			x.SetNull(tu, true)
		} else {
			strview.Put(tu[8:24], []byte(words[r.IntN(len(words))]), &arena)
		}
		if r.IntN(8) == 0 {
			s.Attrs[2].SetNull(tu, true)
		} else {
			binary.LittleEndian.PutUint64(tu[24:], uint64(r.Int64N(7)-3))
		}
	}
	x, num := query.C("x"), query.C("n")
	lower := func(e query.Expr) query.Expr { return query.Call{Fn: "lower", Args: []query.Expr{e}} }
	upper := func(e query.Expr) query.Expr { return query.Call{Fn: "upper", Args: []query.Expr{e}} }
	eq := func(l, r query.Expr) query.Expr { return query.Compare{Op: query.Eq, L: l, R: r} }
	exprs := []query.Expr{
		eq(lower(x), query.Str("apple")),
		eq(query.Str("apple"), lower(x)),
		query.Compare{Op: query.Ne, L: upper(x), R: query.Str("CAFÉ")},
		eq(lower(x), query.Str("k")),
		eq(lower(x), query.Str("i")),
		eq(lower(x), query.Str("Apple")), // never: a lower-cased string has no capitals
		eq(upper(x), query.Str("ǅ")),
		query.Compare{Op: query.Lt, L: lower(x), R: query.Str("b")}, // not a fast shape: the general path
		eq(lower(x), query.Null{}),
		query.InList{X: lower(x), List: []query.Expr{query.Str("apple"), query.Str("café"), query.Str("k")}},
		query.InList{X: lower(x), List: []query.Expr{query.Str("google"), query.Null{}}, Not: true},
		query.InList{X: upper(x), List: []query.Expr{query.Str("GOOGLE"), query.Str("É")}},
		query.InList{X: upper(x), List: []query.Expr{query.Str("APPLE"), query.Null{}}},
		query.NotExpr{X: query.InList{X: lower(x), List: []query.Expr{query.Str("k"), query.Str("apple")}}},
		query.InList{X: x, List: []query.Expr{query.Str("apple"), query.Str("é"), query.Null{}}},
		query.InList{X: num, List: []query.Expr{query.Int(1), query.Float(2), query.Int(-3)}},
		query.InList{X: num, List: []query.Expr{query.Int(0), query.Null{}}, Not: true},
		query.Compare{Op: query.Lt, L: num, R: query.Int(1)},
		query.Compare{Op: query.Lt, L: query.Int(1), R: num},
		query.Compare{Op: query.Ge, L: num, R: query.Float(0.5)},
		query.Compare{Op: query.Gt, L: x, R: query.Str("b")},
		query.Case{Whens: []query.When{{Cond: eq(lower(x), query.Str("apple")), Then: query.Str("0")},
			{Cond: eq(lower(x), query.Str("google")), Then: query.Str("1")}, {Cond: eq(query.Str("k"), lower(x)), Then: query.Str("2")}},
			Else: query.Call{Fn: "split_index", Args: []query.Expr{x, query.Str("/"), query.Int(1)}}},
		query.Case{Whens: []query.When{{Cond: eq(x, query.Str("apple")), Then: query.Int(1)}, {Cond: eq(x, query.Str("É")), Then: query.Int(2)}}},
		query.Case{Whens: []query.When{{Cond: eq(lower(x), query.Str("apple")), Then: query.Int(1)}, {Cond: eq(lower(x), query.Str("k")), Then: query.Null{}}},
			Else: query.Float(2.5)},
		query.Case{Whens: []query.When{{Cond: eq(lower(x), query.Str("apple")), Then: query.Int(1)}, {Cond: eq(x, query.Str("É")), Then: query.Int(2)}}, Else: num},
		query.Call{Fn: "split_index", Args: []query.Expr{x, query.Str("/"), query.Int(0)}},
		query.Call{Fn: "split_index", Args: []query.Expr{x, query.Str("/"), query.Int(4)}},
		query.Call{Fn: "split_index", Args: []query.Expr{x, query.Str("/"), query.Int(-1)}},
		query.Call{Fn: "split_index", Args: []query.Expr{x, query.Str("/"), num}},
		query.Call{Fn: "split_index", Args: []query.Expr{x, query.Null{}, query.Int(1)}},
		query.Call{Fn: "substring", Args: []query.Expr{x, query.Int(2), query.Int(3)}},
		query.Call{Fn: "concat", Args: []query.Expr{query.Str("<"), x, query.Str(">")}},
		query.Or(query.IsNull{X: query.Call{Fn: "regexp_extract", Args: []query.Expr{x, query.Str("(/|^)b([^/]*)"), query.Int(2)}}, Not: true},
			query.InList{X: lower(x), List: []query.Expr{query.Str("apple"), query.Str("baidu")}}),
		query.And(query.IsNull{X: query.Call{Fn: "split_index", Args: []query.Expr{x, query.Str("/"), query.Int(2)}}},
			query.Compare{Op: query.Gt, L: num, R: query.Int(0)}),
		query.Or(query.Compare{Op: query.Gt, L: num, R: query.Int(1)}, eq(upper(x), query.Str("K")), query.IsNull{X: num}),
	}
	for _, e := range exprs {
		rx, err := compileRow(e, s)
		require.NoError(t, err, "%s", e)
		var sc rowScratch
		boolean := rx.t == query.BoolValue
		var keep []int32
		for i := range n {
			tu := data[i*ts : (i+1)*ts]
			want, err := reference.Eval(e, s, tu)
			require.NoError(t, err, "%s", e)
			got := rx.fn(tu, &sc)
			if !assert.Equal(t, want.Null, got.null, "%s over %q", e, strview.Bytes(tu[8:24])) || want.Null {
				continue
			}
			switch {
			case want.Kind == reference.StringKind:
				assert.Equal(t, want.Str, string(got.s), "%s over %q", e, strview.Bytes(tu[8:24]))
			case want.Float:
				assert.Equal(t, want.F, got.f, "%s", e)
			default:
				assert.Equal(t, want.I, got.i, "%s over %q", e, strview.Bytes(tu[8:24]))
			}
			if boolean && want.I != 0 {
				keep = append(keep, int32(i))
			}
		}
		if !boolean {
			continue
		}
		// The same condition as a WHERE: the vectorised predicate's.
		p, err := compilePred(e, s)
		require.NoError(t, err, "%s", e)
		var got []int32
		for c0 := 0; c0 < n; c0 += chunk {
			cn := min(chunk, n-c0)
			sel, _ := selectRows(p, make([]int32, 0, chunk), data[c0*ts:(c0+cn)*ts], ts)
			for _, i := range sel {
				got = append(got, int32(c0)+i)
			}
		}
		assert.Equal(t, keep, got, "WHERE %s", e)
	}
}

// TestCheapFirst: AND's and OR's terms are ordered by cost, the written
// order kept among equals.
func TestCheapFirst(t *testing.T) {
	regex := query.IsNull{X: query.Call{Fn: "regexp_extract", Args: []query.Expr{query.C("u"), query.Str("a(b)"), query.Int(1)}}, Not: true}
	in := query.InList{X: query.Call{Fn: "lower", Args: []query.Expr{query.C("c")}}, List: []query.Expr{query.Str("a"), query.Str("b")}}
	a, b := query.Compare{Op: query.Eq, L: query.C("a"), R: query.Int(1)}, query.Compare{Op: query.Eq, L: query.C("b"), R: query.Int(2)}
	got := cheapFirst([]query.Expr{regex, a, in, b})
	var names []string
	for _, e := range got {
		names = append(names, e.String())
	}
	assert.Equal(t, []string{a.String(), b.String(), in.String(), regex.String()}, names)
	assert.True(t, strings.Contains(names[3], "REGEXP_EXTRACT"))
}
