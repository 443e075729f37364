package strview

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dictChunk is the rows of one call of IDs in the tests (a kernel's chunk).
const dictChunk = 1024

// TestDictCache: caches over one dictionary give every string
// one number, the dictionary's, whatever the order they meet the strings
// in and however many (the tables grow), the empty string and strings
// that differ in one byte or share a prefix included.
func TestDictCache(t *testing.T) {
	d := NewDict()
	caches := []*DictCache{NewDictCache(d), NewDictCache(d), NewDictCache(d)}
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
			id := c.ID([]byte(s))
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
		c.ID([]byte(s))
	}
	b := []byte(strs[100])
	assert.Zero(t, testing.AllocsPerRun(100, func() { c.ID(b) }))
}

// TestDictCacheViews: a chunk's views (inline and long, each occurrence
// of a long string at an address of its own, NULLs among them) get the
// numbers their strings get as bytes from another cache of the same
// dictionary, over strings that share their lengths and first bytes (the
// views' first words) and differ in one byte anywhere.
func TestDictCacheViews(t *testing.T) {
	d := NewDict()
	byView, byBytes := NewDictCache(d), NewDictCache(d)
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
	a := NewArena(0)
	defer a.Free()
	const ts, off = 24, 8
	data := make([]byte, dictChunk*ts)
	strOf := make([]string, dictChunk)
	nulls := make([]bool, dictChunk)
	dst := make([]int64, dictChunk)
	seen := map[string]bool{}
	for round := range 20 {
		a.Reset()
		for i := range dictChunk {
			strOf[i] = strs[r.IntN(len(strs))]
			Put(data[i*ts+off:], []byte(strOf[i]), a)
			nulls[i] = r.IntN(10) == 0
			if nulls[i] && round%2 == 1 {
				// A NULL's view is not read: a long one's address here
				// would fault.
				binary.LittleEndian.PutUint32(data[i*ts+off:], 40)
				binary.LittleEndian.PutUint64(data[i*ts+off+8:], 0xdead0000)
			}
		}
		var sel []int32
		for i := range dictChunk {
			if r.IntN(4) != 0 {
				sel = append(sel, int32(i))
			}
		}
		n := nulls
		if round%2 == 0 {
			n = nil
		}
		byView.IDs(dst, data, ts, off, sel, n)
		for _, i := range sel {
			if n != nil && n[i] {
				assert.Zero(t, dst[i], "round %d row %d: NULL", round, i)
				continue
			}
			require.Equal(t, byBytes.ID([]byte(strOf[i])), dst[i], "round %d row %d %q", round, i, strOf[i])
			seen[strOf[i]] = true
		}
	}
	assert.Equal(t, len(seen), byView.n, "one slot per string")
	assert.Equal(t, len(strs), d.Len())
	sel := []int32{0, 1, 2, 3}
	assert.Zero(t, testing.AllocsPerRun(100, func() { byView.IDs(dst, data, ts, off, sel, nil) }))
}

// BenchmarkDictCacheIDs: IDs alone over a chunk of 48-byte tuples whose
// key is one of 1,000 strings, inline (9 bytes) or out of line (25).
func BenchmarkDictCacheIDs(b *testing.B) {
	a := NewArena(0)
	defer a.Free()
	for _, c := range []struct {
		name string
		form string
	}{{"short", "cust-%04d"}, {"long", "customer-%04d-of-the-shop"}} {
		b.Run(c.name, func(b *testing.B) {
			const ts = 48
			data := make([]byte, dictChunk*ts)
			sel := make([]int32, dictChunk)
			for i := range dictChunk {
				PutRef(data[i*ts+32:], a.Copy(fmt.Appendf(nil, c.form, (i*7919)%1000)))
				sel[i] = int32(i)
			}
			ic := NewDictCache(NewDict())
			dst := make([]int64, dictChunk)
			ic.IDs(dst, data, ts, 32, sel, nil)
			b.ReportAllocs()
			for b.Loop() {
				ic.IDs(dst, data, ts, 32, sel, nil)
			}
			b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N)/dictChunk, "ns/tuple")
		})
	}
}

// TestDictCachePut: Put writes a view of the string that stays valid when
// the string's own memory is reused (a decoder's line), pointing into the
// dictionary where the string is long, and gives the number ID gives.
func TestDictCachePut(t *testing.T) {
	d := NewDict()
	put, byBytes := NewDictCache(d), NewDictCache(d)
	r := rand.New(rand.NewPCG(5, 6))
	line := make([]byte, 64)
	views := map[string][]byte{}
	for range 5000 {
		n := r.IntN(40)
		s := fmt.Appendf(line[:0], "%040d", r.IntN(300))[40-n:]
		want := string(s)
		v := make([]byte, Size)
		id := put.Put(v, s)
		clear(line) // the decoder's next line
		require.Equal(t, want, string(Bytes(v)))
		assert.Equal(t, byBytes.ID([]byte(want)), id, "%q", want)
		if old, ok := views[want]; ok {
			assert.Equal(t, old, v, "one view per string: %q", want)
		}
		views[want] = v
		if n > MaxInline {
			assert.Equal(t, unsafe.SliceData(d.String(id)), unsafe.SliceData(Bytes(v)), "points into the dictionary")
		}
	}
	s := []byte("a string longer than twelve bytes")
	v := make([]byte, Size)
	put.Put(v, s)
	assert.Zero(t, testing.AllocsPerRun(100, func() { put.Put(v, s) }))
}

// TestDictRestore: users of one dictionary restore their snapshots of it,
// taken at different moments (each a prefix of the last), in any order;
// a snapshot that disagrees with what the dictionary holds is an error.
func TestDictRestore(t *testing.T) {
	src := NewDict()
	c := NewDictCache(src)
	var snaps [][][]byte
	for i := range 30 {
		c.ID(fmt.Appendf(nil, "string number %d", i))
		if i%10 == 9 {
			snaps = append(snaps, src.AppendAll(nil))
		}
	}
	for _, order := range [][]int{{0, 1, 2}, {2, 0, 1}, {1, 2, 0}} {
		d := NewDict()
		for _, k := range order {
			require.NoError(t, d.Restore(snaps[k]))
		}
		require.Equal(t, src.Len(), d.Len())
		for id := int64(1); id <= int64(d.Len()); id++ {
			assert.Equal(t, src.String(id), d.String(id))
		}
		// A cache of the restored dictionary numbers as the snapshot did.
		assert.Equal(t, int64(7), NewDictCache(d).ID([]byte("string number 6")))
	}
	d := NewDict()
	require.NoError(t, d.Restore(snaps[0]))
	other := [][]byte{[]byte("another string")}
	assert.ErrorContains(t, d.Restore(other), "number 1")
	assert.ErrorContains(t, NewDict().Restore([][]byte{[]byte("x"), []byte("x")}), "numbered twice")
}
