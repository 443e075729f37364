package engine

import (
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/cpu"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
)

// TestEnginesInOneProcessPinApart starts engines side by side with pinned
// workers and no CPUs named: each takes CPUs the others have not (it used
// to pin from the first CPU on, so that one engine's workers waited behind
// another's while CPUs idled), one that finds none free runs unpinned and
// says so, and a closed engine's CPUs are free again. Every engine's
// windows are still the reference's. Not parallel: the claims are the
// process's.
func TestEnginesInOneProcessPinApart(t *testing.T) {
	allowed := cpu.AllowedCPUs()
	if len(allowed) < 2 {
		t.Skipf("%d CPU: nothing to place apart", len(allowed))
	}
	require.Empty(t, cpu.Claimed(), "no engine of another test still running")
	s := randSchema(t)
	q := &query.Query{Name: "g", Schema: s, Window: query.Tumbling(50), GroupBy: []query.Expr{query.C("b")},
		Aggregates: []query.Aggregate{{Func: query.Count}}}
	data := randData(rand.New(rand.NewPCG(3, 4)), 5000)
	want, err := reference.Evaluate(q, data)
	require.NoError(t, err)

	type started struct {
		e        *Engine
		got      *reference.Result
		warnings []string
		mu       sync.Mutex
	}
	start := func(workers int) *started {
		st := &started{got: &reference.Result{}}
		cfg := Config{Workers: workers, Pin: true, TaskSize: randTuple * 40, BufferSize: 1 << 15,
			Warn: func(m string) { st.mu.Lock(); st.warnings = append(st.warnings, m); st.mu.Unlock() }}
		e, err := Start(cfg, []Spec{{Query: q, Windows: rowsInto(q, st.got)}})
		require.NoError(t, err)
		st.e = e
		require.NoError(t, e.Write(data))
		return st
	}
	pinned := func(st *started) []int { return st.e.Stream(0).Stats().Pinned }
	closeAndCheck := func(st *started) {
		stats, err := st.e.Close()
		require.NoError(t, err)
		st.got.Counts = reference.Counts{Tuples: stats.Tuples, Filtered: stats.Filtered, Unmatched: stats.Unmatched, Late: stats.Late, Counted: stats.Counted}
		assert.Empty(t, reference.Diff(q, want, st.got, 1e-9))
	}

	a := start(1)
	b := start(len(allowed) - 1)
	pa, pb := pinned(a), pinned(b)
	require.Len(t, pa, 1)
	require.Len(t, pb, len(allowed)-1)
	all := slices.Sorted(slices.Values(append(slices.Clone(pa), pb...)))
	assert.Equal(t, allowed, all, "the two engines' workers on every CPU, none twice")

	c := start(1)
	assert.Equal(t, []int{-1}, pinned(c), "no CPU left: unpinned")
	c.mu.Lock()
	assert.True(t, slices.ContainsFunc(c.warnings, func(m string) bool {
		return strings.Contains(m, "workers run unpinned") && strings.Contains(m, "other engines of this process")
	}), "warnings: %q", c.warnings)
	c.mu.Unlock()

	closeAndCheck(a)
	d := start(1)
	assert.Equal(t, pa, pinned(d), "a closed engine's CPU is free again")
	for _, st := range []*started{b, c, d} {
		closeAndCheck(st)
	}
	assert.Empty(t, cpu.Claimed())
}

func TestPlacementRefusesAnUnknownOne(t *testing.T) {
	t.Parallel()
	q := &query.Query{Name: "g", Schema: randSchema(t), Aggregates: []query.Aggregate{{Func: query.Count}}}
	_, err := Start(Config{Workers: 1, Pin: true, Placement: "scatter"}, []Spec{{Query: q, Windows: rowsInto(q, &reference.Result{})}})
	require.ErrorIs(t, err, ErrConfig)
	assert.Contains(t, err.Error(), `placement "scatter": want "compact" or "spread"`)
}
