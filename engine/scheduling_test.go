package engine

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/testenv"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/reference"
	"github.com/saber-hx/saber-hx/scheduler"
)

// TestTwoProcessorKinds runs the real queue and its monitor with two CPU
// processor groups of one worker each, the second throttled by an injected
// delay per task: under hls most tasks go to the fast kind, the slow one
// still runs about one in SwitchThreshold, static binds a query to a kind,
// and whatever the split the results equal the reference.
//
// Sequential (no parallel): the policies measure the kinds' speeds.
func TestTwoProcessorKinds(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for about a second")
	}
	base := runtime.NumGoroutine()
	s := randSchema(t)
	q := &query.Query{Name: "g", Schema: s, Window: query.Sliding(100, 20), Where: query.ColGe("a", 0),
		GroupBy:    []query.Expr{query.C("b")},
		Aggregates: []query.Aggregate{{Func: query.Count}, {Func: query.Sum, Arg: query.C("c")}, {Func: query.Max, Arg: query.C("y")}}}
	r := rand.New(rand.NewPCG(4, 4))
	// 300 tasks of 40 tuples in the long run, 150 in the default one (the
	// static run's slow kind sleeps 3 ms a task).
	tasks := testenv.Scale(150, 300)
	data := randData(r, tasks*40)
	want, err := reference.Evaluate(q, data)
	require.NoError(t, err)
	groups := []processorGroup{{Name: "fast", Workers: 1, delay: 300 * time.Microsecond}, {Name: "slow", Workers: 1, delay: 3 * time.Millisecond}}

	for _, tc := range []struct {
		policy scheduler.Policy
		static map[string]string
		check  func(t *testing.T, fast, slow uint64)
	}{
		{scheduler.HLS, nil, func(t *testing.T, fast, slow uint64) {
			// The slow kind takes a task only where the fast one could not
			// work off the tasks ahead of it sooner: with about 17 tasks
			// queued (the ring's worth) it helps in proportion to its speed
			// (observed: 200-230 of 300 on the fast kind, 100-115 of 150).
			assert.Greater(t, fast, slow+slow/2, "hls sends most tasks to the fast kind")
			assert.GreaterOrEqual(t, slow, (fast+slow)/10/3, "the slow kind still runs about one in SwitchThreshold")
		}},
		{scheduler.Static, map[string]string{"g": "slow"}, func(t *testing.T, fast, slow uint64) {
			assert.Zero(t, fast)
			assert.Equal(t, uint64(tasks), slow)
		}},
		{scheduler.FCFS, nil, func(t *testing.T, fast, slow uint64) {
			assert.Positive(t, slow, "fcfs lets either kind take the head")
			assert.Greater(t, fast, slow)
		}},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			cfg := Config{TaskSize: randTuple * 40, BufferSize: 1 << 15, Policy: tc.policy, Static: tc.static,
				MonitorInterval: 20 * time.Millisecond, groups: groups}
			got := &reference.Result{}
			e, err := Start(cfg, []Spec{{Query: q, Windows: rowsInto(q, got)}})
			require.NoError(t, err)
			require.NoError(t, e.Write(data))
			sched := func() scheduler.Stats { return e.Scheduling() }
			st, err := e.Close()
			require.NoError(t, err)
			got.Counts = reference.Counts{Tuples: st.Tuples, Filtered: st.Filtered, Unmatched: st.Unmatched, Late: st.Late, Counted: st.Counted}
			assert.Empty(t, reference.Diff(q, want, got, 1e-9), "results do not depend on the split")
			ss := sched()
			require.Equal(t, []string{"fast", "slow"}, ss.Kinds)
			fast, slow := ss.Tasks[0][0], ss.Tasks[1][0]
			assert.Equal(t, uint64(tasks), fast+slow, "every task ran once")
			tc.check(t, fast, slow)
			if tc.policy == scheduler.HLS {
				m := ss.Matrix[0]
				assert.Greater(t, m[0], m[1], "the matrix measured the fast kind faster: %v", m)
			}
			t.Logf("%s: fast %d tasks, slow %d tasks, matrix %v", tc.policy, fast, slow, ss.Matrix)
		})
	}
	assertNoLeak(t, base)
}

func TestSchedulingConfigErrors(t *testing.T) {
	parallel(t)
	s := randSchema(t)
	q := &query.Query{Name: "g", Schema: s, Window: query.Tumbling(10), Aggregates: []query.Aggregate{{Func: query.Count}}}
	groups := []processorGroup{{Name: "fast", Workers: 1}, {Name: "slow", Workers: 1}}
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Policy: "lifo"}, "lifo"},
		{Config{Policy: scheduler.Static, Static: map[string]string{"g": "gpu"}, groups: groups}, `no processor kind "gpu" (valid: fast, slow)`},
		{Config{Policy: scheduler.Static, Static: map[string]string{"nope": "fast"}, groups: groups}, `no query "nope" (valid: g)`},
		{Config{groups: []processorGroup{{Name: "x", Workers: 0}}}, `processor group "x": 0 workers`},
	} {
		cfg := tc.cfg
		cfg.Workers, cfg.TaskSize, cfg.BufferSize = 1, randTuple, 1<<12
		_, err := Start(cfg, []Spec{{Query: q}})
		assert.ErrorContains(t, err, tc.want, fmt.Sprint(tc.cfg.Policy))
	}
}
