package engine

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
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
// windows are still the reference's. Beside the other tests, but never
// beside another that claims CPUs (holdClaims): the claims are the
// process's.
func TestEnginesInOneProcessPinApart(t *testing.T) {
	parallel(t)
	holdClaims(t)
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

// TestPlacementAvoidsTheIngestionCore: with the producer pinned to a CPU,
// the automatic placement puts no worker there while another CPU is
// free, and other engines' placements avoid it while the engine runs.
// Beside the other tests, but never beside another that claims CPUs
// (holdClaims): the claims are the process's.
func TestPlacementAvoidsTheIngestionCore(t *testing.T) {
	parallel(t)
	holdClaims(t)
	allowed := cpu.AllowedCPUs()
	if len(allowed) < 2 {
		t.Skip("needs 2 CPUs")
	}
	require.Empty(t, cpu.Claimed())
	s := randSchema(t)
	q := &query.Query{Name: "g", Schema: s, Window: query.Tumbling(50), GroupBy: []query.Expr{query.C("b")},
		Aggregates: []query.Aggregate{{Func: query.Count}}}
	got := &reference.Result{}
	ingest := allowed[0]
	e, err := Start(Config{Workers: 1, Pin: true, PinIngest: true, IngestCore: ingest, TaskSize: randTuple * 40, BufferSize: 1 << 15},
		[]Spec{{Query: q, Windows: rowsInto(q, got)}})
	require.NoError(t, err)
	assert.Contains(t, cpu.Claimed(), ingest, "the ingestion core is held")
	require.NoError(t, <-e.Produce(func() error { return e.Write(randData(rand.New(rand.NewPCG(3, 4)), 2000)) }))
	pinned := e.Stream(0).Stats().Pinned
	_, err = e.Close()
	require.NoError(t, err)
	require.Len(t, pinned, 1)
	assert.NotEqual(t, ingest, pinned[0], "the only worker on the ingestion core %d while %v are free", ingest, allowed[1:])
	assert.Empty(t, cpu.Claimed(), "released with the engine")
}

// TestPlacementMemoryOfACPUNodeWithoutMemory: workers on a node of CPUs
// without memory have their rings on a node with memory, which the
// kernel's mbind takes.
func TestPlacementMemoryOfACPUNodeWithoutMemory(t *testing.T) {
	t.Parallel()
	const c, n = "sys/devices/system/cpu/", "sys/devices/system/node/"
	files := map[string]string{c + "online": "0-3\n", n + "node0/cpulist": "0-3\n", n + "node0/meminfo": "Node 0 MemTotal:       0 kB\n",
		n + "node1/cpulist": "\n", n + "node1/meminfo": "Node 1 MemTotal:       4194304 kB\n"}
	for i := range 4 {
		d := fmt.Sprintf("%scpu%d/topology/", c, i)
		files[d+"physical_package_id"], files[d+"core_id"], files[d+"thread_siblings_list"] = "0\n", fmt.Sprintf("%d\n", i), fmt.Sprintf("%d\n", i)
	}
	root := t.TempDir()
	for p, text := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, p), []byte(text), 0o644))
	}
	topo, err := cpu.DiscoverFS(root, []int{0, 1, 2, 3})
	require.NoError(t, err)
	require.Len(t, topo.Nodes, 2)
	require.Zero(t, topo.Nodes[0].MemBytes)
	assert.Equal(t, 1, topo.MemoryNode(0))
	assert.Equal(t, 1, topo.MemoryNode(1))

	cfg := Config{Workers: 2, Pin: true, MemPolicy: cpu.MemPreferred, Topology: topo, CPUs: nil}
	claim, err := placeWorkers(&cfg)
	require.NoError(t, err)
	defer claim.Release()
	if !cfg.Pin {
		t.Skip("this machine's CPUs are held: " + fmt.Sprint(cpu.Claimed()))
	}
	assert.Equal(t, 1, cfg.MemNode, "rings on node 1, the one with memory (workers on %v)", cfg.CPUs)
}

// TestPlacementUnpinnedDropsTheMemoryPolicy: workers that fall back to
// running unpinned (every CPU held by another engine) have no node, and
// their rings no memory policy, said in the warning. Beside the other
// tests, but never beside another that claims CPUs (holdClaims).
func TestPlacementUnpinnedDropsTheMemoryPolicy(t *testing.T) {
	parallel(t)
	holdClaims(t)
	topo, err := cpu.DiscoverFS("../cpu/testdata/container-cpuset", []int{4, 5, 6, 7})
	require.NoError(t, err)
	held := cpu.ClaimCPUs([]int{4, 5, 6, 7}) // another engine's workers
	defer held.Release()
	var warned []string
	cfg := Config{Workers: 2, Pin: true, MemPolicy: cpu.MemBind, Topology: topo, Warn: func(m string) { warned = append(warned, m) }}
	claim, err := placeWorkers(&cfg)
	require.NoError(t, err)
	require.Nil(t, claim)
	require.False(t, cfg.Pin, "no CPU free: unpinned")
	assert.Equal(t, cpu.MemDefault, cfg.MemPolicy)
	require.Len(t, warned, 1)
	assert.Contains(t, warned[0], "memory policy bind not applied")
}

// TestStringHeapPlacedAsItsRing: a stream's string heap takes its ring's
// memory policy and node, as the ring does (it was allocated wherever the
// kernel put it): a node the kernel refuses is warned about for both.
func TestStringHeapPlacedAsItsRing(t *testing.T) {
	t.Parallel()
	s, err := query.NewSchema(24, query.Attribute{Name: "ts", Type: query.Int64, Offset: 0}, query.Attribute{Name: "s", Type: query.String, Offset: 8})
	require.NoError(t, err)
	q := &query.Query{Name: "strs", Schema: s, Where: query.Cmp(query.C("s"), query.Gt, query.Str("m"))}
	var mu sync.Mutex
	var warned []string
	e, err := Start(Config{Workers: 1, TaskSize: 24 * 64, BufferSize: 1 << 16, MemPolicy: cpu.MemBind, MemNode: 63,
		Warn: func(m string) { mu.Lock(); defer mu.Unlock(); warned = append(warned, m) }},
		[]Spec{{Query: q, Tuples: func([]byte) error { return nil }}})
	require.NoError(t, err)
	_, err = e.Close()
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	placed := 0
	for _, w := range warned {
		if strings.Contains(w, "ring memory not placed on node 63") {
			placed++
		}
	}
	assert.Equal(t, 2, placed, "the ring's and the heap's: %q", warned)
}

// claimsMu keeps the parallel tests that claim CPUs for pinned engines
// (and read the process's claims, cpu.Claimed) from running at once: each
// finds the claims empty when it starts and leaves them so.
var claimsMu sync.Mutex

// holdClaims holds claimsMu for the rest of t, its cleanups included
// (an engine closed by one releases its CPUs first).
func holdClaims(t *testing.T) {
	claimsMu.Lock()
	t.Cleanup(claimsMu.Unlock)
}
