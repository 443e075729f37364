package kernels_test

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/testenv"
	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
	"github.com/saber-hx/saber-hx/strview"
)

// lentTupleSize is the size of lentSchema's tuples.
const lentTupleSize = 40

// lentSchema: an event time, a string (a view: long strings out of line),
// a join key and the tuple's number on its side.
func lentSchema(t *testing.T) *query.Schema {
	s, err := query.NewSchema(lentTupleSize,
		query.Attribute{Name: "ts", Type: query.Int64, Offset: 0},
		query.Attribute{Name: "s", Type: query.String, Offset: 8},
		query.Attribute{Name: "k", Type: query.Int64, Offset: 24},
		query.Attribute{Name: "id", Type: query.Int64, Offset: 32})
	require.NoError(t, err)
	return s
}

// lentString is the long string of tuple id of a side.
func lentString(side int, id int64) string {
	return fmt.Sprintf("side %d tuple id %d, a string longer than inline", side, id)
}

// lentData is n tuples of a side in event-time order with gaps (windows
// with tuples on one side only), a third of them with a key of their
// side's alone (windows without pairs).
func lentData(r *rand.Rand, side, n int, a *strview.Arena) []byte {
	b := make([]byte, n*lentTupleSize)
	ts := int64(0)
	for i := range n {
		t := b[i*lentTupleSize : (i+1)*lentTupleSize]
		if r.IntN(20) == 0 {
			ts += r.Int64N(60)
		} else {
			ts += r.Int64N(4)
		}
		binary.LittleEndian.PutUint64(t, uint64(ts))
		strview.Put(t[8:24], []byte(lentString(side, int64(i))), a)
		k := int64(r.IntN(3))
		if r.IntN(3) == 0 {
			k = int64(10 + side)
		}
		binary.LittleEndian.PutUint64(t[24:], uint64(k))
		binary.LittleEndian.PutUint64(t[32:], uint64(i))
	}
	return b
}

// scribble overwrites the memory a's strings had, as a reused input would:
// the first 4 KiB of its first chunk, where an arena puts its first
// strings after a Reset, or as many bytes as it handed out where more.
// Every arena here (a chunk's, or the empty one AddOwned hands back, an
// earlier chunk's) held one chunk's strings, at most 15 of under 64 bytes
// (the test requires it): 4 KiB is all of them. Overwriting 256 KiB, as
// it did, wrote fresh memory no string had been in and was most of the
// test's time.
func scribble(a *strview.Arena) {
	n := max(a.Bytes(), 4096)
	a.Reset()
	b := a.Alloc(n)
	b[0] = 'X'
	for i := 1; i < len(b); i *= 2 {
		copy(b[i:], b[:i])
	}
	a.Reset()
}

// lentKeys is a pair's event times, keys and numbers: what the reference's
// pairs are compared on (their strings are checked against lentString).
func lentKeys(pairs []byte) []byte {
	var b []byte
	for p := 0; p < len(pairs); p += lentTupleSize {
		tp := pairs[p : p+lentTupleSize]
		b = append(append(b, tp[:8]...), tp[24:40]...)
	}
	return b
}

// TestWindowJoinLentOutputsAcrossAdds: as the engine's drain does, up to
// eight outputs are lent (Next) and recycled only at the next drain, while
// more tuples are filed, through AddOwned with their strings in memory
// that is scribbled over once filed, windows close and tasks run, batched,
// in random order. Every lent pair's strings stay intact until recycled,
// the pairs equal the reference's in order, and the counters end at zero.
// Over tumbling, sliding and row windows.
func TestWindowJoinLentOutputsAcrossAdds(t *testing.T) {
	s := lentSchema(t)
	for seed := range testenv.Scale(30, 300) {
		r := rand.New(rand.NewPCG(uint64(seed), 7))
		var keep strview.Arena
		left, right := lentData(r, 0, 200+r.IntN(400), &keep), lentData(r, 1, 200+r.IntN(400), &keep)
		w := []query.Window{query.Tumbling(10 + r.Int64N(20)), query.Sliding(30, 10), {Type: query.Rows, Size: 8, Slide: 8}}[r.IntN(3)]
		j := &query.WindowJoin{Name: "j", Left: s, Right: s, Window: w, Where: query.Cmp(query.C("l.k"), query.Eq, query.C("r.k"))}
		want, err := reference.EvaluateJoin(j, left, right)
		require.NoError(t, err)
		wj, err := kernels.NewWindowJoin(j)
		require.NoError(t, err)

		var got []byte
		var lent []kernels.JoinOutput
		var running []*kernels.JoinTask
		bad := 0
		check := func(o kernels.JoinOutput) {
			for p := 0; p < len(o.Pairs); p += lentTupleSize {
				tp := o.Pairs[p : p+lentTupleSize]
				side := (p / lentTupleSize) % 2
				id := int64(binary.LittleEndian.Uint64(tp[32:]))
				if g := string(strview.Bytes(tp[8:24])); g != lentString(side, id) {
					if bad == 0 {
						assert.Equal(t, lentString(side, id), g, "seed %d (%v): a lent pair's string", seed, w)
					}
					bad++
				}
			}
		}
		drain := func() {
			for _, o := range lent {
				check(o)
				wj.Recycle(o)
			}
			lent = lent[:0]
			for len(lent) < 8 {
				o, ok := wj.Next()
				if !ok {
					break
				}
				got = append(got, lentKeys(o.Pairs)...)
				lent = append(lent, o)
			}
		}
		work := func(all bool) {
			for tk := wj.Take(); tk != nil; tk = wj.Take() {
				running = append(running, tk)
				if !all && r.IntN(2) == 0 {
					break
				}
			}
			for len(running) > 0 && (all || r.IntN(2) == 0) {
				i := r.IntN(len(running))
				tk := running[i]
				running = append(running[:i], running[i+1:]...)
				tk.Run()
				wj.Done(tk)
			}
		}
		data := [2][]byte{left, right}
		var in strview.Arena
		for len(data[0]) > 0 || len(data[1]) > 0 {
			side := r.IntN(2)
			if len(data[side]) == 0 {
				side = 1 - side
			}
			n := min(len(data[side]), lentTupleSize*(1+r.IntN(15)))
			buf := append([]byte(nil), data[side][:n]...)
			for o := 0; o < n; o += lentTupleSize {
				strview.Put(buf[o+8:o+24], append([]byte(nil), strview.Bytes(buf[o+8:o+24])...), &in)
			}
			require.LessOrEqual(t, in.Bytes(), 4096, "a chunk's strings fit what scribble overwrites")
			_, ok := wj.AddOwned(side, &buf, &in)
			require.True(t, ok)
			scribble(&in)
			data[side] = data[side][n:]
			if len(data[side]) == 0 {
				wj.Finish(side)
			}
			_, err := wj.JoinClosed(false)
			require.NoError(t, err)
			for _, o := range lent {
				check(o)
			}
			work(false)
			if r.IntN(2) == 0 {
				drain()
			}
		}
		_, err = wj.JoinClosed(true)
		require.NoError(t, err)
		for wj.Pending() > 0 || len(running) > 0 || len(lent) > 0 {
			work(true)
			drain()
		}
		assert.Zero(t, bad, "seed %d (%v): lent pairs whose strings were freed", seed, w)
		assert.True(t, string(lentKeys(want.Tuples)) == string(got), "seed %d (%v): pairs differ: %d, want %d", seed, w, len(got)/48, len(want.Tuples)/(2*lentTupleSize))
		assert.Zero(t, wj.Taken(), "seed %d", seed)
		assert.Zero(t, wj.RunnableWindows(), "seed %d", seed)
		in.Free()
		keep.Free()
	}
}
