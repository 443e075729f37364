package kernels_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/testenv"
	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
)

const wjTuple = 32

func wjSchema(t testing.TB) *query.Schema {
	s, err := query.NewSchema(wjTuple,
		query.Attribute{Name: "ts", Type: query.Int64, Offset: 0},
		query.Attribute{Name: "a", Type: query.Int32, Offset: 8},
		query.Attribute{Name: "b", Type: query.Int32, Offset: 12},
		query.Attribute{Name: "c", Type: query.Int64, Offset: 16},
		query.Attribute{Name: "y", Type: query.Float64, Offset: 24},
	)
	require.NoError(t, err)
	return s
}

// wjData is n tuples in rough event-time order: jitter, and now and then a
// tuple far behind (late for small windows).
func wjData(r *rand.Rand, n int) []byte {
	b := make([]byte, n*wjTuple)
	ts := r.Int64N(100) - 50
	step, jitter := r.Int64N(5), r.Int64N(30)
	for i := range n {
		t := b[i*wjTuple : (i+1)*wjTuple]
		ts += r.Int64N(step + 1)
		et := ts - r.Int64N(jitter+1)
		if r.IntN(60) == 0 {
			et -= r.Int64N(500)
		}
		binary.LittleEndian.PutUint64(t[0:], uint64(et))
		binary.LittleEndian.PutUint32(t[8:], uint32(r.Int32N(20)-5))
		binary.LittleEndian.PutUint32(t[12:], uint32(r.Int32N(7)))
		binary.LittleEndian.PutUint64(t[16:], uint64(r.Int64N(1000)-300))
		binary.LittleEndian.PutUint64(t[24:], math.Float64bits(r.Float64()*100-20))
	}
	return b
}

func wjRandJoin(r *rand.Rand, s *query.Schema) *query.WindowJoin {
	size := 1 + r.Int64N(60)
	slide := size
	if r.IntN(2) == 0 {
		slide = 1 + r.Int64N(size)
	}
	w := query.Sliding(size, slide)
	if r.IntN(4) == 0 {
		w.Type = query.Rows
	}
	if r.IntN(4) == 0 {
		w.Delay = r.Int64N(20)
	}
	j := &query.WindowJoin{Name: "j", Left: s, Right: s, Window: w, Where: wjRandWhere(r)}
	return j
}

// wjRandWhere is a random WHERE of the shapes the pair loop specialises
// (cross terms of each type and operator, the int32 differences and sums
// it rewrites, one-side and constant terms, nested conjunctions) and of the
// ones it leaves to the general path (OR, arithmetic over both sides of
// int64 columns), or nil.
func wjRandWhere(r *rand.Rand) query.Expr {
	ops := []query.CmpOp{query.Eq, query.Ne, query.Lt, query.Le, query.Gt, query.Ge}
	op := func() query.CmpOp { return ops[r.IntN(len(ops))] }
	term := func() query.Expr {
		switch r.IntN(10) {
		case 0:
			return query.Cmp(query.C("l.a"), op(), query.C("r.a"))
		case 1:
			return query.Cmp(query.C("r.b"), op(), query.C("l.a")) // mirrored
		case 2:
			return query.Cmp(query.C("l.y"), op(), query.C("r.y"))
		case 3:
			return query.Cmp(query.C("l.c"), op(), query.Add(query.C("r.y"), query.Float(3))) // int against float
		case 4:
			return query.Cmp(query.Sub(query.C("l.a"), query.C("r.b")), op(), query.Int(r.Int64N(11)-5))
		case 5:
			return query.Cmp(query.Int(r.Int64N(11)-5), op(), query.Sub(query.C("r.a"), query.C("l.b")))
		case 6:
			return query.Cmp(query.Add(query.C("r.b"), query.C("l.a")), op(), query.Int(r.Int64N(20)))
		case 7:
			return query.Cmp(query.C("l.y"), op(), query.Int(10)) // left only
		case 8:
			return query.Cmp(query.Mul(query.C("r.c"), query.Int(2)), op(), query.C("r.a")) // right only
		}
		return query.Cmp(query.Int(1), query.Lt, query.Int(2)) // constants only
	}
	switch r.IntN(6) {
	case 0:
		return nil
	case 1:
		return term()
	case 2:
		return query.And(term(), term())
	case 3:
		return query.And(term(), query.And(term(), term()), term())
	case 4:
		// The general path: arithmetic of int64 columns of both sides.
		return query.And(term(), query.Cmp(query.Sub(query.C("l.c"), query.C("r.c")), op(), query.Int(0)))
	}
	return query.Or(query.Cmp(query.Add(query.C("l.a"), query.C("r.c")), query.Ge, query.Int(100)), query.Cmp(query.C("r.y"), query.Le, query.C("l.y")))
}

// feed runs the operator as the engine's join stage does: each side's
// tuples in chunks of random sizes, the sides interleaved at random,
// JoinClosed after every chunk and every Finish, the closed windows' tasks
// taken now and then and run and handed back in random order (as several
// workers would finish them), the output taken off the queue (and
// recycled) now and then. A task is taken and run on its own scratch or on
// one of two that every task shares (TakeFor and RunWith: a worker's), at
// random. It returns the pairs in order and the first PairJoiner failure.
func feed(t *testing.T, r *rand.Rand, wj *kernels.WindowJoin, left, right []byte) (out []byte, failedAt int64, err error) {
	t.Helper()
	data := [2][]byte{left, right}
	type taken struct {
		tk *kernels.JoinTask
		sc *kernels.JoinScratch
	}
	var running []taken
	scratch := []*kernels.JoinScratch{wj.NewScratch(), wj.NewScratch()}
	work := func(all bool) {
		for {
			var sc *kernels.JoinScratch
			if k := r.IntN(3); k < len(scratch) {
				sc = scratch[k]
			}
			if tk := wj.TakeFor(sc); tk != nil {
				running = append(running, taken{tk, sc})
			}
			if len(running) > 0 && (all || r.IntN(3) == 0 || len(running) > 4) {
				i := r.IntN(len(running))
				tk := running[i]
				running = append(running[:i], running[i+1:]...)
				if tk.sc != nil {
					tk.tk.RunWith(tk.sc)
				} else {
					tk.tk.Run()
				}
				wj.Done(tk.tk)
			}
			if wj.Runnable() == 0 && (!all || len(running) == 0) {
				return
			}
		}
	}
	take := func() {
		for {
			b, ok := wj.Next()
			if !ok {
				require.False(t, wj.Ready())
				return
			}
			out = append(out, b.Pairs...)
			wj.Recycle(b)
		}
	}
	closed := func(all bool) {
		w, e := wj.JoinClosed(all)
		if e != nil && err == nil {
			failedAt, err = w, e
		}
		if r.IntN(2) > 0 {
			work(false)
		}
		if r.IntN(3) > 0 {
			take()
		}
	}
	for len(data[0]) > 0 || len(data[1]) > 0 {
		side := r.IntN(2)
		if len(data[side]) == 0 {
			side = 1 - side
		}
		n := min(len(data[side]), wjTuple*(1+r.IntN(40)))
		_, ok := wj.Add(side, data[side][:n])
		require.True(t, ok)
		data[side] = data[side][n:]
		if len(data[side]) == 0 {
			wj.Finish(side)
		}
		closed(false)
	}
	closed(true)
	work(true)
	take()
	require.Zero(t, wj.Pending(), "every window handed on")
	assert.Zero(t, wj.Taken(), "windows taken")
	assert.Zero(t, wj.RunnableWindows(), "windows to take")
	assert.Zero(t, wj.Lent(), "every buffer back")
	for _, sc := range scratch {
		assert.LessOrEqual(t, sc.Buffers(), 4, "a scratch's buffers")
	}
	return out, failedAt, err
}

// TestWindowJoinMatchesReference: random window joins (range and row,
// tumbling and sliding, with and without a watermark delay, theta
// predicates over both sides) fed in random chunks, against the reference;
// its windows' tasks in batches (the default) and one by one, which count
// the same windows.
func TestWindowJoinMatchesReference(t *testing.T) {
	s := wjSchema(t)
	n := testenv.Scale(15, 60)
	if testing.Short() {
		n = 15
	}
	var tasks [2]uint64 // all seeds', batched and one by one
	for seed := range n {
		r := rand.New(rand.NewPCG(uint64(seed), 11))
		j := wjRandJoin(r, s)
		left, right := wjData(r, 100+r.IntN(500)), wjData(r, 100+r.IntN(500))
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			want, err := reference.EvaluateJoin(j, left, right)
			require.NoError(t, err)
			var windows [2]uint64
			for single := range 2 {
				wj, err := kernels.NewWindowJoin(j)
				require.NoError(t, err)
				if single == 1 {
					wj.NoBatch()
				}
				got, _, err := feed(t, r, wj, left, right)
				require.NoError(t, err)
				assert.Equal(t, len(want.Tuples), len(got), "pairs")
				assert.True(t, string(want.Tuples) == string(got), "pairs differ")
				st := wj.Stats()
				assert.Equal(t, want.Counts, reference.Counts{Tuples: st.Tuples, Late: st.Late, Counted: st.Tuples - st.Late})
				assert.Equal(t, uint64(len(got)/(2*wjTuple)), st.Pairs)
				assert.Zero(t, st.PairJoined+st.PairFallbacks)
				for side := range 2 {
					held, _ := wj.Lead(side)
					assert.Zero(t, held, "side %d: tuples held once every window closed", side)
				}
				windows[single] = st.Windows
				tasks[single] += st.Tasks
			}
			assert.Equal(t, windows[1], windows[0], "windows with pairs, batched and one by one")
		})
	}
	assert.Less(t, tasks[0], tasks[1], "tasks, batched and one by one")
}

// refPairs is a PairJoiner that computes a window's pairs tuple by tuple
// with the reference's predicate, refusing (ok false) the windows of more
// than limit pairs and failing with err after fail windows.
type refPairs struct {
	t       *testing.T
	j       *query.WindowJoin
	limit   int
	fail    int // windows joined before it fails; -1: never
	err     error
	joined  int
	refused int
	calls   int
}

func (p *refPairs) Join(left, right [][]byte, out []byte) ([]byte, bool, error) {
	p.calls++
	if p.fail >= 0 && p.joined+p.refused == p.fail {
		return out, false, p.err
	}
	if len(left)*len(right) > p.limit {
		p.refused++
		return out, false, nil
	}
	p.joined++
	schema := p.j.OutputSchemaUnchecked()
	for _, l := range left {
		for _, r := range right {
			pair := append(append([]byte(nil), l...), r...)
			if p.j.Where != nil {
				ok, err := reference.EvalPred(p.j.Where, schema, pair)
				require.NoError(p.t, err)
				if !ok {
					continue
				}
			}
			out = append(out, pair...)
		}
	}
	return out, true, nil
}

// TestWindowJoinPairJoiner: with a PairJoiner the output is the same; the
// windows it refuses are joined by the operator and counted, and once it
// fails the operator reports the window and joins every window itself.
func TestWindowJoinPairJoiner(t *testing.T) {
	s := wjSchema(t)
	for seed := range 20 {
		r := rand.New(rand.NewPCG(uint64(seed), 12))
		j := wjRandJoin(r, s)
		left, right := wjData(r, 100+r.IntN(400)), wjData(r, 100+r.IntN(400))
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			want, err := reference.EvaluateJoin(j, left, right)
			require.NoError(t, err)
			wj, err := kernels.NewWindowJoin(j)
			require.NoError(t, err)
			pj := &refPairs{t: t, j: j, limit: 1 + r.IntN(400), fail: -1, err: errors.New("device lost")}
			if seed%2 == 1 {
				pj.fail = r.IntN(6)
			}
			wj.UsePairJoiner(pj)
			got, _, err := feed(t, r, wj, left, right)
			assert.True(t, string(want.Tuples) == string(got), "pairs differ")
			st := wj.Stats()
			assert.Equal(t, uint64(pj.joined), st.PairJoined)
			assert.Equal(t, uint64(pj.refused), st.PairFallbacks)
			if pj.fail < 0 || pj.calls <= pj.fail {
				assert.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, pj.err)
			assert.Equal(t, pj.fail+1, pj.calls, "no call after the failure")
		})
	}
}

// refuseFirst is a PairJoiner that refuses its first window, as a device
// refuses one whose pairs do not fit it, and joins the others with pj.
type refuseFirst struct {
	pj      *refPairs
	refused bool
}

func (p *refuseFirst) Join(left, right [][]byte, out []byte) ([]byte, bool, error) {
	if !p.refused {
		p.refused = true
		return out, false, nil
	}
	return p.pj.Join(left, right, out)
}

// TestWindowJoinOldestWaits: the windows after one the PairJoiner refused
// are joined at once and count as taken, however many; the refused one,
// the oldest, waits to be taken (OldestWaits) until a worker takes it, and
// then every window is handed on in order.
func TestWindowJoinOldestWaits(t *testing.T) {
	s := wjSchema(t)
	j := &query.WindowJoin{Name: "j", Left: s, Right: s, Window: query.Tumbling(10)}
	r := rand.New(rand.NewPCG(7, 7))
	left, right := wjData(r, 400), wjData(r, 400)
	for i := range 400 {
		binary.LittleEndian.PutUint64(left[i*wjTuple:], uint64(i))
		binary.LittleEndian.PutUint64(right[i*wjTuple:], uint64(i))
	}
	want, err := reference.EvaluateJoin(j, left, right)
	require.NoError(t, err)
	wj, err := kernels.NewWindowJoin(j)
	require.NoError(t, err)
	wj.UsePairJoiner(&refuseFirst{pj: &refPairs{t: t, j: j, limit: math.MaxInt, fail: -1}})
	for side, data := range [][]byte{left, right} {
		_, ok := wj.Add(side, data)
		require.True(t, ok)
	}
	wj.Finish(0)
	require.True(t, wj.Finish(1))
	_, err = wj.JoinClosed(true)
	require.NoError(t, err)
	assert.False(t, wj.Ready())
	assert.Equal(t, 1, wj.Runnable())
	assert.Equal(t, 39, wj.Taken(), "the device's windows, behind the refused one")
	require.True(t, wj.OldestWaits())
	tk := wj.TakeFor(nil)
	require.NotNil(t, tk)
	assert.False(t, wj.OldestWaits())
	tk.Run()
	wj.Done(tk)
	var got []byte
	for {
		o, ok := wj.Next()
		if !ok {
			break
		}
		got = append(got, o.Pairs...)
		wj.Recycle(o)
	}
	assert.Zero(t, wj.Pending())
	assert.False(t, wj.OldestWaits())
	assert.True(t, string(want.Tuples) == string(got), "pairs differ: %d bytes, want %d", len(got), len(want.Tuples))
}

// TestWindowJoinRefusesBelowRange: a tuple whose first window would start
// below math.MinInt64 stops Add, which files the ones before it.
func TestWindowJoinRefusesBelowRange(t *testing.T) {
	s := wjSchema(t)
	j := &query.WindowJoin{Name: "j", Left: s, Right: s, Window: query.Sliding(10, 5)}
	wj, err := kernels.NewWindowJoin(j)
	require.NoError(t, err)
	data := make([]byte, 3*wjTuple)
	binary.LittleEndian.PutUint64(data[0:], 7)
	binary.LittleEndian.PutUint64(data[wjTuple:], 8)
	binary.LittleEndian.PutUint64(data[2*wjTuple:], uint64(1<<63)) // math.MinInt64
	refused, ok := wj.Add(1, data)
	require.False(t, ok)
	assert.Equal(t, kernels.Refused{Tuple: 2, Pos: math.MinInt64}, refused)
	assert.Equal(t, uint64(2), wj.Stats().Tuples)

	_, err = reference.EvaluateJoin(j, data[:wjTuple], data)
	assert.Error(t, err, "the reference refuses it too")
}

// TestNewWindowJoinErrors: an invalid join and a WHERE the kernels cannot
// compile are errors naming the join.
func TestNewWindowJoinErrors(t *testing.T) {
	s := wjSchema(t)
	_, err := kernels.NewWindowJoin(&query.WindowJoin{Name: "j", Left: s, Right: s, Window: query.Sliding(5, 10)})
	assert.Error(t, err)
	_, err = kernels.NewWindowJoin(&query.WindowJoin{Name: "j", Left: s, Right: s, Window: query.Tumbling(10),
		Where: query.Cmp(query.C("l.nope"), query.Lt, query.C("r.a"))})
	assert.Error(t, err)
}

// TestWindowJoinUnreleased: the oldest window whose pairs may not be
// handed on is, in turn, none before any closes, the oldest queued one, an
// output lent until Recycle takes it back, and the first not closed.
func TestWindowJoinUnreleased(t *testing.T) {
	s := wjSchema(t)
	j := &query.WindowJoin{Name: "j", Left: s, Right: s, Window: query.Tumbling(10)}
	wj, err := kernels.NewWindowJoin(j)
	require.NoError(t, err)
	wj.NoBatch()
	data := wjData(rand.New(rand.NewPCG(1, 1)), 40)
	for i := range 40 {
		binary.LittleEndian.PutUint64(data[i*wjTuple:], uint64(i)) // windows 0 to 3
	}
	_, ok := wj.Unreleased()
	assert.False(t, ok, "nothing closed")
	for side := range 2 {
		_, ok := wj.Add(side, data)
		require.True(t, ok)
	}
	_, err = wj.JoinClosed(false) // the watermarks, 39, close windows 0 to 2
	require.NoError(t, err)
	assert.Equal(t, [2]int64{39, 39}, [2]int64{wj.Watermark(0), wj.Watermark(1)})
	w, ok := wj.Unreleased()
	assert.Equal(t, []any{int64(0), true}, []any{w, ok}, "window 0 queued")
	var outs []kernels.JoinOutput
	for tk := wj.Take(); tk != nil; tk = wj.Take() {
		tk.Run()
		wj.Done(tk)
	}
	for range 2 {
		o, ok := wj.Next()
		require.True(t, ok)
		outs = append(outs, o)
	}
	w, _ = wj.Unreleased()
	assert.Equal(t, int64(0), w, "windows 0 and 1 lent")
	wj.Recycle(outs[0])
	w, _ = wj.Unreleased()
	assert.Equal(t, int64(0), w, "window 1 still lent: the first lent stands")
	wj.Recycle(outs[1])
	w, _ = wj.Unreleased()
	assert.Equal(t, int64(2), w, "window 2 queued")
	o, ok := wj.Next()
	require.True(t, ok)
	wj.Recycle(o)
	w, _ = wj.Unreleased()
	assert.Equal(t, int64(3), w, "window 3 not closed")
}
