package gpu

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/testenv"
	"github.com/saber-hx/saber-hx/kernels"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/window"
)

// aggChecks counts the aggregation tasks whose output words checkAggWords
// compared, and the first few that differed.
type aggChecks struct {
	mu    sync.Mutex
	tasks int
	bad   []string
}

// checkAggWords makes every emulated aggregation task, until t ends, run
// again through refAggTuples (one fold per tuple on its global row, the
// kernel before the block cache and the warp reduction) on fresh buffers,
// and compare every output word.
func checkAggWords(t *testing.T) *aggChecks {
	c := &aggChecks{}
	emuAggCheck = func(k *kparams, words []uint64) {
		kk := *k
		if kk.nkeys > 0 {
			kk.table = make([]uint64, len(k.table))
		}
		ref := make([]uint64, len(words))
		poison(ref)
		blocks := make([]uint64, max(1, gridOf(kk.n)))
		emuAggInit(&kk, ref)
		emuAggBlockMax(&kk, blocks, ref)
		refAggTuples(&kk, blocks, ref)
		c.mu.Lock()
		defer c.mu.Unlock()
		c.tasks++
		if !slices.Equal(ref, words) && len(c.bad) < 5 {
			i := 0
			for ref[i] == words[i] {
				i++
			}
			c.bad = append(c.bad, fmt.Sprintf("task of %d tuples from %d, panes [%d, +%d): word %d of %d: %#x, per tuple %#x",
				kk.n, kk.first, kk.base, kk.npanes, i, len(words), words[i], ref[i]))
		}
	}
	t.Cleanup(func() { emuAggCheck = nil })
	return c
}

func (c *aggChecks) require(t *testing.T, msg string) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	require.Empty(t, c.bad, msg)
	require.NotZero(t, c.tasks, msg)
}

// TestBlockCacheWordsEqualPerTuple: agg_tuples' block cache of dense rows
// and warp reduction write the same output words as one atomic per tuple
// and word (refAggTuples), and the CPU kernel's results: one pane for
// thousands of tuples (every warp and block on one row), few groups, more
// groups than the cache's slots (slots shared by two rows of a block, the
// second one folding into global memory), rows too wide for 256 slots,
// panes crossing blocks, late and filtered tuples inside blocks, hashed
// groups (no cache), ROWS windows, and random queries of every shape.
func TestBlockCacheWordsEqualPerTuple(t *testing.T) {
	c := checkAggWords(t)
	dev := NewEmulator()
	defer dev.Close()
	r := rand.New(rand.NewPCG(13, 13))
	ts := newTestSchema(t, false)
	tsp := newTestSchema(t, true)
	few := testTable(r, 40, 3)
	many := testTable(r, 700, 300)
	all := []query.Aggregate{{Func: query.Count}, {Func: query.Sum, Arg: query.C("c")},
		{Func: query.Min, Arg: query.C("a")}, {Func: query.Max, Arg: query.C("c")}, {Func: query.Avg, Arg: query.C("b")}}
	var wide []query.Aggregate
	for j := range 14 {
		col := intCols[j%3]
		wide = append(wide, query.Aggregate{Func: []query.AggFunc{query.Sum, query.Min, query.Max}[j%3], Arg: query.C(col),
			As: fmt.Sprintf("w%d", j)})
	}
	join := func(tb *query.StaticTable) *query.StaticJoin {
		return &query.StaticJoin{Column: "k", Table: tb, As: "v"}
	}
	cases := []struct {
		name string
		ts   testSchema
		q    query.Query
		g    dataGen
		n    int
	}{
		{"one pane", ts, query.Query{Window: query.Tumbling(1 << 40), Aggregates: all}, dataGen{step: 0}, 5000},
		{"one pane, filtered", tsp, query.Query{Window: query.Tumbling(1 << 40), Where: query.ColGe("a", 2), Aggregates: all},
			dataGen{t0: -7, step: 1}, 5000},
		{"panes across blocks", ts, query.Query{Window: query.Sliding(300, 100), Aggregates: all}, dataGen{step: 1, jitter: 3}, 6000},
		{"late in blocks", ts, query.Query{Window: query.Tumbling(50), Aggregates: all},
			dataGen{t0: -100, step: 1, jitter: 2, lateEvery: 5, lateBy: 120}, 6000},
		{"few groups", tsp, query.Query{Window: query.Sliding(400, 200), Join: join(few), GroupBy: []query.Expr{query.C("v")}, Aggregates: all},
			dataGen{step: 1, jitter: 4, lateEvery: 40, lateBy: 300}, 6000},
		{"groups beyond the slots", ts, query.Query{Window: query.Tumbling(150), Join: join(many), GroupBy: []query.Expr{query.C("v")}, Aggregates: all},
			dataGen{step: 1, jitter: 2, lateEvery: 30, lateBy: 200}, 8000},
		{"wide rows", ts, query.Query{Window: query.Sliding(200, 50), Join: join(many), GroupBy: []query.Expr{query.C("v")}, Aggregates: wide},
			dataGen{step: 1, jitter: 2}, 6000},
		{"hashed groups", ts, query.Query{Window: query.Tumbling(100), GroupBy: []query.Expr{query.C("a")}, Aggregates: all},
			dataGen{step: 1, jitter: 5, lateEvery: 20, lateBy: 100}, 4000},
		{"rows", tsp, query.Query{Window: query.Window{Type: query.Rows, Size: 700, Slide: 350}, Where: query.ColLt("b", 6), Aggregates: all},
			dataGen{step: 1}, 5000},
	}
	for _, tc := range cases {
		q := tc.q
		q.Name, q.Schema = tc.name, tc.ts.s
		p, pg := compilePlans(t, &q, kernels.Options{})
		require.NoError(t, Supported(p), tc.name)
		pr := compileEmu(t, dev, pg, 1+r.IntN(3))
		table := few
		if q.Join != nil {
			table = q.Join.Table
		}
		data := randData(r, tc.ts, table, tc.g, tc.n)
		runCase(t, r, p, pr, data, 3000, tc.name)
	}
	// The long run's 40, at most 12 under -short, 12 by default.
	n := testenv.Scale(12, 40)
	if testing.Short() {
		n = min(n, 12)
	}
	for seed := range n {
		r := rand.New(rand.NewPCG(uint64(seed), 29))
		ts := newTestSchema(t, seed%2 == 1)
		table := testTable(r, 1+r.IntN(300), 1+r.IntN(300))
		q := randQuery(r, ts, table)
		if q.Window.Size == 0 {
			continue // a selection
		}
		p, pg := compilePlans(t, q, kernels.Options{})
		pr := compileEmu(t, dev, pg, 1+r.IntN(3))
		data := randData(r, ts, table, randGen(r), r.IntN(4000))
		runCase(t, r, p, pr, data, 1+r.IntN(2000), fmt.Sprintf("seed %d: %+v", seed, q))
	}
	c.require(t, "block cache against one fold per tuple")
	t.Logf("%d aggregation tasks compared word for word", c.tasks)
}

// refAggTuples is agg_tuples as it was before the block cache (one
// atomic per tuple and word on its global row), kept to check that
// emuAggTuples writes the same words. Per tuple it takes the watermark
// before it (the largest position of the blocks before, then of the
// threads before in its block), applies WHERE and the join, finds its pane
// and whether it is late, then folds it into its row.
func refAggTuples(k *kparams, blockMax, out []uint64) {
	firsts := out[hdrWords : hdrWords+k.npanes]
	rows := out[hdrWords+k.npanes:]
	for b := int64(0); b < gridOf(k.n); b++ {
		var prefix uint64
		for j := int64(0); j < b; j++ {
			prefix = max(prefix, blockMax[j])
		}
		var inBlock uint64 // exclusive max scan of the block's positions
		for th := int64(0); th < blockDim; th++ {
			i := b*blockDim + th
			if i >= k.n {
				break
			}
			pos := k.position(i)
			prev := unbias(max(prefix, inBlock))
			inBlock = max(inBlock, bias(pos))

			t := k.tuples[i*k.tupleSize : (i+1)*k.tupleSize]
			if !k.passes(t) {
				out[hdrFiltered]++
				continue
			}
			var g int64
			if k.join != nil {
				kt := t[k.joinOff:]
				o := k.join.lookup(loadU64(kt), loadU64(kt[8:]))
				if o < 0 {
					out[hdrUnmatched]++
					continue
				}
				if k.denseJoin {
					g = int64(o)
				}
			}
			p := floorDiv(pos, k.pane)
			off := uint64(p - k.base)
			if off >= uint64(k.npanes) {
				out[hdrOutside]++
				continue
			}
			if uint64(i) < firsts[off] {
				firsts[off] = uint64(i)
			}
			if prev >= sealOf(p, k.pane, k.size, k.slide) {
				out[hdrLate]++
				continue
			}
			var row []uint64
			if k.nkeys > 0 {
				k0, k1 := k.keyOf(t)
				if row = k.findEntry(out, rows, uint64(off), k0, k1); row == nil {
					out[hdrOverflow]++
					continue
				}
			} else {
				row = rows[(int64(off)*k.groups+g)*k.rowWords:][:k.rowWords]
			}
			row[0]++
			for w := int64(0); w < k.naggs; w++ {
				d := k.aggs[w]
				var v int64
				if d>>48&1 != 0 {
					v = int64(evalCode(k.code[d&0xffffffff:], t))
				} else {
					v = colValue(t, d&0xffffffff, d>>32&1 != 0)
				}
				switch window.AggKind(d >> 40 & 0xff) {
				case window.AggAdd:
					row[1+w] += uint64(v)
				case window.AggMin:
					row[1+w] = min(row[1+w], bias(v))
				default:
					row[1+w] = max(row[1+w], bias(v))
				}
			}
			if uint64(i) < row[k.rowWords-1] {
				row[k.rowWords-1] = uint64(i)
			}
		}
	}
}
