package engine

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/doubling"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
)

// taker is a sink of encoded tuples that keeps the buffers the engine
// gives it (TupleEncoder.Take), as a partitioned output does until its
// writer has written them: it notes what each held, and gives back in
// its place, at random, nil, a new buffer, or one it kept (checked
// first: the engine wrote nothing into it since it gave it).
type taker struct {
	mu           sync.Mutex
	r            *rand.Rand
	out          []byte   // every encoding received, in order
	kept, held   [][]byte // the buffers kept, and what each held
	takes, fails int      // Take's calls, and its kept buffers found changed
}

func newTaker(seed uint64) *taker { return &taker{r: rand.New(rand.NewPCG(seed, 9))} }

func (k *taker) encoder(ts int) *TupleEncoder {
	return &TupleEncoder{Encode: bracket(ts),
		Write: func(b []byte) error {
			k.mu.Lock()
			defer k.mu.Unlock()
			k.out = doubling.Append(k.out, b...)
			return nil
		},
		Take: func(b []byte) ([]byte, error) {
			k.mu.Lock()
			defer k.mu.Unlock()
			k.takes++
			k.out = doubling.Append(k.out, b...)
			k.kept = append(k.kept, b)
			k.held = append(k.held, bytes.Clone(b))
			switch k.r.IntN(4) {
			case 0:
				return nil, nil
			case 1:
				return make([]byte, 0, k.r.IntN(64)), nil
			}
			// one kept before (not b), finished with
			if len(k.kept) < 2 {
				return nil, nil
			}
			i := k.r.IntN(len(k.kept) - 1)
			spare := k.kept[i]
			if !bytes.Equal(spare, k.held[i]) {
				k.fails++
			}
			k.kept = append(k.kept[:i], k.kept[i+1:]...)
			k.held = append(k.held[:i], k.held[i+1:]...)
			return spare[:0], nil
		}}
}

// check is at the end of a run: every buffer still kept holds what it
// held when taken.
func (k *taker) check(t *testing.T, name string) {
	t.Helper()
	for i := range k.kept {
		if !bytes.Equal(k.kept[i], k.held[i]) {
			k.fails++
		}
	}
	assert.Zero(t, k.fails, "%s: buffers written by the engine after it gave them", name)
}

// TestTupleEncoderTake: an encoder that keeps the buffers it is given
// (Take) receives exactly, byte for byte, what Write alone receives, on
// 1 to 3 workers, tasks of any size: a stateless query's encodings made
// by the workers, an aggregation's made in order (one assembler) or by
// the linkers (result partitions: Write), a downstream query's, a
// join's; and the engine never writes into a buffer it gave.
func TestTupleEncoderTake(t *testing.T) {
	parallel(t)
	base := runtime.NumGoroutine()
	s := randSchema(t)
	n := seeds(5, 4, 40)
	takes := 0
	for seed := range n {
		r := rand.New(rand.NewPCG(uint64(seed), 31))
		q := randQuery(r, s)
		for q.Validate() != nil {
			q = randQuery(r, s)
		}
		out, err := q.OutputSchema()
		require.NoError(t, err)
		down := &query.Query{Name: "down", Schema: out, Where: query.Cmp(query.C(out.Attrs[0].Name), query.Ge, query.Int(math.MinInt64))}
		data := randData(r, 200+r.IntN(3000))
		cfg := Config{Workers: 1 + r.IntN(3), TaskSize: randTuple * (1 + r.IntN(120)), BufferSize: 1 << 14, resultParts: 1 + seed%2*2}
		name := fmt.Sprintf("seed %d, %d workers, task %d, parts %d, query %+v", seed, cfg.Workers, cfg.TaskSize, cfg.resultParts, q)
		run := func(take bool) (tuples, downTuples []byte, k, kd *taker) {
			k, kd = newTaker(uint64(seed)), newTaker(uint64(seed)+1000)
			enc, downEnc := k.encoder(out.TupleSize), kd.encoder(out.TupleSize)
			if !take {
				enc.Take, downEnc.Take = nil, nil
			}
			e, err := Start(cfg, []Spec{
				{Query: q, Tuples: func(b []byte) error { tuples = doubling.Append(tuples, b...); return nil }, Encoded: enc},
				{Query: down, Upstream: Output(0), Tuples: func(b []byte) error { downTuples = doubling.Append(downTuples, b...); return nil }, Encoded: downEnc},
			})
			require.NoError(t, err)
			require.NoError(t, writeChunks(e.Stream(0), data, r, cfg.TaskSize))
			_, err = e.CloseAll()
			require.NoError(t, err)
			return tuples, downTuples, k, kd
		}
		wantTuples, wantDown, write, writeDown := run(false)
		gotTuples, gotDown, k, kd := run(true)
		require.Equal(t, wantTuples, gotTuples, name)
		require.Equal(t, wantDown, gotDown, name)
		assert.Equal(t, bracket(out.TupleSize)(nil, wantTuples), write.out, name)
		assert.Equal(t, write.out, k.out, "%s: the query's encodings taken", name)
		assert.Equal(t, writeDown.out, kd.out, "%s: the downstream query's encodings taken", name)
		assert.Zero(t, write.takes+writeDown.takes, name)
		if len(wantDown) > 0 {
			assert.Positive(t, kd.takes, "%s: the downstream query's encodings are given", name)
		}
		k.check(t, name)
		kd.check(t, name)
		takes += k.takes + kd.takes
	}
	assert.Positive(t, takes)

	// A join's encodings, made in order on its drainer.
	j := &query.WindowJoin{Name: "j", Left: s, Right: s, Window: query.Sliding(40, 10),
		Where: query.Cmp(query.C("l.a"), query.Lt, query.C("r.a"))}
	r := rand.New(rand.NewPCG(7, 8))
	// 1000 tuples a side: both across 1.6 s (160 windows, 31000 pairs),
	// where 2000 put the right side's 1 s against the left's 3 s, at twice
	// the cost.
	left, right := randData(r, 1000), randData(r, 1000)
	want, err := reference.EvaluateJoin(j, left, right)
	require.NoError(t, err)
	jout, err := j.OutputSchema()
	require.NoError(t, err)
	ts := jout.TupleSize
	for _, workers := range []int{1, 2} {
		k := newTaker(uint64(workers))
		e, err := Start(Config{Workers: workers, TaskSize: randTuple * 16, BufferSize: 1 << 12},
			[]Spec{{Join: j, Encoded: k.encoder(ts)}})
		require.NoError(t, err)
		require.NoError(t, e.Stream(0).Write(left))
		require.NoError(t, e.Stream(0).Right().Write(right))
		_, err = e.Close()
		require.NoError(t, err)
		assert.Equal(t, bracket(ts)(nil, want.Tuples), k.out, "join, %d workers", workers)
		assert.Positive(t, k.takes, "join, %d workers", workers)
		k.check(t, fmt.Sprintf("join, %d workers", workers))
	}
	assertNoLeak(t, base)
}
