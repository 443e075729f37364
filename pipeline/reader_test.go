package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/internal/testenv"
	"github.com/saber-hx/saber-hx/pipeline"
)

// pipeJob opens a program whose source reads an io.Pipe, which has no read
// deadline: a Read waits until the writer writes or either end is closed.
func pipeJob(t *testing.T, format string, o pipeline.Options, rows pipeline.RowsFunc) (*pipeline.Job, *io.PipeWriter) {
	t.Helper()
	prog, err := pipeline.Compile("-e", `CREATE SOURCE r (ts BIGINT, v INT) WITH (connector = 'go', format = '`+format+`');
CREATE VIEW all_r AS SELECT ts, v FROM r;`)
	require.NoError(t, err)
	pr, pw := io.Pipe()
	require.NoError(t, prog.AttachReader("r", pr))
	if rows == nil {
		rows = func(*pipeline.Rows) error { return nil }
	}
	require.NoError(t, prog.OnRows("all_r", rows))
	job, err := prog.Open(o)
	require.NoError(t, err)
	return job, pw
}

// runPipeJob runs job on a goroutine; the returned wait gives Run's
// error, failing the test where Run has not returned within 5 s of the
// call (then it ends the pipe itself, so that nothing is left running).
func runPipeJob(t *testing.T, ctx context.Context, job *pipeline.Job, pw *io.PipeWriter) (wait func(what string) error, summary func() *pipeline.Summary) {
	done := make(chan error, 1)
	var sum *pipeline.Summary
	go func() {
		var err error
		sum, err = job.Run(ctx)
		done <- err
	}()
	return func(what string) error {
			t.Helper()
			select {
			case err := <-done:
				return err
			case <-time.After(5 * time.Second):
				pw.CloseWithError(errors.New("the test ended the pipe"))
				<-done
				require.FailNow(t, "Run waited on its reader", "5 s after %s", what)
				return nil
			}
		}, func() *pipeline.Summary {
			return sum // after wait
		}
}

// TestCancelEndsABlockedReader: Run's context cancelled while the reader
// given to AttachReader waits for its next record (an io.Pipe, without
// read deadlines): the reader is closed, the run drains and returns,
// interrupted, each way it is read (binary tuples; CSV decoded on the feed
// goroutine, or by the parallel decoder with two workers), and nothing
// is left running. Not parallel: it counts goroutines.
func TestCancelEndsABlockedReader(t *testing.T) {
	for _, tc := range []struct {
		name, format string
		workers      int
	}{{"binary", "binary", 1}, {"csv", "csv", 1}, {"csv parallel decoder", "csv", 2}} {
		t.Run(tc.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			job, pw := pipeJob(t, tc.format, pipeline.Options{Engine: engine.Config{Workers: tc.workers}}, nil)
			ctx, cancel := context.WithCancel(context.Background())
			wait, summary := runPipeJob(t, ctx, job, pw)
			time.Sleep(100 * time.Millisecond) // the reader waits
			cancel()
			require.NoError(t, wait("its context was cancelled"))
			require.NotNil(t, summary())
			assert.True(t, summary().Interrupted, "the reader had not ended")
			job.Close()
			_, err := pw.Write([]byte("1,1\n"))
			assert.ErrorIs(t, err, io.ErrClosedPipe, "the reader was closed")
			testenv.NoGoroutinesLeft(t, before)
		})
	}
}

// TestDurationBoundsABlockedReader: Options.Duration reads a reader "for
// Duration where it is set", even one that waits.
func TestDurationBoundsABlockedReader(t *testing.T) {
	before := runtime.NumGoroutine()
	job, pw := pipeJob(t, "csv", pipeline.Options{Engine: engine.Config{Workers: 1}, Duration: 200 * time.Millisecond}, nil)
	wait, _ := runPipeJob(t, context.Background(), job, pw)
	go func() { _, _ = pw.Write([]byte("1,1\n2,2\n")) }() // then nothing
	require.NoError(t, wait("a Duration of 200 ms"))
	job.Close()
	testenv.NoGoroutinesLeft(t, before)
}

// TestOutputErrorStopsABlockedReader: an output's error stops a reader
// that waits for its next record, as it stops a Go source
// (TestOutputErrorStopsALiveSource), and Run returns the error.
func TestOutputErrorStopsABlockedReader(t *testing.T) {
	before := runtime.NumGoroutine()
	down := errors.New("output down")
	job, pw := pipeJob(t, "csv", pipeline.Options{Engine: engine.Config{Workers: 1, TaskSize: 16 * 64}},
		func(*pipeline.Rows) error {
			time.Sleep(200 * time.Millisecond) // the reader waits for more by now
			return down
		})
	wait, _ := runPipeJob(t, context.Background(), job, pw)
	go func() {
		// Records for a few tasks, then the reader waits for more.
		var b []byte
		for i := range 1000 {
			b = fmt.Appendf(b, "%d,%d\n", i, i)
		}
		_, _ = pw.Write(b)
	}()
	require.ErrorIs(t, wait("its output failed"), down)
	job.Close()
	testenv.NoGoroutinesLeft(t, before)
}

// TestCloseEndsABlockedReaderNeverRun: with two workers the parallel
// decoder reads ahead from Open on; a job closed without a run (or after a
// feed failed) closes the reader, which the decoder waits on.
func TestCloseEndsABlockedReaderNeverRun(t *testing.T) {
	before := runtime.NumGoroutine()
	job, pw := pipeJob(t, "csv", pipeline.Options{Engine: engine.Config{Workers: 2}}, nil)
	closed := make(chan struct{})
	go func() { job.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		pw.CloseWithError(errors.New("the test ended the pipe"))
		<-closed
		require.FailNow(t, "Close waited on the reader")
	}
	testenv.NoGoroutinesLeft(t, before)
}
