package kernels

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/testenv"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/strview"
)

// regSchemas are a regular join's sides: time, a nullable key (int64, or
// int32 where key32), a long string; 40 bytes (the NULL bit in byte 32).
func regSchemas(t testing.TB, key32 bool) (*query.Schema, *query.Schema) {
	kt := query.Int64
	if key32 {
		kt = query.Int32
	}
	mk := func() *query.Schema {
		s, err := query.NewSchema(40,
			query.Attribute{Name: "t", Type: query.Int64, Offset: 0},
			query.Attribute{Name: "k", Type: kt, Offset: 8, Nullable: true, NullBit: 32 * 8},
			query.Attribute{Name: "s", Type: query.String, Offset: 16})
		require.NoError(t, err)
		return s
	}
	return mk(), mk()
}

// regTuple is a side's tuple: time at, key k (NULL where null), string s
// in arena a.
func regTuple(at, k int64, null, key32 bool, s string, a *strview.Arena) []byte {
	t := make([]byte, 40)
	binary.LittleEndian.PutUint64(t, uint64(at))
	if key32 {
		binary.LittleEndian.PutUint32(t[8:], uint32(int32(k)))
	} else {
		binary.LittleEndian.PutUint64(t[8:], uint64(k))
	}
	strview.Put(t[16:32], []byte(s), a)
	if null {
		t[32] |= 1
	}
	return t
}

// regText renders a pair (or a tuple) with its strings read, for
// comparing multisets.
func regText(b []byte) string {
	var parts []string
	for o := 0; o+40 <= len(b); o += 40 {
		t := b[o : o+40]
		parts = append(parts, fmt.Sprintf("%d/%x/%d/%s", binary.LittleEndian.Uint64(t), t[8:16], t[32], strview.Bytes(t[16:32])))
	}
	return strings.Join(parts, " | ")
}

// regOracle is the nested-loop join of every left and right tuple of
// equal, non-NULL keys.
func regOracle(left, right [][]byte, key32 bool) []string {
	key := func(t []byte) (int64, bool) {
		if t[32]&1 != 0 {
			return 0, false
		}
		if key32 {
			return int64(int32(binary.LittleEndian.Uint32(t[8:]))), true
		}
		return int64(binary.LittleEndian.Uint64(t[8:])), true
	}
	var out []string
	for _, l := range left {
		for _, r := range right {
			kl, okl := key(l)
			kr, okr := key(r)
			if okl && okr && kl == kr {
				out = append(out, regText(append(slices.Clone(l), r...)))
			}
		}
	}
	slices.Sort(out)
	return out
}

// regAdd files tuples on side of rj, as one input.
func regAdd(t *testing.T, rj *RegularJoin, side int, tuples [][]byte) {
	t.Helper()
	var b []byte
	for _, tp := range tuples {
		b = append(b, tp...)
	}
	_, ok := rj.Add(side, b)
	require.True(t, ok)
}

// regDrain takes every queued output off rj and recycles it, appending
// its pairs' texts to got.
func regDrain(rj *RegularJoin, got []string) []string {
	for {
		o, ok := rj.Next()
		if !ok {
			return got
		}
		for p := 0; p < len(o.Pairs); p += 80 {
			got = append(got, regText(o.Pairs[p:p+80]))
		}
		rj.Recycle(o)
	}
}

// TestRegularJoinAgainstNestedLoops files random inputs (keys repeated on
// both sides, NULL keys, long strings) in random interleavings and batch
// sizes, one side first, the other first, or mixed, and compares the pairs
// with a nested-loop join: each pair once.
func TestRegularJoinAgainstNestedLoops(t *testing.T) {
	for _, key32 := range []bool{false, true} {
		for _, order := range []string{"left first", "right first", "interleaved"} {
			for seed := uint64(1); seed <= 6; seed++ {
				t.Run(fmt.Sprintf("key32=%v/%s/seed%d", key32, order, seed), func(t *testing.T) {
					rng := rand.New(rand.NewPCG(seed, 7))
					var a strview.Arena
					defer a.Free()
					ls, rs := regSchemas(t, key32)
					j := &query.WindowJoin{Name: "rj", Left: ls, Right: rs, Regular: true, LeftKey: 1, RightKey: 1}
					rj, err := NewRegularJoin(j)
					require.NoError(t, err)
					defer rj.Free()
					var sides [2][][]byte
					keys := 1 + rng.IntN(20)
					for side := range sides {
						n := rng.IntN(300)
						for i := range n {
							k := int64(rng.IntN(keys)) - 3
							if key32 && rng.IntN(5) == 0 {
								k = -1 << 31
							}
							s := fmt.Sprintf("side %d tuple %d, a string longer than a view holds", side, i)
							if rng.IntN(3) == 0 {
								s = "short"
							}
							sides[side] = append(sides[side], regTuple(int64(rng.IntN(1000)), k, rng.IntN(8) == 0, key32, s, &a))
						}
					}
					want := regOracle(sides[0], sides[1], key32)
					var got []string
					next := [2]int{}
					for next[0] < len(sides[0]) || next[1] < len(sides[1]) {
						side := rng.IntN(2)
						switch {
						case order == "left first" && next[0] < len(sides[0]), next[1] == len(sides[1]):
							side = 0
						case order == "right first", next[0] == len(sides[0]):
							side = 1
						}
						n := min(1+rng.IntN(40), len(sides[side])-next[side])
						var batch []byte
						for _, tp := range sides[side][next[side] : next[side]+n] {
							batch = append(batch, tp...)
						}
						next[side] += n
						_, ok := rj.Add(side, batch)
						require.True(t, ok)
						clear(batch) // the join keeps copies of what it needs
						if rng.IntN(2) == 0 {
							got = regDrain(rj, got)
						}
					}
					got = regDrain(rj, got)
					slices.Sort(got)
					assert.Equal(t, want, got)
					assert.Equal(t, uint64(len(want)), rj.Stats().Pairs)
					assert.Equal(t, uint64(len(sides[0])+len(sides[1])), rj.Stats().Tuples)
				})
			}
		}
	}
}

// TestRegularJoinSnapshot snapshots a regular join midway, restores the
// snapshot into a new join (the old one freed, its strings gone), files
// the rest into it, and compares all pairs, before and after, with the
// nested-loop join: none lost, none twice.
func TestRegularJoinSnapshot(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	var a strview.Arena
	defer a.Free()
	ls, rs := regSchemas(t, false)
	j := &query.WindowJoin{Name: "rj", Left: ls, Right: rs, Regular: true, LeftKey: 1, RightKey: 1}
	var sides [2][][]byte
	for side := range sides {
		for i := range 200 {
			sides[side] = append(sides[side], regTuple(int64(i), int64(rng.IntN(15)), rng.IntN(10) == 0, false,
				fmt.Sprintf("a long string of side %d, tuple %d", side, i), &a))
		}
	}
	want := regOracle(sides[0], sides[1], false)
	add := func(rj *RegularJoin, side, from, to int) { regAdd(t, rj, side, sides[side][from:to]) }
	rj, err := NewRegularJoin(j)
	require.NoError(t, err)
	add(rj, 0, 0, 120)
	add(rj, 1, 0, 80)
	_, err = rj.AppendSnapshot(nil)
	require.Error(t, err, "a snapshot with outputs not handed on")
	got := regDrain(rj, nil)
	snap, err := rj.AppendSnapshot([]byte("prefix"))
	require.NoError(t, err)
	rj.Free()

	rj2, err := NewRegularJoin(j)
	require.NoError(t, err)
	defer rj2.Free()
	rest, err := rj2.RestoreSnapshot(append(snap[len("prefix"):], "tail"...))
	require.NoError(t, err)
	assert.Equal(t, "tail", string(rest))
	assert.Equal(t, uint64(200), rj2.Stats().Tuples)
	add(rj2, 1, 80, 200)
	add(rj2, 0, 120, 200)
	got = regDrain(rj2, got)
	slices.Sort(got)
	assert.Equal(t, want, got)
	assert.Equal(t, uint64(len(want)), rj2.Stats().Pairs)

	// A truncated snapshot is refused and leaves the join empty.
	rj3, err := NewRegularJoin(j)
	require.NoError(t, err)
	_, err = rj3.RestoreSnapshot(snap[len("prefix") : len(snap)-3])
	require.Error(t, err)
	assert.Zero(t, rj3.Stats().Tuples)
}

// TestRegularJoinRefusesBadShapes: a regular join with a window, a WHERE,
// keys out of range or of different types is refused.
func TestRegularJoinRefusesBadShapes(t *testing.T) {
	ls, rs := regSchemas(t, false)
	_, rs32 := regSchemas(t, true)
	fs, err := query.NewSchema(16, query.Attribute{Name: "t", Type: query.Int64, Offset: 0}, query.Attribute{Name: "f", Type: query.Float64, Offset: 8})
	require.NoError(t, err)
	for _, c := range []struct {
		j    query.WindowJoin
		want string
	}{
		{query.WindowJoin{Window: query.Tumbling(10)}, "a regular join has no window"},
		{query.WindowJoin{Where: query.Cmp(query.C("l.t"), query.Lt, query.C("r.t"))}, "filter each side before it"},
		{query.WindowJoin{LeftKey: 3}, "left key 3"},
		{query.WindowJoin{Left: fs, Right: fs, LeftKey: 1, RightKey: 1}, "is float64: a regular join's key is an int32, an int64 or a string"},
		{query.WindowJoin{LeftKey: 1, RightKey: 1, Right: rs32}, "of one type"},
		{query.WindowJoin{LeftKey: 2, RightKey: 1}, "of one type"},
	} {
		j := c.j
		j.Name, j.Regular = "rj", true
		if j.Left == nil {
			j.Left = ls
		}
		if j.Right == nil {
			j.Right = rs
		}
		_, err := NewRegularJoin(&j)
		require.Error(t, err, c.want)
		assert.Contains(t, err.Error(), c.want)
	}
}

// TestRegularJoinAllocs: filing tuples that find pairs allocates nothing
// per tuple once the join has its buffers (the chunks of kept tuples and
// the index grow, a few times per many thousand tuples).
func TestRegularJoinAllocs(t *testing.T) {
	ls, rs := regSchemas(t, false)
	j := &query.WindowJoin{Name: "rj", Left: ls, Right: rs, Regular: true, LeftKey: 1, RightKey: 1}
	rj, err := NewRegularJoin(j)
	require.NoError(t, err)
	defer rj.Free()
	var a strview.Arena
	defer a.Free()
	var right, left []byte
	for i := range 64 {
		right = append(right, regTuple(int64(i), int64(i), false, false, "short", &a)...)
		left = append(left, regTuple(int64(i), int64(i%64), false, false, "a string longer than a view", &a)...)
	}
	rj.Add(1, right)
	regDrain(rj, nil)
	allocs := testing.AllocsPerRun(200, func() {
		rj.Add(0, left)
		o, ok := rj.Next()
		if !ok || len(o.Pairs) != 64*80 {
			panic("no pairs")
		}
		rj.Recycle(o)
	})
	assert.Zero(t, allocs, "allocations per Add of 64 tuples")
}

// TestRegularJoinCutOffTheLock: inputs prepared by Cut on several
// goroutines at once, while another files the inputs prepared before
// them (AddOwnedCut, in stream order, under a lock), give the nested-loop
// join's pairs; an input whose cut is another's is filed by Add. Run
// with -race: Cut reads only the join's configuration and its store.
func TestRegularJoinCutOffTheLock(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 26))
	var a strview.Arena
	defer a.Free()
	ls, rs := regSchemas(t, false)
	j := &query.WindowJoin{Name: "rj", Left: ls, Right: rs, Regular: true, LeftKey: 1, RightKey: 1}
	rj, err := NewRegularJoin(j)
	require.NoError(t, err)
	defer rj.Free()
	type input struct {
		side  int
		data  []byte
		cut   JoinCut
		ready chan struct{}
	}
	var sides [2][][]byte
	var inputs []*input
	for range 200 {
		in := &input{side: rng.IntN(2), ready: make(chan struct{})}
		for range rng.IntN(30) {
			tp := regTuple(int64(rng.IntN(1000)), int64(rng.IntN(25)), rng.IntN(9) == 0, false,
				fmt.Sprintf("tuple %d of side %d, long enough", len(sides[in.side]), in.side), &a)
			sides[in.side] = append(sides[in.side], tp)
			in.data = append(in.data, tp...)
		}
		inputs = append(inputs, in)
	}
	want := regOracle(sides[0], sides[1], false)
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < len(inputs); i += 3 {
				in := inputs[i]
				if i%17 != 0 { // every 17th is filed unprepared
					rj.Cut(in.side, in.data, &in.cut)
				}
				close(in.ready)
			}
		}()
	}
	var mu sync.Mutex
	var got []string
	for _, in := range inputs {
		<-in.ready
		mu.Lock()
		out := in.data
		_, ok := rj.AddOwnedCut(in.side, &out, nil, &in.cut)
		require.True(t, ok)
		got = regDrain(rj, got)
		mu.Unlock()
	}
	wg.Wait()
	slices.Sort(got)
	assert.Equal(t, want, got)
	assert.Equal(t, uint64(len(sides[0])+len(sides[1])), rj.Stats().Tuples)
}

// TestRegularJoinRestoreDamaged: a snapshot truncated anywhere, or with a
// byte changed anywhere, is refused with an error or restored, never a
// panic, and a refused one leaves the join empty.
func TestRegularJoinRestoreDamaged(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	var a strview.Arena
	defer a.Free()
	ls, rs := regSchemas(t, false)
	j := &query.WindowJoin{Name: "rj", Left: ls, Right: rs, Regular: true, LeftKey: 1, RightKey: 1}
	rj, err := NewRegularJoin(j)
	require.NoError(t, err)
	defer rj.Free()
	for side := range 2 {
		var b []byte
		for i := range 20 {
			b = append(b, regTuple(int64(i), int64(rng.IntN(5)), rng.IntN(6) == 0, false, fmt.Sprintf("a long string, tuple %d", i), &a)...)
		}
		rj.Add(side, b)
	}
	regDrain(rj, nil)
	snap, err := rj.AppendSnapshot(nil)
	require.NoError(t, err)
	try := func(b []byte) {
		r, err := NewRegularJoin(j)
		require.NoError(t, err)
		defer r.Free()
		require.NotPanics(t, func() {
			if _, err := r.RestoreSnapshot(b); err != nil {
				assert.Zero(t, r.Stats().Tuples)
			}
		})
	}
	// Every cut and 500 flips with SABER_HX_LONG_TESTS=1; else 64 cuts
	// spread over the snapshot and 50 flips (each try maps the join's
	// memory: most of the test's time).
	step := max(1, len(snap)/testenv.Scale(64, len(snap)))
	for n := 0; n < len(snap); n += step {
		try(snap[:n])
	}
	for range testenv.Scale(50, 500) {
		b := slices.Clone(snap)
		b[rng.IntN(len(b))] ^= byte(1 + rng.IntN(255))
		try(b)
	}
}

// TestRegularJoinStringKeys: a regular join on a String key (short
// strings inline in their views, long ones out of line; every string's
// hash the same in the collide case, so that every kept tuple is in one
// chain) outputs the pairs of byte-equal keys, each once, also across a
// snapshot restored into a new join after the strings' memory is gone.
func TestRegularJoinStringKeys(t *testing.T) {
	keys := []string{"", "a", "short", "Short", "twelve bytes", "thirteen byte", "a key longer than a view holds", "a key longer than a view holds, too"}
	for _, collide := range []bool{false, true} {
		t.Run(fmt.Sprintf("collide=%v", collide), func(t *testing.T) {
			if collide {
				old := regStrHash
				regStrHash = func([]byte) uint64 { return 42 }
				defer func() { regStrHash = old }()
			}
			rng := rand.New(rand.NewPCG(9, 9))
			var a strview.Arena
			ls, rs := regSchemas(t, false)
			j := &query.WindowJoin{Name: "rj", Left: ls, Right: rs, Regular: true, LeftKey: 2, RightKey: 2}
			var sides [2][][]byte
			for side := range sides {
				for i := range 150 {
					sides[side] = append(sides[side], regTuple(int64(i), int64(side*1000+i), false, false, keys[rng.IntN(len(keys))], &a))
				}
			}
			var want []string
			for _, l := range sides[0] {
				for _, r := range sides[1] {
					if string(strview.Bytes(l[16:32])) == string(strview.Bytes(r[16:32])) {
						want = append(want, regText(append(slices.Clone(l), r...)))
					}
				}
			}
			slices.Sort(want)
			require.NotEmpty(t, want)
			add := func(rj *RegularJoin, side, from, to int) { regAdd(t, rj, side, sides[side][from:to]) }
			rj, err := NewRegularJoin(j)
			require.NoError(t, err)
			add(rj, 0, 0, 90)
			add(rj, 1, 0, 60)
			got := regDrain(rj, nil)
			snap, err := rj.AppendSnapshot(nil)
			require.NoError(t, err)
			rj.Free()
			// The restored join reads its strings from the snapshot: the
			// tuples' views point into memory freed here, refilled below.
			var strs []string
			for side := range sides {
				for _, tp := range sides[side] {
					strs = append(strs, string(strview.Bytes(tp[16:32])))
				}
			}
			a.Free()
			var b strview.Arena
			defer b.Free()
			n := 0
			for side := range sides {
				for _, tp := range sides[side] {
					strview.Put(tp[16:32], []byte(strs[n]), &b)
					n++
				}
			}
			rj2, err := NewRegularJoin(j)
			require.NoError(t, err)
			defer rj2.Free()
			_, err = rj2.RestoreSnapshot(snap)
			require.NoError(t, err)
			add(rj2, 1, 60, 150)
			add(rj2, 0, 90, 150)
			got = regDrain(rj2, got)
			slices.Sort(got)
			assert.Equal(t, want, got)
		})
	}
}
