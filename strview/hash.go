package strview

import (
	"encoding/binary"
	"math/bits"
)

// The constants and the shape of the loop are wyhash's (final version 4):
// a multiply-and-fold per 16 bytes, three independent lanes for long
// strings. It is written here rather than taken from hash/maphash because
// maphash's seed is random per process and opaque, and the engine needs a
// hash it can seed itself and reproduce (partitions, checkpoints).
const (
	wyp0 = 0xa0761d6478bd642f
	wyp1 = 0xe7037ed1a0b428db
	wyp2 = 0x8ebc6af09c88c6e3
	wyp3 = 0x589965cc75374cc3
)

func wymix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// Hash hashes the string of view v with seed: the same as HashBytes of the
// string, whether the view holds it inline or references it.
func Hash(v []byte, seed uint64) uint64 { return HashBytes(Bytes(v), seed) }

// HashBytes hashes s with seed, so that a string probed as bytes finds the
// views that hold it.
func HashBytes(s []byte, seed uint64) uint64 {
	n := len(s)
	seed ^= wymix(seed^wyp0, wyp1)
	var a, b uint64
	switch {
	case n > 16:
		p := s
		if len(p) > 48 {
			see1, see2 := seed, seed
			for len(p) > 48 {
				seed = wymix(le64(p[0:])^wyp1, le64(p[8:])^seed)
				see1 = wymix(le64(p[16:])^wyp2, le64(p[24:])^see1)
				see2 = wymix(le64(p[32:])^wyp3, le64(p[40:])^see2)
				p = p[48:]
			}
			seed ^= see1 ^ see2
		}
		for len(p) > 16 {
			seed = wymix(le64(p[0:])^wyp1, le64(p[8:])^seed)
			p = p[16:]
		}
		// The last 16 bytes of s, overlapping what the loops read.
		a, b = le64(s[n-16:]), le64(s[n-8:])
	case n >= 4:
		// Four reads of 4 bytes cover 4..16 bytes, overlapping.
		q := (n >> 3) << 2
		a = uint64(le32(s[0:]))<<32 | uint64(le32(s[q:]))
		b = uint64(le32(s[n-4:]))<<32 | uint64(le32(s[n-4-q:]))
	case n > 0:
		a = uint64(s[0])<<16 | uint64(s[n>>1])<<8 | uint64(s[n-1])
	}
	a ^= wyp1
	b ^= seed
	hi, lo := bits.Mul64(a, b)
	return wymix(lo^wyp0^uint64(n), hi^wyp1)
}

func le64(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }
func le32(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }
