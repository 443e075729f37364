package cpu

import (
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPlanOnFixtures(t *testing.T) {
	cases := []struct {
		fixture         string // a fixtures[].name
		compact, spread []int  // one worker per CPU
	}{
		{"one-socket", []int{0, 1, 2, 3}, []int{0, 1, 2, 3}},
		{
			"two-socket-smt",
			// Node 0's four cores, then their siblings, then node 1.
			[]int{0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15},
			[]int{0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15},
		},
		{
			// Node 1 has memory but no CPU of the cpuset: never planned on.
			"container-cpuset/node0",
			[]int{0, 1, 2, 3, 8, 9, 10, 11},
			[]int{0, 1, 2, 3, 8, 9, 10, 11},
		},
		{
			"container-cpuset/one-thread-per-core",
			[]int{8, 9, 10, 11, 4, 5, 6, 7},
			[]int{8, 4, 9, 5, 10, 6, 11, 7},
		},
		{
			// Spread keeps going on node 0 once node 1 is used up.
			"container-cpuset/uneven",
			[]int{0, 1, 2, 3, 8, 9, 4, 5},
			[]int{0, 4, 1, 5, 2, 3, 8, 9},
		},
		{"memoryless-node", []int{0, 1, 2, 3}, []int{0, 1, 2, 3}},
		{"no-node-dir", []int{0, 2, 1, 3}, []int{0, 2, 1, 3}},
	}
	require.Len(t, cases, len(fixtures), "a plan for every fixture topology")
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			var compact, spread []int
			for _, c := range cases {
				if c.fixture == f.name {
					compact, spread = c.compact, c.spread
				}
			}
			require.NotNil(t, compact, "no expected plan")
			topo := discoverFixture(t, f.tree, f.allowed)
			n := len(topo.CPUs)
			require.Len(t, compact, n)

			for _, pc := range []struct {
				p    Placement
				want []int
			}{{Compact, compact}, {Spread, spread}} {
				got, err := topo.Plan(pc.p, n, nil)
				require.NoError(t, err)
				assert.Equal(t, pc.want, got, "%s, %d workers", pc.p, n)

				got, err = topo.Plan(pc.p, 1, nil)
				require.NoError(t, err)
				assert.Equal(t, pc.want[:1], got, "%s, 1 worker", pc.p)

				// More workers than CPUs wrap around in the same order.
				got, err = topo.Plan(pc.p, n+3, nil)
				require.NoError(t, err)
				assert.Equal(t, append(append([]int{}, pc.want...), pc.want[:3]...), got, "%s, %d workers", pc.p, n+3)
			}
		})
	}
}

func TestPlanExplicitCores(t *testing.T) {
	topo := discoverFixture(t, "two-socket-smt", nil)
	for _, p := range []Placement{Compact, Spread} {
		got, err := topo.Plan(p, 5, []int{15, 3, 3})
		require.NoError(t, err)
		assert.Equal(t, []int{15, 3, 3, 15, 3}, got, "%s: cores in the order given, wrapping", p)
	}

	// A cpuset of half the machine: CPUs outside it are refused.
	half := discoverFixture(t, "container-cpuset", []int{0, 1, 2, 3, 8, 9, 10, 11})
	_, err := half.Plan(Compact, 2, []int{0, 4})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "CPU 4 is not among the allowed online CPUs (0-3,8-11)")

	_, err = topo.Plan(Compact, 2, []int{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "empty list of cores")
}

func TestPlanErrors(t *testing.T) {
	topo := discoverFixture(t, "one-socket", nil)
	for _, n := range []int{0, -1} {
		plan, err := topo.Plan(Compact, n, nil)
		require.Error(t, err)
		assert.Nil(t, plan)
		assert.Contains(t, err.Error(), "need at least 1")
	}
	for _, p := range []Placement{"", "scatter", "Compact"} {
		plan, err := topo.Plan(p, 1, []int{0})
		require.Error(t, err, "placement %q", p)
		assert.Nil(t, plan)
		assert.Contains(t, err.Error(), `want "compact" or "spread"`)
	}
	_, err := (&Topology{Nodes: []Node{{ID: 0, CPUs: []int{}}}}).Plan(Spread, 1, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no CPU")
}

func TestParseCPUList(t *testing.T) {
	for in, want := range map[string][]int{
		"":             {},
		"\n":           {},
		"0":            {0},
		"0-3,8-11\n":   {0, 1, 2, 3, 8, 9, 10, 11},
		"0-3,8,10-11":  {0, 1, 2, 3, 8, 10, 11},
		"5,1,3-3":      {5, 1, 3},
		"65535":        {65535},
		" 2-4 ":        {2, 3, 4},
		"007,1":        {7, 1},
		"0,2,4,6,8,10": {0, 2, 4, 6, 8, 10},
	} {
		got, err := ParseCPUList(in)
		require.NoError(t, err, "%q", in)
		assert.Equal(t, want, got, "%q", in)
	}
	for in, part := range map[string]string{
		"0-3,x":      `bad part "x"`,
		"0,,1":       `bad part ""`,
		"0-":         `bad part "0-"`,
		"-3":         `bad part "-3"`,
		"3-1":        `bad part "3-1": range runs backwards`,
		"1-2-3":      `bad part "1-2-3"`,
		"+1":         `bad part "+1"`,
		"0-65536":    `bad part "0-65536": CPU number beyond 65535`,
		"0-99999999": `bad part "0-99999999"`,
		"0 1":        `bad part "0 1"`,
	} {
		got, err := ParseCPUList(in)
		require.Error(t, err, "%q", in)
		assert.Nil(t, got)
		assert.Contains(t, err.Error(), part)
	}
}

func TestFormatCPUList(t *testing.T) {
	for want, in := range map[string][]int{
		"":             nil,
		"0":            {0},
		"0-3,8-11":     {0, 1, 2, 3, 8, 9, 10, 11},
		"0,2,4":        {0, 2, 4},
		"1-2,5,7-9,12": {1, 2, 5, 7, 8, 9, 12},
	} {
		assert.Equal(t, want, FormatCPUList(in))
		back, err := ParseCPUList(want)
		require.NoError(t, err)
		assert.Equal(t, append([]int{}, in...), back, "round trip of %q", want)
	}
}

// TestParseCPUListCapsTotal: many wide ranges in a short text are refused
// once the list passes 65536 CPUs in all, before they are expanded (8 KB
// of "0-65535," took 2.4 GB); 65536 CPUs are still a list.
func TestParseCPUListCapsTotal(t *testing.T) {
	all, err := ParseCPUList("0-65535")
	require.NoError(t, err)
	assert.Len(t, all, maxCPUID)

	long := strings.Repeat("0-65535,", 20) + "0" // 1.3 M CPUs without the cap
	for in, want := range map[string]string{
		"0-65535,0":           `cpu list of 9 bytes: part 2 "0" takes it past 65536 CPUs in all`,
		"0-40000,40000-65535": `part 2 "40000-65535" takes it past 65536 CPUs`,
		long:                  `part 2 "0-65535" takes it past 65536 CPUs`,
	} {
		got, err := ParseCPUList(in)
		require.Error(t, err, "%.40q", in)
		assert.Nil(t, got)
		assert.Contains(t, err.Error(), want)
	}

	// Refused before it is expanded: the one range's 512 KiB (and its
	// growth), not 20 of them.
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	_, err = ParseCPUList(long)
	require.Error(t, err)
	runtime.ReadMemStats(&ms)
	assert.Less(t, ms.TotalAlloc-before, uint64(4<<20), "bytes allocated refusing %d bytes of list", len(long))
}
