package ysb

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/scheduler"
	"github.com/saber-hx/saber-hx/sink"
)

// fileFixture writes a disordered generated events file and its table.
type fileFixture struct {
	dir, events, campaigns string
	data                   []byte
	want                   []Row
	counts                 Counts
}

func newFileFixture(t *testing.T, tuples int) fileFixture {
	t.Helper()
	gen := newGen(t, DefaultGenConfig())
	data := make([]byte, tuples*TupleSize)
	gen.Fill(data, 0)
	disorder(rand.New(rand.NewPCG(7, 8)), data, WindowMs)
	want, counts, err := Reference(data, gen.Campaigns(), WindowMs)
	require.NoError(t, err)
	dir := t.TempDir()
	fx := fileFixture{dir: dir, events: filepath.Join(dir, "events.bin"), campaigns: filepath.Join(dir, "campaigns.csv"), data: data, want: want, counts: counts}
	require.NoError(t, os.WriteFile(fx.events, data, 0o644))
	require.NoError(t, sink.WriteFile(fx.campaigns, gen.Campaigns().WriteCSV))
	return fx
}

func fileEngine() engine.Config {
	return engine.Config{Workers: 2, TaskSize: 64 * TupleSize, BufferSize: 1 << 16}
}

func countsOf(st engine.Stats) Counts {
	return Counts{Tuples: st.Tuples, Filtered: st.Filtered, Unmatched: st.Unmatched, Late: st.Late, Counted: st.Counted}
}

func TestRunFiles(t *testing.T) {
	fx := newFileFixture(t, 50000)
	out := filepath.Join(fx.dir, "results.csv")
	res, err := RunFiles(context.Background(), fileEngine(), FileConfig{Events: fx.events, Campaigns: fx.campaigns, Output: out})
	require.NoError(t, err)
	assert.False(t, res.Interrupted)
	assert.Equal(t, fx.want, res.Rows)
	assert.Equal(t, fx.counts, countsOf(res.Stats))
	f, err := os.Open(out)
	require.NoError(t, err)
	defer f.Close()
	back, err := ReadResultsCSV(f, out)
	require.NoError(t, err)
	assert.Equal(t, fx.want, back)
	assertOnlyFiles(t, fx.dir, "events.bin", "campaigns.csv", "results.csv")

	// No output: the rows only.
	res, err = RunFiles(context.Background(), fileEngine(), FileConfig{Events: fx.events, Campaigns: fx.campaigns})
	require.NoError(t, err)
	assert.Equal(t, fx.want, res.Rows)
}

// noRead fails the test if the run reads its input: errors that come
// before any work.
type noRead struct{ t *testing.T }

func (r noRead) Read([]byte) (int, error) {
	r.t.Error("input read before the output was opened")
	return 0, io.EOF
}

func TestRunFilesRefusals(t *testing.T) {
	fx := newFileFixture(t, 3000)
	hard := filepath.Join(fx.dir, "hard.bin")
	require.NoError(t, os.Link(fx.events, hard))
	soft := filepath.Join(fx.dir, "soft.csv")
	require.NoError(t, os.Symlink("campaigns.csv", soft))
	file := filepath.Join(fx.dir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	ctx := context.Background()

	for _, tc := range []struct {
		name, output, want string
		usage              bool
	}{
		{"output is the events", fx.events, "same file", true},
		{"output a hard link to the events", hard, "same file", true},
		{"output is the campaigns", fx.campaigns, "same file", true},
		{"output a symlink to the campaigns", soft, "same file", true},
		{"output in a missing directory", filepath.Join(fx.dir, "no", "out.csv"), "no such file or directory", true},
		{"output under a regular file", filepath.Join(file, "out.csv"), "not a directory", true},
		{"output a directory", fx.dir, "is a directory", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, fc := range []FileConfig{
				{Events: fx.events, Campaigns: fx.campaigns, Output: tc.output},
				{Events: "-", Stdin: noRead{t}, Campaigns: fx.campaigns, Output: tc.output}, // nothing read
			} {
				if fc.Events == "-" && (tc.output == fx.events || tc.output == hard) {
					continue // the events are not an input of this run
				}
				res, err := RunFiles(ctx, fileEngine(), fc)
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.want)
				var ie *InputError
				assert.Equal(t, tc.usage, errors.As(err, &ie), "an InputError (exit status 2)")
				assert.Zero(t, res.Stats.Tuples)
			}
		})
	}
	// Standard input redirected from the events file, the output that file.
	in, err := os.Open(fx.events)
	require.NoError(t, err)
	defer in.Close()
	for _, o := range []string{fx.events, hard} {
		_, err = RunFiles(ctx, fileEngine(), FileConfig{Events: "-", Stdin: in, Campaigns: fx.campaigns, Output: o})
		assert.ErrorIs(t, err, sink.ErrSameFile, o)
	}

	b, err := os.ReadFile(fx.events)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(fx.data, b), "the events file is untouched")
	assertOnlyFiles(t, fx.dir, "events.bin", "campaigns.csv", "hard.bin", "soft.csv", "file")

	// Missing inputs, and a partial tuple in a regular file, checked up front.
	for _, fc := range []FileConfig{
		{Events: "", Campaigns: fx.campaigns},
		{Events: fx.events, Campaigns: ""},
		{Events: filepath.Join(fx.dir, "missing.bin"), Campaigns: fx.campaigns},
		{Events: fx.events, Campaigns: filepath.Join(fx.dir, "missing.csv")},
		{Events: fx.dir, Campaigns: fx.campaigns},
		{Events: file, Campaigns: fx.events},
	} {
		_, err := RunFiles(ctx, fileEngine(), fc)
		var ie *InputError
		assert.ErrorAs(t, err, &ie, "%+v", fc)
	}
	odd := filepath.Join(fx.dir, "odd.bin")
	require.NoError(t, os.WriteFile(odd, fx.data[:5*TupleSize+3], 0o644))
	_, err = RunFiles(ctx, fileEngine(), FileConfig{Events: odd, Campaigns: fx.campaigns})
	assert.ErrorContains(t, err, "3 trailing bytes")
}

// TestRunFilesStdin: "-" reads the configured reader, a pipe here, as a
// stream, in chunks that do not fall on tuple boundaries.
func TestRunFilesStdin(t *testing.T) {
	fx := newFileFixture(t, 20000)
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	go func() {
		defer w.Close()
		for b := fx.data; len(b) > 0; {
			n := min(len(b), 1000+rand.IntN(5000))
			if _, err := w.Write(b[:n]); err != nil {
				return
			}
			b = b[n:]
		}
	}()
	out := filepath.Join(fx.dir, "out.csv")
	res, err := RunFiles(context.Background(), fileEngine(), FileConfig{Events: "-", Stdin: r, Campaigns: fx.campaigns, Output: out})
	require.NoError(t, err)
	assert.Equal(t, fx.want, res.Rows)
	assert.Equal(t, fx.counts, countsOf(res.Stats))
	_, err = os.Stat(out)
	assert.NoError(t, err)

	// A stream that ends inside a tuple: an InputError naming the trailing
	// bytes and their offset; no output.
	out2 := filepath.Join(fx.dir, "out2.csv")
	in := bytes.NewReader(fx.data[:1000*TupleSize+77])
	_, err = RunFiles(context.Background(), fileEngine(), FileConfig{Events: "-", Stdin: in, Campaigns: fx.campaigns, Output: out2})
	var ie *InputError
	require.ErrorAs(t, err, &ie)
	assert.ErrorContains(t, err, "standard input: 77 trailing bytes at byte offset 128000")
	assertOnlyFiles(t, fx.dir, "events.bin", "campaigns.csv", "out.csv")

	// Empty stream: no rows, no error.
	res, err = RunFiles(context.Background(), fileEngine(), FileConfig{Events: "-", Stdin: bytes.NewReader(nil), Campaigns: fx.campaigns})
	require.NoError(t, err)
	assert.Empty(t, res.Rows)
	assert.Zero(t, res.Stats.Tuples)
}

// waitGoroutines waits for the goroutine count to fall back to at most n.
func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > n && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := runtime.NumGoroutine(); got > n {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines left, want at most %d:\n%s", got, n, buf[:runtime.Stack(buf, true)])
	}
}

// TestRunFilesInterrupted: a run cancelled while it waits on a stream stops,
// drains the engine, counts what ran, commits nothing (the old output
// stays) and leaves no goroutine behind.
func TestRunFilesInterrupted(t *testing.T) {
	fx := newFileFixture(t, 20000)
	out := filepath.Join(fx.dir, "results.csv")
	require.NoError(t, os.WriteFile(out, []byte("old results\n"), 0o644))
	before := runtime.NumGoroutine()

	// os.Pipe's read end is polled by the runtime; a pipe inherited in
	// blocking mode, as os.Stdin usually is, is not.
	for _, polled := range []bool{true, false} {
		t.Run(map[bool]string{true: "polled", false: "blocking"}[polled], func(t *testing.T) {
			var r, w *os.File
			if polled {
				var err error
				r, w, err = os.Pipe()
				require.NoError(t, err)
			} else {
				var p [2]int
				require.NoError(t, syscall.Pipe(p[:]))
				r, w = os.NewFile(uintptr(p[0]), "blocking pipe"), os.NewFile(uintptr(p[1]), "blocking pipe")
				require.ErrorIs(t, r.SetReadDeadline(time.Time{}), os.ErrNoDeadline, "not polled")
			}
			defer r.Close()
			defer w.Close()
			interruptedRun(t, fx, out, r, w)
			if !polled {
				flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, r.Fd(), syscall.F_GETFL, 0)
				require.Zero(t, errno)
				assert.Zero(t, flags&syscall.O_NONBLOCK, "the descriptor is back in blocking mode")
			}
		})
	}
	waitGoroutines(t, before)

	// Cancelled before it starts: nothing read, nothing committed.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := RunFiles(ctx, fileEngine(), FileConfig{Events: fx.events, Campaigns: fx.campaigns, Output: out})
	require.NoError(t, err)
	assert.True(t, res.Interrupted)
	assert.Zero(t, res.Stats.Tuples)
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, "old results\n", string(b))
	assertOnlyFiles(t, fx.dir, "events.bin", "campaigns.csv", "results.csv")
	waitGoroutines(t, before)
}

// TestBenchmarkInterrupted: cancelled in the middle of the measured
// interval, the benchmark drains and validates what ran; cancelled in the
// warm-up, it says so and measures nothing. No goroutine is left behind.
func TestBenchmarkInterrupted(t *testing.T) {
	before := runtime.NumGoroutine()
	for _, ingest := range []engine.Ingest{engine.IngestProducer, engine.IngestWorkers} {
		cfg := BenchConfig{
			Engine:     engine.Config{Workers: 2, TaskSize: 1 << 16, BufferSize: 1 << 20},
			Gen:        DefaultGenConfig(),
			BundleSize: 1 << 20,
			Warmup:     100 * time.Millisecond,
			Duration:   time.Hour,
			Ingest:     ingest,
			Progress:   func(engine.Stats, scheduler.Stats, time.Duration) {},
		}
		ctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
		res, err := RunBenchmark(ctx, cfg)
		cancel()
		require.NoError(t, err, ingest)
		assert.True(t, res.Interrupted)
		assert.True(t, res.WarmedUp)
		assert.True(t, res.Validated, "an interruption alone does not invalidate the run")
		assert.Positive(t, res.Stats.Windows)
		assert.Positive(t, res.Measured.Tuples)
		assert.Less(t, res.Measured.Tuples, res.Stats.Tuples)
		assert.Less(t, res.Seconds, 10.0)
		st := res.Stats
		assert.Equal(t, st.Tuples, st.Filtered+st.Unmatched+st.Late+st.Counted)

		// Interrupted during the warm-up.
		cfg.Warmup = time.Hour
		ctx, cancel = context.WithTimeout(context.Background(), 150*time.Millisecond)
		res, err = RunBenchmark(ctx, cfg)
		cancel()
		require.NoError(t, err)
		assert.True(t, res.Interrupted)
		assert.False(t, res.WarmedUp)
		assert.True(t, res.Validated)
		assert.Zero(t, res.Measured)
		assert.Positive(t, res.Stats.Tuples, "the warm-up ran")

		// A mismatch is still reported when interrupted.
		cfg.Warmup = 0
		cfg.corrupt = func(b []byte) { binary.LittleEndian.PutUint32(b[OffEventType:], EventView) }
		ctx, cancel = context.WithTimeout(context.Background(), 2*time.Second)
		res, err = RunBenchmark(ctx, cfg)
		cancel()
		assert.ErrorIs(t, err, ErrMismatch)
		assert.False(t, res.Validated)
	}
	waitGoroutines(t, before)

	// Not interrupted: the flags say so.
	res, err := RunBenchmark(context.Background(), BenchConfig{
		Engine: engine.Config{Workers: 1, TaskSize: 1 << 16, BufferSize: 1 << 20}, Gen: DefaultGenConfig(),
		BundleSize: 1 << 20, Duration: 50 * time.Millisecond,
	})
	require.NoError(t, err)
	assert.False(t, res.Interrupted)
	assert.True(t, res.WarmedUp)
	assert.True(t, res.Validated)
}

// interruptedRun sends 10000 tuples and a part of one more into w, cancels
// the run reading r once it waits on the pipe, and checks the result.
func interruptedRun(t *testing.T, fx fileFixture, out string, r, w *os.File) {
	const sent = 10000 // tuples written before the interrupt, the pipe left open
	wrote := make(chan error, 1)
	go func() {
		_, err := w.Write(fx.data[:sent*TupleSize+50]) // and part of one more
		wrote <- err
	}()
	ctx, cancel := context.WithCancel(context.Background())
	type result struct {
		res FileResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := RunFiles(ctx, fileEngine(), FileConfig{Events: "-", Stdin: r, Campaigns: fx.campaigns, Output: out})
		done <- result{res, err}
	}()
	require.NoError(t, <-wrote)
	// The run has read what was sent (the pipe is empty; a loaded machine
	// may take a while) and is blocked reading the pipe.
	for deadline := time.Now().Add(10 * time.Second); unread(t, r) > 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	cancel()
	var got result
	select {
	case got = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the interrupted run did not return")
	}
	require.NoError(t, got.err)
	assert.True(t, got.res.Interrupted)
	assert.Nil(t, got.res.Rows)
	assert.Equal(t, uint64(sent), got.res.Stats.Tuples, "every whole tuple read is counted")
	st := got.res.Stats
	assert.Equal(t, st.Tuples, st.Filtered+st.Unmatched+st.Late+st.Counted)
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, "old results\n", string(b), "an interrupted run commits nothing")
	assertOnlyFiles(t, fx.dir, "events.bin", "campaigns.csv", "results.csv")
}

// unread returns how many bytes the pipe r reads from holds (TIOCINQ, that is FIONREAD),
// through SyscallConn: Fd would make r blocking, and the run's read of it
// then could not be interrupted.
func unread(t *testing.T, r *os.File) int {
	t.Helper()
	rc, err := r.SyscallConn()
	require.NoError(t, err)
	var n int
	var ioErr error
	require.NoError(t, rc.Control(func(fd uintptr) { n, ioErr = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }))
	require.NoError(t, ioErr)
	return n
}
