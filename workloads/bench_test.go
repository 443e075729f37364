package workloads

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/internal/testenv"
	"github.com/saber-hx/saber-hx/query"
)

// benchEngine is a small engine configuration that cuts a bench input
// into several tasks: 16384 is a multiple of every workload's tuple size.
var benchEngine = engine.Config{Workers: 2, TaskSize: 16384, BufferSize: 1 << 20}

// benchConfig is a validated run of names, bounded to n tuples per input.
func benchConfig(n int, names ...string) BenchConfig {
	return BenchConfig{Workloads: names, Params: DefaultParams(), Engine: benchEngine, Ingest: engine.IngestProducer,
		BundleSize: 1 << 20, Duration: time.Minute, Validate: true, ValidateTuples: n}
}

// runBench builds and runs cfg.
func runBench(t *testing.T, ctx context.Context, cfg BenchConfig) (*Bench, *BenchResult) {
	t.Helper()
	b, err := NewBench(cfg)
	require.NoError(t, err)
	res, err := b.Run(ctx, cfg.Engine)
	require.NoError(t, err)
	return b, res
}

// syncBuffer is a log written from one goroutine and read after.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestBenchRunValidates: workloads run at once on one engine, each
// bounded to its --validate-tuples, and every part checked against the
// reference evaluator: the parts named, their stats, where their input
// came from, the progress hook started and stopped, the log's lines.
func TestBenchRunValidates(t *testing.T) {
	ingests := []engine.Ingest{engine.IngestProducer, engine.IngestWorkers, engine.IngestShared}
	for _, ingest := range ingests[:testenv.Scale(2, 3)] { // shared with SABER_HX_LONG_TESTS=1

		t.Run(string(ingest), func(t *testing.T) {
			// 4000 tuples: 8 tasks of 512 a workload, over two workers;
			// sg3's in one pane (0.5 s at 8 tuples a ms) as its 8000 were
			// (1 s): the reference evaluator, most of the test's time,
			// checks half as many.
			const n = 4000
			cfg := benchConfig(n, "groupby", "sg3")
			cfg.Ingest = ingest
			// sg3's hour-long windows slid by a second, cut to 10 panes for
			// the reference evaluator.
			cfg.Window = WindowOverride{Size: 10000, Slide: 1000, SizeSet: true, SlideSet: true}
			var log syncBuffer
			cfg.Log = &log
			var started, stopped atomic.Int32
			cfg.Progress = func(e *engine.Engine, start time.Time) func() {
				assert.NotNil(t, e)
				assert.False(t, start.IsZero())
				started.Add(1)
				return func() { stopped.Add(1) }
			}
			b, res := runBench(t, context.Background(), cfg)
			assert.Equal(t, int32(1), started.Load())
			assert.Equal(t, int32(1), stopped.Load())
			require.NotNil(t, b.Engine())
			require.Len(t, b.Specs(), len(res.Parts))
			assert.True(t, res.Validated)
			assert.False(t, res.ValidationInterrupted)
			assert.False(t, res.WarmedUp)
			assert.Positive(t, res.Seconds)
			var names []string
			var total uint64
			for i, p := range res.Parts {
				names = append(names, p.Name)
				assert.True(t, p.Validated, "%s: %s", p.Name, p.Mismatch)
				assert.Empty(t, p.Mismatch)
				assert.Equal(t, p.Whole, p.Measured, "no warm-up: the whole run is measured")
				if p.Input != InputChained {
					assert.Equal(t, InputReplay, p.Input, p.Name)
					assert.Equal(t, uint64(n), p.Whole.Tuples, "%s: --validate-tuples bounds the input", p.Name)
					total += p.Whole.Tuples
				}
				assert.Contains(t, log.String(), "bench validating "+p.Name+" (", "part %d", i)
			}
			assert.Equal(t, total, res.TotalTuples)
			// sg3 is sg2 and sg1 over one input, chained into a window join.
			assert.Equal(t, []string{"GROUP-BY_64", "sg2", "sg1", "sg3"}, names)
			assert.Equal(t, InputReplay, res.Parts[1].Input)
			assert.Equal(t, InputChained, res.Parts[3].Input)
			assert.Contains(t, log.String(), "(4 of 4) against the reference evaluator\n")
		})
	}
}

// TestBenchJoin: a window join's two inputs, each bounded, validated.
func TestBenchJoin(t *testing.T) {
	_, res := runBench(t, context.Background(), benchConfig(4096, "join"))
	require.Len(t, res.Parts, 1)
	p := res.Parts[0]
	assert.True(t, p.Validated, p.Mismatch)
	assert.Equal(t, uint64(2*4096), p.Whole.Tuples, "a join reads the bound from each of its inputs")
	assert.Equal(t, uint64(2*4096), res.TotalTuples)
}

// TestBenchGenerated: a workload whose generator period does not fit a
// bundle (16M groups) is generated on the fly, by the producer, and still
// validates.
func TestBenchGenerated(t *testing.T) {
	cfg := benchConfig(5000, "groupby")
	cfg.Params.Groups = MaxGroups
	cfg.Ingest = engine.IngestWorkers
	_, res := runBench(t, context.Background(), cfg)
	require.Len(t, res.Parts, 1)
	assert.Equal(t, InputGenerate, res.Parts[0].Input)
	assert.True(t, res.Validated, res.Parts[0].Mismatch)
	assert.Equal(t, uint64(5000), res.Parts[0].Whole.Tuples)
}

// TestBenchWarmup: the measured interval is the one after the warm-up:
// its stats and seconds, the whole run's tuples besides; an input that
// ends within the warm-up is measured whole.
func TestBenchWarmup(t *testing.T) {
	cfg := BenchConfig{Workloads: []string{"groupby"}, Params: DefaultParams(), Engine: benchEngine, Ingest: engine.IngestProducer,
		BundleSize: 1 << 20, Warmup: 100 * time.Millisecond, Duration: 300 * time.Millisecond} // a warm-up of some tuples: 100 ms is plenty, and the engine runs flat out through it
	_, res := runBench(t, context.Background(), cfg)
	require.True(t, res.WarmedUp)
	require.Len(t, res.Parts, 1)
	p := res.Parts[0]
	assert.Positive(t, p.Measured.Tuples)
	assert.Greater(t, p.Whole.Tuples, p.Measured.Tuples, "the warm-up's tuples are not measured")
	assert.Equal(t, p.Whole.Tuples, res.TotalTuples)
	assert.InDelta(t, 0.3, res.Seconds, 0.25, "the measured interval is the duration, not the whole run")
	assert.False(t, res.Validated, "not validated without Validate")

	cfg = benchConfig(5000, "groupby")
	cfg.Warmup = time.Minute
	_, res = runBench(t, context.Background(), cfg)
	assert.False(t, res.WarmedUp, "the input ended within the warm-up")
	assert.Equal(t, res.Parts[0].Whole, res.Parts[0].Measured)
	assert.True(t, res.Validated)
}

// TestBenchCancelled: a cancelled context stops the ingestion: the run
// ends long before its duration, with what ran.
func TestBenchCancelled(t *testing.T) {
	cfg := BenchConfig{Workloads: []string{"select"}, Params: DefaultParams(), Engine: benchEngine, Ingest: engine.IngestProducer,
		BundleSize: 1 << 20, Duration: time.Minute}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Cancelled 200 ms into the feeding, not into the set-up: a loaded
	// machine may take that long to make the bundle.
	cfg.Progress = func(*engine.Engine, time.Time) func() {
		time.AfterFunc(200*time.Millisecond, cancel)
		return func() {}
	}
	start := time.Now()
	_, res := runBench(t, ctx, cfg)
	assert.Less(t, time.Since(start), 30*time.Second)
	assert.Positive(t, res.Parts[0].Whole.Tuples)
}

// TestBenchValidationInterrupted: a context cancelled while the reference
// runs stops the validation at once: the parts not checked are not
// validated.
func TestBenchValidationInterrupted(t *testing.T) {
	// sg2's groups in hour-long windows slid by a second: the reference
	// evaluator takes a while even over 100 tuples.
	cfg := benchConfig(100, "groupby", "sg2")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg.Log = logFunc(func(line string) {
		if strings.Contains(line, "SG2 (2 of 2) against") {
			cancel()
		}
	})
	start := time.Now()
	_, res := runBench(t, ctx, cfg)
	assert.Less(t, time.Since(start), 30*time.Second)
	assert.True(t, res.ValidationInterrupted)
	assert.False(t, res.Validated)
	require.Len(t, res.Parts, 2)
	assert.True(t, res.Parts[0].Validated, "groupby was checked before the cancel: %s", res.Parts[0].Mismatch)
	assert.False(t, res.Parts[1].Validated, "sg2 was not checked")
	assert.Empty(t, res.Parts[1].Mismatch)
}

// logFunc calls f with each line written.
type logFunc func(line string)

func (f logFunc) Write(p []byte) (int, error) {
	f(string(p))
	return len(p), nil
}

// TestBenchMismatch: an output that differs from the reference's is not
// validated, and says how it differs.
func TestBenchMismatch(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tamper func(bp *benchPart)
		want   string
	}{
		{"groupby", func(bp *benchPart) { bp.output.Rows[0].Values[0] = bp.output.Rows[0].Values[1] }, ""},
		{"select", func(bp *benchPart) { bp.tuples[len(bp.tuples)-1] ^= 1 }, ""},
		{"join", func(bp *benchPart) { bp.tuples = bp.tuples[:len(bp.tuples)-1] }, "join output differs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := benchConfig(4096, tc.name)
			b, err := NewBench(cfg)
			require.NoError(t, err)
			b.eng, err = engine.Start(cfg.Engine, b.specs)
			require.NoError(t, err)
			whole, _, _, err := b.run(context.Background(), cfg.Engine)
			require.NoError(t, err)
			tc.tamper(b.parts[0])
			res := &BenchResult{Parts: []PartResult{{Name: b.parts[0].name, Whole: whole[0]}}}
			b.validateAll(context.Background(), res)
			assert.False(t, res.Validated)
			assert.False(t, res.ValidationInterrupted)
			assert.False(t, res.Parts[0].Validated)
			assert.NotEmpty(t, res.Parts[0].Mismatch)
			assert.Contains(t, res.Parts[0].Mismatch, tc.want)
		})
	}
}

// TestNewBenchUsageErrors: what the user can mend is ErrUsage, with the
// message naming it.
func TestNewBenchUsageErrors(t *testing.T) {
	cases := []struct {
		name string
		cfg  func(c *BenchConfig)
		want []string
	}{
		{"unknown workload", func(c *BenchConfig) { c.Workloads = []string{"nosuch"} }, []string{`unknown workload "nosuch"`, "groupby"}},
		{"unknown after a known one", func(c *BenchConfig) { c.Workloads = []string{"proj", "nosuch"} }, []string{`"nosuch"`}},
		{"window for proj", func(c *BenchConfig) {
			c.Workloads = []string{"proj"}
			c.Window = WindowOverride{Size: 100, SizeSet: true}
		},
			[]string{"do not apply to proj (no window)"}},
		{"bad window", func(c *BenchConfig) { c.Window = WindowOverride{Size: 0, SizeSet: true} }, []string{"groupby: --window-size 0: must be positive"}},
		{"selectivity", func(c *BenchConfig) { c.Workloads = []string{"select"}; c.Params.Selectivity = 1.5 }, []string{"selectivity 1.5", "[0, 1]"}},
		{"groups", func(c *BenchConfig) { c.Params.Groups = 0 }, []string{"groups 0"}},
		{"join predicates", func(c *BenchConfig) { c.Workloads = []string{"join"}; c.Params.JoinPredicates = 0 }, []string{"join predicates 0"}},
		{"task size", func(c *BenchConfig) { c.Engine.TaskSize = 100 }, []string{"groupby: task size 100", "32-byte tuple"}},
		{"cm1 task size", func(c *BenchConfig) { c.Workloads = []string{"cm1"}; c.Engine.TaskSize = 16384 + 32 }, []string{"cm1: task size", "64-byte tuple"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := benchConfig(0, "groupby")
			tc.cfg(&cfg)
			_, err := NewBench(cfg)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrUsage)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}

	// An engine that does not start on the configuration Run is given
	// (a static binding to a kind that is not there) is ErrUsage too.
	b, err := NewBench(benchConfig(1000, "groupby"))
	require.NoError(t, err)
	eng := benchEngine
	eng.Policy, eng.Static = "static", map[string]string{"GROUPBY_64": "gpu"}
	_, err = b.Run(context.Background(), eng)
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrUsage)
}

// TestBenchWindowOverrideApply: each given field replaces its own; a
// tumbling window stays tumbling when only its size is given.
func TestBenchWindowOverrideApply(t *testing.T) {
	tumbling := query.Window{Type: query.Range, Size: 1000, Slide: 1000}
	sliding := query.Window{Type: query.Range, Size: 1000, Slide: 100}
	cases := []struct {
		name string
		o    WindowOverride
		w    query.Window
		want query.Window
		err  []string
	}{
		{"nothing", WindowOverride{}, sliding, sliding, nil},
		{"tumbling size", WindowOverride{Size: 5, SizeSet: true}, tumbling, query.Window{Type: query.Range, Size: 5, Slide: 5}, nil},
		{"sliding size", WindowOverride{Size: 500, SizeSet: true}, sliding, query.Window{Type: query.Range, Size: 500, Slide: 100}, nil},
		{"slide", WindowOverride{Slide: 250, SlideSet: true}, sliding, query.Window{Type: query.Range, Size: 1000, Slide: 250}, nil},
		{"rows", WindowOverride{Type: "row", TypeSet: true}, sliding, query.Window{Type: query.Rows, Size: 1000, Slide: 100}, nil},
		{"range", WindowOverride{Type: "range", TypeSet: true}, query.Window{Type: query.Rows, Size: 8, Slide: 8}, query.Window{Type: query.Range, Size: 8, Slide: 8}, nil},
		{"bad type", WindowOverride{Type: "tumbling", TypeSet: true}, sliding, query.Window{}, []string{`--window-type "tumbling": valid: range, row`}},
		{"empty type", WindowOverride{TypeSet: true}, sliding, query.Window{}, []string{`--window-type ""`}},
		{"size 0", WindowOverride{SizeSet: true}, sliding, query.Window{}, []string{"--window-size 0: must be positive"}},
		{"slide -1", WindowOverride{Slide: -1, SlideSet: true}, sliding, query.Window{}, []string{"--window-slide -1: must be positive"}},
		{"slide over size", WindowOverride{Size: 100, Slide: 200, SizeSet: true, SlideSet: true}, sliding, query.Window{}, []string{"slide 200 larger than size 100"}},
		{"size under the slide", WindowOverride{Size: 50, SizeSet: true}, sliding, query.Window{}, []string{"the workload's slide is 100; give --window-slide too"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.o.TypeSet || tc.o.SizeSet || tc.o.SlideSet, tc.o.Given())
			got, err := tc.o.Apply(tc.w)
			if tc.err != nil {
				require.Error(t, err)
				assert.True(t, errors.Is(err, ErrUsage), "%v is ErrUsage", err)
				for _, w := range tc.err {
					assert.Contains(t, err.Error(), w)
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestStatsSince(t *testing.T) {
	from := engine.Stats{Tasks: 1, Bytes: 2, Tuples: 3, Filtered: 4, Unmatched: 5, Late: 6, Counted: 7, Windows: 8, Rows: 9, GPUFallbackTasks: 10, Query: "q"}
	end := engine.Stats{Tasks: 11, Bytes: 22, Tuples: 33, Filtered: 44, Unmatched: 55, Late: 66, Counted: 77, Windows: 88, Rows: 99, GPUFallbackTasks: 110, Query: "q"}
	got := end.Since(from)
	assert.Equal(t, engine.Stats{Tasks: 10, Bytes: 20, Tuples: 30, Filtered: 40, Unmatched: 50, Late: 60, Counted: 70, Windows: 80, Rows: 90, GPUFallbackTasks: 100, Query: "q"}, got)
	// A snapshot ahead of the counters (a restore's, read first) is none.
	assert.Equal(t, engine.Stats{Query: "q"}, from.Since(end))
}

// TestBenchGC: the measured interval's GC figures count what it allocated
// (the recorded output of a validated run is more than nothing), and the
// stateless parts run too.
func TestBenchGC(t *testing.T) {
	_, res := runBench(t, context.Background(), benchConfig(20000, "proj", "select"))
	assert.Positive(t, res.HeapAllocBytes)
	assert.True(t, res.Validated)
	for _, p := range res.Parts {
		assert.Equal(t, uint64(20000), p.Whole.Tuples, p.Name)
		assert.Zero(t, p.Whole.Windows, p.Name)
	}
	g := readGC()
	gcSink = make([]byte, 1<<20)
	assert.GreaterOrEqual(t, readGC().since(g).allocBytes, uint64(1<<20))
}

var gcSink []byte

// TestBenchConfigCheck: NewBench refuses, before any work and naming
// saber-hx bench's flags, durations no run can have, a negative bundle,
// and settings given that no workload of the run reads; an option read by
// one workload of several is taken.
func TestBenchConfigCheck(t *testing.T) {
	base := BenchConfig{Workloads: []string{"proj"}, Params: DefaultParams(), Engine: benchEngine, Duration: time.Second}
	for _, c := range []struct {
		mod  func(*BenchConfig)
		want string // "": accepted
	}{
		{func(c *BenchConfig) { c.Duration = 0 }, "--duration 0s: must be positive"},
		{func(c *BenchConfig) { c.Warmup = -time.Second }, "--warmup -1s: must not be negative"},
		{func(c *BenchConfig) { c.BundleSize = -1 }, "--bundle-size -1: must not be negative"},
		{func(c *BenchConfig) { c.Validate, c.Given = true, []string{"validate-tuples"} }, "--validate-tuples 0: must be positive"},
		{func(c *BenchConfig) { c.ValidateTuples, c.Given = 10, []string{"validate-tuples"} }, "bench: --validate-tuples applies to --validate, not to a run without it"},
		{func(c *BenchConfig) { c.Given = []string{"predicates"} }, "bench: --predicates applies to select, not to proj"},
		{func(c *BenchConfig) { c.Given = []string{"selectivity"} }, "bench: --selectivity applies to select, not to proj"},
		{func(c *BenchConfig) { c.Workloads, c.Given = []string{"groupby", "cm1"}, []string{"agg"} }, "bench: --agg applies to agg, not to groupby,cm1"},
		{func(c *BenchConfig) { c.Given = []string{"groups"} }, "bench: --groups applies to groupby, not to proj"},

		{func(c *BenchConfig) {
			c.Workloads, c.Given = []string{"proj", "select"}, []string{"predicates", "attributes"}
		}, ""},
		{func(c *BenchConfig) { c.Given = []string{"tuples-per-ms", "attributes", "expr-depth", "duration"} }, ""},
		{func(c *BenchConfig) { c.Validate, c.ValidateTuples, c.Given = true, 10, []string{"validate-tuples"} }, ""},
		{func(c *BenchConfig) { c.BundleSize = 1 << 30 }, ""},
	} {
		cfg := base
		c.mod(&cfg)
		err := cfg.check()
		if c.want == "" {
			assert.NoError(t, err)
			continue
		}
		require.ErrorIs(t, err, ErrUsage, c.want)
		assert.Equal(t, c.want, err.Error())
		_, err = NewBench(cfg)
		assert.ErrorIs(t, err, ErrUsage, c.want)
	}
	for _, w := range All() {
		for _, o := range w.Options {
			assert.Contains(t, []string{"attributes", "expr-depth", "predicates", "selectivity", "agg", "groups", "join-predicates"}, o, w.Name)
		}
	}
}
