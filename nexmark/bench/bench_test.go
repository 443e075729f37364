package bench

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/internal/kafkatest"
	"github.com/saber-hx/saber-hx/internal/testenv"
	"github.com/saber-hx/saber-hx/nexmark"
	"github.com/saber-hx/saber-hx/pipeline"
)

func TestMain(m *testing.M) { testenv.MainParallel(m, 4) }

func TestQueries(t *testing.T) {
	qs := Queries()
	assert.Contains(t, qs, "q0")
	assert.Contains(t, qs, "q22")
	assert.Equal(t, "q0", qs[0])
}

// TestText: the prelude's sources become JSON files or Kafka topics; the
// query below it is as written.
func TestText(t *testing.T) {
	plain, err := Text(Config{Query: "q2"})
	require.NoError(t, err)
	q := plain[strings.Index(plain, preludeEnd):]
	for _, c := range []struct {
		cfg  Config
		want []string
	}{
		{Config{Query: "q2", Source: "json", Dir: "/data/it's"}, []string{"'path' = '/data/it''s/person.json'", "'path' = '/data/it''s/bid.json'"}},
		{Config{Query: "q2", Source: "kafka", Brokers: []string{"a:1", "b:2"}, TopicPrefix: "nx-"},
			[]string{"'topic' = 'nx-auction'", "'properties.bootstrap.servers' = 'a:1,b:2'"}},
	} {
		text, err := Text(c.cfg)
		require.NoError(t, err)
		for _, w := range c.want {
			assert.Contains(t, text, w)
		}
		assert.NotContains(t, text, "'connector' = 'nexmark'")
		assert.True(t, strings.HasSuffix(text, q), "the query is as written")
		_, err = pipeline.Compile("q2.sql", text)
		require.NoError(t, err)
	}
	for _, c := range []struct {
		cfg Config
		err string
	}{
		{Config{Query: "q99"}, `no Nexmark query "q99" (have q0, q1, q2`},
		{Config{Query: "q2", Source: "json"}, "name the directory"},
		{Config{Query: "q2", Source: "kafka"}, "name the brokers"},
		{Config{Query: "q2", Source: "csv"}, `source "csv": want nexmark, json or kafka`},
	} {
		_, err := Text(c.cfg)
		require.ErrorIs(t, err, ErrUsage)
		assert.Contains(t, err.Error(), c.err)
		assert.NotContains(t, err.Error(), "usage", "ErrUsage marks the error without a word in its text")
	}
}

// TestRunReplay: a short replayed run, validated first: events counted
// as Nexmark counts them, rows out, the summary's figures consistent.
func TestRunReplay(t *testing.T) {
	t.Parallel()
	var log bytes.Buffer
	var started, engineStarted []*engine.Engine
	res, err := Run(context.Background(), Config{Query: "q2", Events: 50_000, Warmup: 100 * time.Millisecond, Duration: 400 * time.Millisecond,
		Validate: true, ValidateEvents: 30_000, Log: &log,
		Engine:  engine.Config{Workers: 2, Started: func(e *engine.Engine) { engineStarted = append(engineStarted, e) }},
		Started: func(e *engine.Engine) { started = append(started, e) }})
	require.NoError(t, err)
	assert.Len(t, started, 1, "Started: the measured run's engine, not the validation's")
	// Engine.Started (the command line's metrics registry) too: the
	// validation's engine, of the same query names, would stand for it.
	assert.Equal(t, started, engineStarted)
	require.NotNil(t, res.Validated)
	assert.True(t, *res.Validated, res.Mismatch)
	assert.Equal(t, int64(30_000), res.ValidateEvents)
	assert.False(t, res.Inline)
	assert.GreaterOrEqual(t, res.BundleEvents, int64(50_000))
	assert.Positive(t, res.Events)
	assert.Positive(t, res.Rows)
	assert.InDelta(t, 0.4, res.Seconds, 0.3)
	assert.InDelta(t, float64(res.Tuples)*50/46, float64(res.Events), 50, "bids are 46 of every 50 events")
	assert.InDelta(t, res.EventsPerS/float64(res.Cores), res.EventsPerSPerCore, 1e-6)
	assert.Equal(t, int64(750), res.ValidateRate, "30,000 events over 40 s of event time")
	assert.Contains(t, log.String(), "validating over 30000 events at 750 events/s of event time")

	// The records read and the mix: q2 reads the bids alone.
	assert.Equal(t, "replay", res.Mode)
	assert.Equal(t, nexmark.DefaultConfig().EventRate, res.Rate)
	assert.Equal(t, []string{"bid"}, res.TablesRead)
	assert.False(t, res.WholeMix)
	// CPU time measured over the measured interval, per CPU-second used.
	require.Positive(t, res.CPUSeconds)
	assert.InDelta(t, res.CPUSeconds/res.Seconds, res.CPUsUsed, 1e-9)
	assert.InDelta(t, float64(res.Tuples)/res.CPUSeconds, res.TuplesPerCPUSecond, 1e-3)
	assert.InDelta(t, float64(res.Events)/res.CPUSeconds, res.EventsPerCPUSecond, 1e-3)
	text := res.Text()
	for _, w := range []string{"nexmark q2 (nexmark): ", " M tuples/s, ", " M tuples per CPU-second (", "bid read, not the whole mix",
		" M events/s of the sequence spanned", "a replayed bundle, rate 10000 events/s of event time", " events in ", "validated: true"} {
		assert.Contains(t, text, w)
	}
}

// TestRunInlineRate: the generator in the loop at another rate: the
// result says so.
func TestRunInlineRate(t *testing.T) {
	t.Parallel()
	nc := nexmark.DefaultConfig()
	nc.EventRate = 100_000
	res, err := Run(context.Background(), Config{Query: "q1", Inline: true, Nexmark: nc, Warmup: 50 * time.Millisecond, Duration: 300 * time.Millisecond,
		Engine: engine.Config{Workers: 2}})
	require.NoError(t, err)
	assert.Equal(t, "inline", res.Mode)
	assert.Equal(t, int64(100_000), res.Rate)
	assert.Zero(t, res.BundleEvents)
	assert.Positive(t, res.Tuples)
	assert.Positive(t, res.CPUSeconds)
	assert.Contains(t, res.Text(), "the generator in the loop, rate 100000 events/s of event time")
}

// TestGenerateFilesAndRunJSON: generate writes each table's JSON lines
// (and refuses to overwrite them); the same query over those files gives
// the rows the generator's bids give.
func TestGenerateFilesAndRunJSON(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	nc := nexmark.DefaultConfig()
	nc.Events = 20_000
	res, err := Generate(context.Background(), GenerateConfig{Nexmark: nc, Dir: dir})
	require.NoError(t, err)
	assert.Equal(t, int64(20_000), res.Events)
	assert.Equal(t, map[string]int64{filepath.Join(dir, "person.json"): 400, filepath.Join(dir, "auction.json"): 1200, filepath.Join(dir, "bid.json"): 18_400}, res.Records)
	b, err := os.ReadFile(filepath.Join(dir, "bid.json"))
	require.NoError(t, err)
	assert.Equal(t, 18_400, bytes.Count(b, []byte("\n")))

	_, err = Generate(context.Background(), GenerateConfig{Nexmark: nc, Dir: dir})
	require.ErrorIs(t, err, ErrUsage)
	assert.Contains(t, err.Error(), "person.json exists")

	run, err := Run(context.Background(), Config{Query: "q2", Source: "json", Dir: dir, Engine: engine.Config{Workers: 2}})
	require.NoError(t, err)
	assert.Equal(t, uint64(18_400), run.Tuples)
	assert.Equal(t, uint64(20_000), run.Events)
	assert.Equal(t, wantQ2(t, nc), run.Rows)

	// The queries run over the files as written, validated (the files'
	// columns can be NULL, where the generator's cannot: q8's keys, a
	// BIGINT that can be NULL and a string, take 16 bytes): the joins and
	// q8, and every query with SABER_HX_LONG_TESTS (CI).
	queries := []string{"q5", "q7", "q8"}
	if testenv.Full() {
		queries = Queries()
	}
	for _, q := range queries {
		run, err := Run(context.Background(), Config{Query: q, Source: "json", Dir: dir, Engine: engine.Config{Workers: 2},
			Validate: true, ValidateEvents: 20_000})
		require.NoError(t, err, q)
		require.NotNil(t, run.Validated, q)
		assert.True(t, *run.Validated, q)
		assert.Equal(t, uint64(20_000), run.Events, q)
		if q == "q8" {
			// People and auctions alone: 1,600 records read, the
			// 20,000 events they span claimed.
			assert.Equal(t, []string{"person", "auction"}, run.TablesRead)
			assert.Equal(t, uint64(1600), run.Tuples)
			assert.False(t, run.WholeMix)
			assert.Equal(t, "json", run.Mode)
			assert.Zero(t, run.Rate)
		}
	}
}

// wantQ2 counts q2's rows over the bids of nc's sequence.
func wantQ2(t *testing.T, nc nexmark.Config) uint64 {
	g, err := nexmark.New(nc)
	require.NoError(t, err)
	var n uint64
	var ev nexmark.Event
	for g.NextOf(nexmark.BidTable, &ev) {
		if ev.Bid.Auction%123 == 0 {
			n++
		}
	}
	require.Positive(t, n)
	return n
}

// TestGenerateKafkaAndRun: generate produces each table to its topic
// (kcat, a second client, counts the records); the query reads the topics
// to their end.
func TestGenerateKafkaAndRun(t *testing.T) {
	t.Parallel()
	addr := kafkatest.Broker(t, 2, "nx-person", "nx-auction", "nx-bid")
	nc := nexmark.DefaultConfig()
	nc.Events = 10_000
	res, err := Generate(context.Background(), GenerateConfig{Nexmark: nc, Brokers: []string{addr}, TopicPrefix: "nx-"})
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"nx-person": 200, "nx-auction": 600, "nx-bid": 9200}, res.Records)
	out := kafkatest.RunKcat(t, nil, "-C", "-b", addr, "-t", "nx-bid", "-e", "-q")
	assert.Equal(t, 9200, bytes.Count(out, []byte("\n")))

	run, err := Run(context.Background(), Config{Query: "q2", Source: "kafka", Brokers: []string{addr}, TopicPrefix: "nx-", Engine: engine.Config{Workers: 2}})
	require.NoError(t, err)
	assert.Equal(t, uint64(9200), run.Tuples)
	assert.Equal(t, wantQ2(t, nc), run.Rows)
}

// TestValidateRate: a validation run spans MinValidateSpan of event time
// at the least, at the measured run's rate where that does.
func TestValidateRate(t *testing.T) {
	t.Parallel()
	assert.Equal(t, int64(5_000), validateRate(100_000, DefaultValidateEvents), "the V2 rate: 2 s at 100,000/s")
	assert.Equal(t, int64(1_000), validateRate(1_000, DefaultValidateEvents), "200 s at 1,000/s")
	assert.Equal(t, int64(1), validateRate(100_000, 10))
	assert.Equal(t, int64(100_000), validateRate(100_000, 1e12), "no overflow")
	for _, ev := range []int64{200_000, 1_000_000, 45_678} {
		r := validateRate(100_000, ev)
		assert.GreaterOrEqual(t, time.Duration(ev)*time.Second/time.Duration(r), MinValidateSpan, "%d events at %d/s", ev, r)
	}
}

// TestCheckCounts: negative counts and durations, a measured interval that
// is not positive and a 0 given where 0 would be the default are refused
// before any work, naming the flag; 0 not given is the default.
func TestCheckCounts(t *testing.T) {
	t.Parallel()
	ok := Config{Query: "q0", Nexmark: nexmark.DefaultConfig()}
	require.NoError(t, ok.Check(), "zero counts and durations not given: the defaults")
	for _, c := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.Query = "" }, "nexmark: name a query (q0, q1"},
		{func(c *Config) { c.Events = -5 }, "--events -5: must be positive"},
		{func(c *Config) { c.Given = []string{"events"} }, "--events 0: must be positive"},
		{func(c *Config) { c.ValidateEvents = -1 }, "--validate-events -1: must be positive"},
		{func(c *Config) { c.Nexmark.EventRate = 0; c.Given = []string{"rate"} }, "--rate 0: must be positive"},
		{func(c *Config) { c.Warmup = -time.Second }, "--warmup -1s: must not be negative"},
		{func(c *Config) { c.Warmup, c.Duration = time.Second, -500*time.Millisecond }, "--duration -500ms: must be positive"},
		{func(c *Config) { c.Given = []string{"warmup", "duration"} }, "--duration 0s: must be positive"},
	} {
		cfg := ok
		c.mod(&cfg)
		err := cfg.Check()
		require.ErrorIs(t, err, ErrUsage, c.want)
		assert.Equal(t, c.want, err.Error()[:min(len(err.Error()), len(c.want))])
		// Run refuses it before the bundle: nothing logged.
		var log bytes.Buffer
		cfg.Log = &log
		_, err = Run(context.Background(), cfg)
		require.ErrorIs(t, err, ErrUsage, c.want)
		assert.Empty(t, log.String(), c.want)
	}
}

// TestCheckGivenThatDoesNothing: a setting given where it does nothing is
// refused, naming its flag and where it applies; where it does something
// it is not.
func TestCheckGivenThatDoesNothing(t *testing.T) {
	t.Parallel()
	nc := nexmark.DefaultConfig()
	json := Config{Query: "q0", Source: "json", Dir: "/nx", Nexmark: nc}
	kafka := Config{Query: "q0", Source: "kafka", Brokers: []string{"b:1"}, Nexmark: nc}
	gen := Config{Query: "q0", Nexmark: nc}
	inline := Config{Query: "q0", Inline: true, Nexmark: nc}
	with := func(c Config, given ...string) Config {
		c.Given, c.Events, c.ValidateEvents, c.Duration = given, 1000, 1000, time.Second
		return c
	}
	validated := func(c Config) Config { c.Validate = true; return c }
	for _, c := range []struct {
		cfg  Config
		want string // "": accepted
	}{
		{with(json, "warmup"), "nexmark: --warmup applies to --source nexmark, not to --source json (files and topics are read whole"},
		{with(kafka, "duration"), "nexmark: --duration applies to --source nexmark, not to --source kafka"},
		{with(Config{Query: "q0", Source: "json", Dir: "/nx", Nexmark: nc, Inline: true}, "inline"), "nexmark: --inline applies to --source nexmark, not to --source json"},
		{with(json, "inline"), ""}, // --inline=false asks for nothing
		{with(json, "events"), "nexmark: --events applies to the bundle that --source nexmark replays, not to --source json"},
		{with(inline, "events"), "nexmark: --events applies to the bundle that --source nexmark replays, not to --inline (no bundle)"},
		{with(json, "rate"), "nexmark: --rate applies to --source nexmark and --validate's run, not to --source json without --validate"},
		{with(kafka, "seed"), "nexmark: --seed applies to --source nexmark and --validate's run, not to --source kafka without --validate"},
		{with(gen, "dir"), "nexmark: --dir applies to --source json, not to --source nexmark"},
		{with(gen, "brokers"), "nexmark: --brokers applies to --source kafka, not to --source nexmark"},
		{with(json, "brokers"), "nexmark: --brokers applies to --source kafka, not to --source json"},
		{with(json, "topic-prefix"), "nexmark: --topic-prefix applies to --source kafka, not to --source json"},
		{with(gen, "validate-events"), "nexmark: --validate-events applies to --validate, not to a run without it"},

		{with(gen, "warmup", "duration", "events", "rate", "seed", "inline"), ""},
		{with(inline, "warmup", "duration", "inline", "rate", "seed"), ""},
		{with(validated(json), "dir", "rate", "seed", "validate-events"), ""},
		{with(validated(kafka), "brokers", "topic-prefix", "rate"), ""},
	} {
		err := c.cfg.Check()
		if c.want == "" {
			assert.NoError(t, err, c.cfg.Given)
			continue
		}
		require.ErrorIs(t, err, ErrUsage, c.want)
		assert.Contains(t, err.Error(), c.want)
	}

	// generate: --topic-prefix names topics, not files.
	_, err := Generate(context.Background(), GenerateConfig{Nexmark: nexmark.Config{Events: 10}, Dir: t.TempDir(), TopicPrefix: "x-", Given: []string{"topic-prefix"}})
	require.ErrorIs(t, err, ErrUsage)
	assert.Contains(t, err.Error(), "generate: --topic-prefix applies to --brokers' topics, not to --out's files")
}

// failAfter passes left bytes to w, then fails as a file at its size limit
// does (ulimit -f): a short write and EFBIG, naming the file written.
type failAfter struct {
	w    io.Writer
	left int
}

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) <= f.left {
		f.left -= len(p)
		return f.w.Write(p)
	}
	n, _ := f.w.Write(p[:f.left])
	f.left = 0
	return n, &fs.PathError{Op: "write", Path: "/somewhere/.bid.json.tmp-123", Err: syscall.EFBIG}
}

// TestGenerateFailureLeavesNothing: a write that fails (a full disk, a
// file size limit) or a cancelled context leaves none of the files (they
// were left cut inside a record or empty, and a second generate was
// refused because they existed), nor the directory Generate made; the
// error names the file once. A second Generate then writes them.
func TestGenerateFailureLeavesNothing(t *testing.T) {
	t.Parallel()
	nc := nexmark.DefaultConfig()
	nc.Events = 20_000
	parent := t.TempDir()
	for _, dir := range []string{parent, filepath.Join(parent, "made")} {
		cfg := GenerateConfig{Nexmark: nc, Dir: dir, wrap: func(w io.Writer) io.Writer { return &failAfter{w: w, left: 100 << 10} }}
		_, err := Generate(context.Background(), cfg)
		require.Error(t, err)
		assert.Equal(t, "generate: write "+filepath.Join(dir, "bid.json")+": file too large", err.Error())
		assert.ErrorIs(t, err, syscall.EFBIG)
		assertNoFiles(t, parent, dir)

		ctx, cancel := context.WithCancel(context.Background())
		var log bytes.Buffer
		cfg = GenerateConfig{Nexmark: nc, Dir: dir, Log: &log, wrap: func(w io.Writer) io.Writer { return cancelOnWrite{w, cancel} }}
		_, err = Generate(ctx, cfg)
		require.ErrorIs(t, err, context.Canceled)
		assert.Contains(t, err.Error(), "generate: interrupted after ")
		assert.Contains(t, err.Error(), " of 20000 events, the files were removed")
		assert.Contains(t, log.String(), "nexmark generate: interrupted after ")
		assertNoFiles(t, parent, dir)
	}
	dir := filepath.Join(parent, "made")
	res, err := Generate(context.Background(), GenerateConfig{Nexmark: nc, Dir: dir})
	require.NoError(t, err, "nothing left in the way")
	assert.Equal(t, int64(18_400), res.Records[filepath.Join(dir, "bid.json")])
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, left, 3, "the three files, no temporary one")
}

// cancelOnWrite cancels the context at the first write that reaches the
// file.
type cancelOnWrite struct {
	w      io.Writer
	cancel func()
}

func (c cancelOnWrite) Write(p []byte) (int, error) { c.cancel(); return c.w.Write(p) }

// assertNoFiles: no file in dir (none of the three, no temporary one), and
// no dir where Generate made it (dir != parent).
func assertNoFiles(t *testing.T, parent, dir string) {
	t.Helper()
	if dir != parent {
		_, err := os.Lstat(dir)
		assert.ErrorIs(t, err, fs.ErrNotExist, "the directory Generate made is removed")
		return
	}
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range left {
		assert.Fail(t, "a failed Generate left "+e.Name())
	}
}

// TestTextInterrupted: the text summary of an interrupted run says so (it
// did not), by which signal where it is known.
func TestTextInterrupted(t *testing.T) {
	t.Parallel()
	r := Result{Query: "q0", Source: "nexmark", Mode: "replay", TablesRead: []string{"bid"}}
	assert.NotContains(t, r.Text(), "interrupted")
	r.Interrupted = true
	assert.True(t, strings.HasSuffix(r.Text(), "validated: not asked (--validate); interrupted: the figures are those of what ran before it"), r.Text())
	r.Signal = "SIGINT"
	assert.True(t, strings.HasSuffix(r.Text(), "; interrupted by SIGINT: the figures are those of what ran before it"), r.Text())
}

// TestValidationInterrupted: a context cancelled during --validate's run
// ends Run there, marked interrupted, not validated nor failed (it
// reported a mismatch, "interrupted", and went on to generate the bundle
// and run the measured run over the cancelled context).
func TestValidationInterrupted(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var log bytes.Buffer
	res, err := Run(ctx, Config{Query: "q1", Events: 1000, Duration: time.Second, Validate: true, ValidateEvents: 10_000, Log: &log, Engine: engine.Config{Workers: 2}})
	require.NoError(t, err)
	assert.True(t, res.Interrupted)
	assert.True(t, res.ValidationInterrupted)
	assert.Nil(t, res.Validated)
	assert.Empty(t, res.Mismatch)
	assert.NotContains(t, log.String(), "generating", "the measured run did not start")
	assert.Contains(t, res.Text(), "validated: interrupted before every query was checked (the measured run did not start); interrupted: ")
}
