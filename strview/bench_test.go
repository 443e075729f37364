package strview

import (
	"bytes"
	"fmt"
	"testing"
)

func BenchmarkHashBytes(b *testing.B) {
	for _, n := range []int{8, 12, 32, 256} {
		s := bytes.Repeat([]byte{'k'}, n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			var h uint64
			for b.Loop() {
				h = HashBytes(s, h)
			}
		})
	}
}

func BenchmarkEqual(b *testing.B) {
	a := NewArena(0)
	defer a.Free()
	for _, n := range []int{8, 32} {
		s := bytes.Repeat([]byte{'k'}, n)
		v, w := make([]byte, Size), make([]byte, Size)
		Put(v, s, a)
		Put(w, s, a)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				if !Equal(v, w) {
					b.Fatal()
				}
			}
		})
	}
}

func BenchmarkPutArena(b *testing.B) {
	a := NewArena(0)
	defer a.Free()
	s := bytes.Repeat([]byte{'k'}, 40)
	v := make([]byte, Size)
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i%10000 == 0 {
			a.Reset()
		}
		Put(v, s, a)
	}
}

func BenchmarkLike(b *testing.B) {
	s := []byte("https://example.com/shop/items/4711?ref=newsletter&utm_source=mail")
	for _, p := range []string{"https://%", "%mail", "%items%", "https://%/items/_%?ref=%"} {
		l := MustCompileLike(p, 0)
		b.Run(p, func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			b.ReportAllocs()
			for b.Loop() {
				if !l.Match(s) {
					b.Fatal(p)
				}
			}
		})
	}
}
