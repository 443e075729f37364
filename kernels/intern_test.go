package kernels

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/strview"
)

// TestInternCache: kernels' caches over one dictionary give every string
// one number, the dictionary's, whatever the order they meet the strings
// in and however many (the tables grow), the empty string and strings
// that differ in one byte or share a prefix included.
func TestInternCache(t *testing.T) {
	d := newStrings()
	caches := []*internCache{newInternCache(d), newInternCache(d), newInternCache(d)}
	r := rand.New(rand.NewPCG(1, 2))
	strs := []string{"", "a", "b", "ab", "ba", "a\x00", "\x00a"}
	for i := range 3000 {
		strs = append(strs, fmt.Sprintf("customer-%d-%s", i, string(rune('a'+r.IntN(26)))))
	}
	want := map[string]int64{}
	for round := range 4 {
		for _, i := range r.Perm(len(strs)) {
			s := strs[i]
			c := caches[r.IntN(len(caches))]
			id := c.id([]byte(s))
			require.Positive(t, id, "round %d %q", round, s)
			if w, ok := want[s]; ok {
				require.Equal(t, w, id, "round %d %q", round, s)
			} else {
				want[s] = id
			}
			assert.Equal(t, s, string(d.String(id)))
		}
	}
	assert.Equal(t, len(strs), d.Len())
	for _, c := range caches {
		assert.LessOrEqual(t, 2*c.n, len(c.slots), "at most half full")
	}
	// A hit allocates nothing and takes no lock.
	c := caches[0]
	for _, s := range strs {
		c.id([]byte(s))
	}
	b := []byte(strs[100])
	assert.Zero(t, testing.AllocsPerRun(100, func() { c.id(b) }))
}

// TestInternCacheViews: a chunk's views (inline and long, each occurrence
// of a long string at an address of its own, NULLs among them) get the
// numbers their strings get as bytes from another cache of the same
// dictionary, over strings that share their lengths and first bytes (the
// views' first words) and differ in one byte anywhere.
func TestInternCacheViews(t *testing.T) {
	d := newStrings()
	byView, byBytes := newInternCache(d), newInternCache(d)
	r := rand.New(rand.NewPCG(3, 4))
	var strs []string
	for n := range 40 {
		base := []byte(fmt.Sprintf("%040d", n))[:n]
		strs = append(strs, string(base))
		for p := range n {
			s := append([]byte(nil), base...)
			s[p] = 'x'
			strs = append(strs, string(s))
		}
	}
	a := strview.NewArena(0)
	defer a.Free()
	const ts, off = 24, 8
	data := make([]byte, chunk*ts)
	strOf := make([]string, chunk)
	nulls := make([]bool, chunk)
	dst := make([]int64, chunk)
	seen := map[string]bool{}
	for round := range 20 {
		a.Reset()
		for i := range chunk {
			strOf[i] = strs[r.IntN(len(strs))]
			strview.Put(data[i*ts+off:], []byte(strOf[i]), a)
			nulls[i] = r.IntN(10) == 0
			if nulls[i] && round%2 == 1 {
				// A NULL's view is not read: a long one's address here
				// would fault.
				binary.LittleEndian.PutUint32(data[i*ts+off:], 40)
				binary.LittleEndian.PutUint64(data[i*ts+off+8:], 0xdead0000)
			}
		}
		var sel []int32
		for i := range chunk {
			if r.IntN(4) != 0 {
				sel = append(sel, int32(i))
			}
		}
		n := nulls
		if round%2 == 0 {
			n = nil
		}
		byView.viewIDs(dst, data, ts, off, sel, n)
		for _, i := range sel {
			if n != nil && n[i] {
				assert.Zero(t, dst[i], "round %d row %d: NULL", round, i)
				continue
			}
			require.Equal(t, byBytes.id([]byte(strOf[i])), dst[i], "round %d row %d %q", round, i, strOf[i])
			seen[strOf[i]] = true
		}
	}
	assert.Equal(t, len(seen), byView.n, "one slot per string")
	assert.Equal(t, len(strs), d.Len())
	sel := []int32{0, 1, 2, 3}
	assert.Zero(t, testing.AllocsPerRun(100, func() { byView.viewIDs(dst, data, ts, off, sel, nil) }))
}

// BenchmarkViewIDs: viewIDs alone over a chunk of 48-byte tuples whose
// key is one of 1,000 strings, inline (9 bytes) or out of line (25).
func BenchmarkViewIDs(b *testing.B) {
	a := strview.NewArena(0)
	defer a.Free()
	for _, c := range []struct {
		name string
		form string
	}{{"short", "cust-%04d"}, {"long", "customer-%04d-of-the-shop"}} {
		b.Run(c.name, func(b *testing.B) {
			const ts = 48
			data := make([]byte, chunk*ts)
			sel := make([]int32, chunk)
			for i := range chunk {
				strview.PutRef(data[i*ts+32:], a.Copy(fmt.Appendf(nil, c.form, (i*7919)%1000)))
				sel[i] = int32(i)
			}
			ic := newInternCache(newStrings())
			dst := make([]int64, chunk)
			ic.viewIDs(dst, data, ts, 32, sel, nil)
			b.ReportAllocs()
			for b.Loop() {
				ic.viewIDs(dst, data, ts, 32, sel, nil)
			}
			b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N)/chunk, "ns/tuple")
		})
	}
}
