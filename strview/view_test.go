package strview

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/testenv"
)

func randBytes(r *rand.Rand, n int, alphabet string) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return b
}

// within reports whether b's bytes lie inside m's.
func within(b, m []byte) bool {
	if len(b) == 0 {
		return true
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(m)))
	return p >= lo && p+uintptr(len(b)) <= lo+uintptr(len(m))
}

func TestPutRoundTripLengths(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	a := NewArena(0)
	defer a.Free()
	for n := 0; n <= 40; n++ {
		s := randBytes(r, n, "abcdefghijklmnopqrstuvwxyz\x00\xff")
		v := make([]byte, Size)
		Put(v, s, a)
		require.Equal(t, n, Len(v), "n=%d", n)
		got := Bytes(v)
		require.Equal(t, s, got, "n=%d", n)
		if n <= MaxInline {
			assert.True(t, within(got, v), "n=%d: an inline string is a sub-slice of its view", n)
			assert.Equal(t, 0, a.Bytes(), "n=%d: an inline string takes nothing from the arena", n)
		} else {
			assert.False(t, within(got, v), "n=%d: a long string is referenced", n)
			assert.True(t, within(got, a.chunks[a.cur-1]), "n=%d: the copy is in the arena", n)
			assert.Equal(t, cap(got), len(got), "n=%d: appending to a referenced string cannot overwrite its neighbour", n)
		}
		prefix := make([]byte, 4)
		copy(prefix, s)
		assert.Equal(t, prefix, v[4:8], "n=%d: the prefix, zero-padded", n)
		a.Reset()
	}
}

func TestInlineBoundary(t *testing.T) {
	a := NewArena(0)
	defer a.Free()
	v := make([]byte, Size)

	Put(v, []byte("abcdefghijkl"), a)
	assert.Equal(t, []byte("\x0c\x00\x00\x00abcdefghijkl"), v, "12 bytes: inline")
	assert.Equal(t, 0, a.Bytes())

	Put(v, []byte("abcdefghijklm"), a)
	assert.Equal(t, []byte("\x0d\x00\x00\x00abcd"), v[:8], "13 bytes: length and prefix")
	assert.Equal(t, 13, a.Bytes(), "13 bytes: copied into the arena")
	addr := binary.LittleEndian.Uint64(v[8:])
	assert.Equal(t, uint64(uintptr(unsafe.Pointer(&a.chunks[0][0]))), addr, "13 bytes: the address of the copy")
	assert.Equal(t, "abcdefghijklm", string(Bytes(v)))
}

func TestPutClearsTheSlot(t *testing.T) {
	a := NewArena(0)
	defer a.Free()
	for n := 0; n <= MaxInline; n++ {
		dirty := bytes.Repeat([]byte{0xff}, Size)
		clean := make([]byte, Size)
		s := bytes.Repeat([]byte{'x'}, n)
		Put(dirty, s, a)
		Put(clean, s, a)
		assert.Equal(t, clean, dirty, "n=%d: the padding is zero whatever the slot held", n)
		assert.True(t, Equal(dirty, clean))
	}
	var zero [Size]byte
	assert.Equal(t, 0, Len(zero[:]), "a zeroed slot is the empty string")
	assert.Empty(t, Bytes(zero[:]))
	empty := make([]byte, Size)
	Put(empty, nil, a)
	assert.True(t, Equal(zero[:], empty))
}

func TestPutRefDoesNotCopy(t *testing.T) {
	a := NewArena(0)
	defer a.Free()
	long := a.Copy([]byte("a string that lives in the arena already"))
	before := a.Bytes()
	v := make([]byte, Size)
	PutRef(v, long)
	assert.Equal(t, before, a.Bytes(), "PutRef takes nothing from the arena")
	got := Bytes(v)
	assert.Equal(t, unsafe.SliceData(long), unsafe.SliceData(got), "the view points at s itself")
	assert.Equal(t, long, got)

	short := []byte("short")
	PutRef(v, short)
	short[0] = 'S'
	assert.Equal(t, "short", string(Bytes(v)), "a short string is copied into the view")
}

func TestLargeStrings(t *testing.T) {
	a := NewArena(0)
	defer a.Free()
	r := rand.New(rand.NewPCG(3, 4))
	sizes := []int{DefaultChunkSize - 1, DefaultChunkSize, DefaultChunkSize + 1, 1 << 20, 64 << 20}
	views := make([][]byte, len(sizes))
	strs := make([][]byte, len(sizes))
	for i, n := range sizes {
		s := make([]byte, n)
		for j := 0; j < n; j += 4096 {
			s[j] = byte(r.Uint32())
		}
		s[n-1] = 'z'
		strs[i] = s
		views[i] = make([]byte, Size)
		Put(views[i], s, a)
	}
	for i, v := range views {
		require.Equal(t, sizes[i], Len(v))
		require.True(t, bytes.Equal(strs[i], Bytes(v)), "size %d", sizes[i])
		require.True(t, EqualBytes(v, strs[i]))
		require.Equal(t, HashBytes(strs[i], 7), Hash(v, 7))
	}
	assert.Len(t, a.large, 2, "only strings bigger than a chunk get their own mapping")
	total := 0
	for _, n := range sizes {
		total += n
	}
	assert.Equal(t, total, a.Bytes())

	chunks := len(a.chunks)
	a.Reset()
	assert.Empty(t, a.large, "Reset unmaps the dedicated mappings")
	assert.Len(t, a.chunks, chunks, "Reset keeps the ordinary chunks")
	assert.Zero(t, a.Bytes())
}

func TestArenaChunks(t *testing.T) {
	a := NewArena(5000)
	defer a.Free()
	require.Equal(t, 8192, a.chunkSize, "rounded up to pages (4 KiB here)")

	assert.Nil(t, a.Alloc(0))
	assert.Panics(t, func() { a.Alloc(-1) })

	// 100-byte strings: 81 to a chunk, the tail of each chunk unused.
	const n, per = 1000, 8192 / 100
	seen := make(map[uintptr]bool)
	for i := 0; i < n; i++ {
		b := a.Alloc(100)
		require.Len(t, b, 100)
		require.Equal(t, 100, cap(b))
		p := uintptr(unsafe.Pointer(&b[0]))
		require.False(t, seen[p], "two allocations overlap")
		seen[p] = true
		b[0], b[99] = byte(i), byte(i)
	}
	assert.Len(t, a.chunks, (n+per-1)/per)
	assert.Equal(t, n*100, a.Bytes())

	mapped := len(a.chunks)
	a.Reset()
	for i := 0; i < n; i++ {
		a.Alloc(100)
	}
	assert.Len(t, a.chunks, mapped, "the same working set maps nothing new after Reset")

	a.Free()
	assert.Empty(t, a.chunks)
	assert.Zero(t, a.Bytes())
	b := a.Copy([]byte("usable after Free"))
	assert.Equal(t, "usable after Free", string(b))
}

func TestZeroArena(t *testing.T) {
	var a Arena
	defer a.Free()
	v := make([]byte, Size)
	Put(v, []byte("longer than twelve bytes"), &a)
	assert.Equal(t, "longer than twelve bytes", string(Bytes(v)))
	assert.Equal(t, DefaultChunkSize, len(a.chunks[0]))
}

func TestPutAfterResetAllocatesNothing(t *testing.T) {
	a := NewArena(0)
	defer a.Free()
	r := rand.New(rand.NewPCG(5, 6))
	strs := make([][]byte, 2000)
	for i := range strs {
		strs[i] = randBytes(r, 13+r.IntN(2000), "abc")
	}
	v := make([]byte, Size)
	round := func() {
		a.Reset()
		for _, s := range strs {
			Put(v, s, a)
		}
	}
	round() // maps the working set
	allocs := testing.AllocsPerRun(20, round)
	assert.Zero(t, allocs, "Put of long strings into a reset arena")

	w := make([]byte, Size)
	Put(w, strs[0], a)
	allocs = testing.AllocsPerRun(100, func() {
		_ = Equal(v, w)
		_ = Compare(v, w)
		_ = Hash(v, 1)
		_ = EqualBytes(v, strs[0])
		_ = Bytes(v)
		PutRef(w, Bytes(v))
	})
	assert.Zero(t, allocs, "the per-value functions")
}

// views returns several views of s: through an arena (twice: two
// addresses), by reference to the first copy, and inline when short.
func views(s []byte, a *Arena) [][]byte {
	v1, v2, v3 := make([]byte, Size), make([]byte, Size), make([]byte, Size)
	Put(v1, s, a)
	Put(v2, s, a)
	PutRef(v3, Bytes(v1))
	return [][]byte{v1, v2, v3}
}

func sign(x int) int {
	switch {
	case x < 0:
		return -1
	case x > 0:
		return 1
	}
	return 0
}

func TestEqualCompareHashAgainstBytes(t *testing.T) {
	a := NewArena(0)
	defer a.Free()
	r := rand.New(rand.NewPCG(7, 8))
	// A small alphabet and shared prefixes, so that most pairs agree on
	// their first bytes and the comparisons get past the prefix; zero
	// bytes test the padding.
	stems := [][]byte{nil, []byte("ab"), []byte("abcd"), []byte("abcdefghijkl"), []byte("abcdefghijklmnop")}
	rounds := testenv.Scale(3000, 30000)
	for i := 0; i < rounds; i++ {
		gen := func() []byte {
			s := append([]byte(nil), stems[r.IntN(len(stems))]...)
			return append(s, randBytes(r, r.IntN(20), "ab\x00\xff")...)
		}
		s1, s2 := gen(), gen()
		if r.IntN(4) == 0 {
			s2 = append([]byte(nil), s1...)
		}
		seed := r.Uint64()
		for _, va := range views(s1, a) {
			for _, vb := range views(s2, a) {
				require.Equal(t, bytes.Equal(s1, s2), Equal(va, vb), "Equal(%q, %q)", s1, s2)
				require.Equal(t, bytes.Compare(s1, s2), sign(Compare(va, vb)), "Compare(%q, %q)", s1, s2)
				require.Equal(t, -bytes.Compare(s1, s2), sign(Compare(vb, va)), "Compare(%q, %q)", s2, s1)
				if bytes.Equal(s1, s2) {
					require.Equal(t, Hash(va, seed), Hash(vb, seed), "Hash(%q)", s1)
				}
			}
			require.True(t, EqualBytes(va, s1))
			require.Equal(t, bytes.Equal(s1, s2), EqualBytes(va, s2), "EqualBytes(%q, %q)", s1, s2)
			require.Equal(t, HashBytes(s1, seed), Hash(va, seed))
		}
		if i%100 == 0 {
			a.Reset()
		}
	}
}

func TestHashSpreads(t *testing.T) {
	const n = 1 << 16
	seen := make(map[uint64]string, n)
	var buckets [256]int
	for i := 0; i < n; i++ {
		// Lengths 2 to 100, each string a counter in a run of 'x's:
		// inputs that differ in few bits, as keys often do.
		s := bytes.Repeat([]byte{'x'}, 2+i%99)
		binary.LittleEndian.PutUint16(s[(i*7)%(len(s)-1):], uint16(i))
		h := HashBytes(s, 42)
		if prev, ok := seen[h]; ok && prev != string(s) {
			t.Fatalf("%q and %q collide", prev, s)
		}
		seen[h] = string(s)
		buckets[h>>56]++
	}
	// 256 buckets of n/256 = 256 expected each: a sound hash keeps
	// every bucket well within 40% of it.
	for i, c := range buckets {
		assert.InDelta(t, n/256, c, 0.4*n/256, "bucket %d of the top byte", i)
	}
	assert.NotEqual(t, HashBytes([]byte("abc"), 1), HashBytes([]byte("abc"), 2), "the seed matters")
	assert.NotEqual(t, HashBytes(nil, 1), HashBytes([]byte{0}, 1), "the length matters")
	assert.NotEqual(t, HashBytes([]byte{0}, 1), HashBytes([]byte{0, 0}, 1))
}

func TestHashAvalanche(t *testing.T) {
	// Flipping one input bit flips each output bit about half the time.
	r := rand.New(rand.NewPCG(11, 12))
	for _, n := range []int{1, 3, 4, 7, 8, 12, 13, 16, 17, 33, 48, 49, 100} {
		var flips [64]int
		trials := 0
		for k := 0; k < 200; k++ {
			s := randBytes(r, n, "abcdefghijklmnopqrstuvwxyz0123456789")
			h := HashBytes(s, 0)
			for bit := 0; bit < 8*n; bit++ {
				s[bit/8] ^= 1 << (bit % 8)
				d := h ^ HashBytes(s, 0)
				s[bit/8] ^= 1 << (bit % 8)
				for o := 0; o < 64; o++ {
					flips[o] += int(d >> o & 1)
				}
				trials++
			}
		}
		for o, f := range flips {
			p := float64(f) / float64(trials)
			assert.InDelta(t, 0.5, p, 0.1, "length %d: output bit %d flips with probability %.3f", n, o, p)
		}
	}
}

func FuzzView(f *testing.F) {
	f.Add([]byte(""), []byte("a"))
	f.Add([]byte("abcdefghijkl"), []byte("abcdefghijklm"))
	f.Add([]byte("ab\x00"), []byte("ab"))
	f.Add([]byte("a longer string over the inline limit"), []byte("a longer string over the inline limiT"))
	a := NewArena(0)
	f.Cleanup(a.Free)
	f.Fuzz(func(t *testing.T, s1, s2 []byte) {
		defer a.Reset()
		for _, va := range views(s1, a) {
			if !bytes.Equal(Bytes(va), s1) || Len(va) != len(s1) {
				t.Fatalf("round trip of %q: %q", s1, Bytes(va))
			}
			for _, vb := range views(s2, a) {
				if Equal(va, vb) != bytes.Equal(s1, s2) {
					t.Fatalf("Equal(%q, %q) = %v", s1, s2, Equal(va, vb))
				}
				if sign(Compare(va, vb)) != bytes.Compare(s1, s2) {
					t.Fatalf("Compare(%q, %q) = %d", s1, s2, Compare(va, vb))
				}
				if bytes.Equal(s1, s2) && Hash(va, 3) != Hash(vb, 3) {
					t.Fatalf("Hash(%q) differs between two views", s1)
				}
			}
			if EqualBytes(va, s2) != bytes.Equal(s1, s2) {
				t.Fatalf("EqualBytes(%q, %q)", s1, s2)
			}
		}
	})
}
