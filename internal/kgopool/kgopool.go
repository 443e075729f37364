// Package kgopool holds franz-go's record and decompression buffers for
// reuse (kgo.WithPools), so that a consumer's goroutine per broker, which
// decompresses and parses every fetch before it fetches again, neither
// allocates nor zeroes fresh memory per batch, and the collector has no
// slab of records to trace and free. The records go back when the
// consumer calls Record.Recycle on each of them, after which their
// values (which point into the pooled decompressed bytes) are not to be
// read.
package kgopool

import (
	"bytes"
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/s2"
	"github.com/twmb/franz-go/pkg/kgo"
)

// classes is the count of size classes: capacities up to 2^47.
const classes = 48

// Pools are kgo's PoolRecords and PoolDecompressBytes. Each keeps its
// slices by size class: class c holds slices of capacity at least 1<<c,
// so a get for n takes from the class of n rounded up to a power of two,
// and what a get makes has exactly that capacity.
type Pools struct {
	records [classes]sync.Pool
	bytes   [classes]sync.Pool
	// The slices of records handed out and given back (a batch each).
	gets, puts atomic.Int64
}

// Batches returns how many slices of records the pools handed out and
// how many came back: a consumer that recycles its records gives back
// all but those of the batches it still holds.
func (p *Pools) Batches() (out, back int64) { return p.gets.Load(), p.puts.Load() }

// New returns empty pools, for kgo.WithPools.
func New() *Pools { return &Pools{} }

// ceilClass is the class of a get of n: the exponent of n rounded up to
// a power of two.
func ceilClass(n int) int { return bits.Len(uint(max(n, 1) - 1)) }

// floorClass is the class a slice of capacity c goes back to.
func floorClass(c int) int { return bits.Len(uint(c)) - 1 }

// GetRecords returns an empty slice of capacity at least n.
func (p *Pools) GetRecords(n int) []kgo.Record {
	p.gets.Add(1)
	c := ceilClass(n)
	if c >= classes {
		return make([]kgo.Record, 0, n)
	}
	if v, ok := p.records[c].Get().(*[]kgo.Record); ok {
		return (*v)[:0]
	}
	return make([]kgo.Record, 0, 1<<c)
}

// PutRecords keeps r, whose records kgo's Recycle zeroed, for a later
// get.
func (p *Pools) PutRecords(r []kgo.Record) {
	p.puts.Add(1)
	if c := floorClass(cap(r)); c >= 0 && c < classes {
		p.records[c].Put(&r)
	}
}

// xerial is the prefix of snappy's framed format, whose decoded length is
// not in its header.
var xerial = []byte{130, 83, 78, 65, 80, 80, 89, 0}

// guessClasses is how many classes above a guess GetDecompressBytes
// looks in: a codec that outgrew a guessed slice gave back a bigger one,
// which fits the next batch of a like size.
const guessClasses = 3

// GetDecompressBytes returns an empty slice to decompress compressed
// into: of the decoded length for snappy's block format, which its
// header gives (the codec then writes into it rather than allocating its
// own), and otherwise of four times the compressed length, a guess (the
// codec grows what is short; the grown slice comes back to the pool, a
// class or more above, where the next guess looks too).
func (p *Pools) GetDecompressBytes(compressed []byte, codec kgo.CompressionCodecType) []byte {
	n, above := 4*len(compressed), guessClasses
	if codec == kgo.CodecSnappy && !bytes.HasPrefix(compressed, xerial) {
		if l, err := s2.DecodedLen(compressed); err == nil {
			n, above = l, 0
		}
	}
	c := ceilClass(n)
	if c >= classes {
		return nil // the codec allocates
	}
	for k := c; k <= min(c+above, classes-1); k++ {
		if v, ok := p.bytes[k].Get().(*[]byte); ok {
			return (*v)[:0]
		}
	}
	return make([]byte, 0, 1<<c)
}

// PutDecompressBytes keeps b, zeroed by kgo, for a later get.
func (p *Pools) PutDecompressBytes(b []byte) {
	if c := floorClass(cap(b)); c >= 0 && c < classes {
		p.bytes[c].Put(&b)
	}
}
