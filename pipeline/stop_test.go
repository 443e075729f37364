package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/pipeline"
)

// runWithin runs job, failing the test if Run has not returned within d.
func runWithin(t *testing.T, job *pipeline.Job, d time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := job.Run(context.Background())
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		require.FailNow(t, "Run has not returned", "after %v", d)
		return nil
	}
}

// liveSource writes n tuples and waits for more that never come, as a
// Kafka topic or standard input does between records.
func liveSource(n int) func(context.Context, *pipeline.TupleWriter) error {
	return func(ctx context.Context, w *pipeline.TupleWriter) error {
		for i := range n {
			if err := w.Append(int64(i), int32(i)); err != nil {
				return err
			}
		}
		<-ctx.Done()
		return nil
	}
}

// TestOutputErrorStopsALiveSource: an output's error stops a source that
// waits for its next record, and Run returns the error.
func TestOutputErrorStopsALiveSource(t *testing.T) {
	t.Parallel()
	prog, err := pipeline.Compile("-e", `CREATE SOURCE r (ts BIGINT, v INT) WITH (connector = 'go');
CREATE VIEW all_r AS SELECT ts, v FROM r;`)
	require.NoError(t, err)
	down := errors.New("output down")
	prog.AttachSource("r", liveSource(64))
	prog.OnRows("all_r", func(*pipeline.Rows) error { return down })
	job, err := prog.Open(pipeline.Options{Engine: engine.Config{Workers: 1, TaskSize: 12 * 4, BufferSize: 1 << 12}})
	require.NoError(t, err)
	defer job.Close()
	assert.ErrorIs(t, runWithin(t, job, 5*time.Second), down)
}

// TestSourceErrorStopsTheOthers: one source's error stops the others,
// live ones included, and Run returns it (not theirs).
func TestSourceErrorStopsTheOthers(t *testing.T) {
	t.Parallel()
	prog, err := pipeline.Compile("-e", `CREATE SOURCE a (ts BIGINT, v INT) WITH (connector = 'go');
CREATE SOURCE b (ts BIGINT, v INT) WITH (connector = 'go');
CREATE VIEW qa AS SELECT ts, v FROM a;
CREATE VIEW qb AS SELECT ts, v FROM b;`)
	require.NoError(t, err)
	broke := errors.New("source a broke")
	prog.AttachSource("a", func(context.Context, *pipeline.TupleWriter) error {
		time.Sleep(20 * time.Millisecond) // b is running
		return broke
	})
	prog.AttachSource("b", liveSource(10))
	prog.OnRows("qa", func(*pipeline.Rows) error { return nil })
	prog.OnRows("qb", func(*pipeline.Rows) error { return nil })
	job, err := prog.Open(pipeline.Options{})
	require.NoError(t, err)
	defer job.Close()
	assert.ErrorIs(t, runWithin(t, job, 5*time.Second), broke)
}

// TestCheckpointAfterTheRun: a Checkpoint that no checkpoint will answer
// (the run has ended) returns at once with an error.
func TestCheckpointAfterTheRun(t *testing.T) {
	t.Parallel()
	addr, _ := eventsTopic(t, 100)
	prog, err := pipeline.Compile("-e", fmt.Sprintf(`CREATE SOURCE ev (ts BIGINT, v INT) WITH (connector = 'kafka', brokers = '%s', topic = 'ev', format = 'json');
CREATE VIEW q AS SELECT ts, v FROM ev;`, addr))
	require.NoError(t, err)
	dir := t.TempDir()
	job, err := prog.Open(pipeline.Options{StopAtEnd: true, CheckpointDir: filepath.Join(dir, "ckpt")})
	require.NoError(t, err)
	defer job.Close()
	require.NoError(t, runWithin(t, job, 10*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = job.Checkpoint(ctx)
	require.Error(t, err)
	assert.NotErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "the run has ended")
}

// TestCancelDuringTheDrain: Run's context cancelled once every source has
// ended, while the drain waits on a slow output, interrupts nothing: the
// run was marked interrupted and its complete file output discarded, as
// the context was read after the drain. A cancel before the source's end
// still interrupts the run, and its file is left uncommitted.
func TestCancelDuringTheDrain(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		cancelInDrain bool
	}{{"after the sources ended", true}, {"before the source ended", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), "out.csv")
			prog, err := pipeline.Compile("-e", `CREATE SOURCE r (ts BIGINT, v INT) WITH (connector = 'go');
CREATE SINK f AS SELECT ts, v FROM r WITH (connector = 'file', path = '`+out+`');
CREATE VIEW slow AS SELECT ts, v FROM r;`)
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			returned := make(chan struct{})
			require.NoError(t, prog.AttachSource("r", func(ctx context.Context, w *pipeline.TupleWriter) error {
				for i := range 100 {
					if err := w.Append(int64(i), int32(i)); err != nil {
						return err
					}
				}
				if !tc.cancelInDrain {
					cancel()
					<-ctx.Done() // as a live source stops
				}
				close(returned)
				return nil
			}))
			first := true
			require.NoError(t, prog.OnRows("slow", func(*pipeline.Rows) error {
				if first && tc.cancelInDrain {
					first = false
					<-returned
					time.Sleep(100 * time.Millisecond) // the feed has ended: the drain waits on this call
					cancel()
					time.Sleep(100 * time.Millisecond)
				}
				return nil
			}))
			job, err := prog.Open(pipeline.Options{Engine: engine.Config{Workers: 1}})
			require.NoError(t, err)
			defer job.Close()
			sum, err := job.Run(ctx)
			require.NoError(t, err)
			assert.EqualValues(t, 100, sum.Tuples)
			assert.Equal(t, !tc.cancelInDrain, sum.Interrupted)
			_, err = os.Stat(out)
			if tc.cancelInDrain {
				assert.NoError(t, err, "the whole run's file output is committed")
			} else {
				assert.ErrorIs(t, err, os.ErrNotExist, "an interrupted run's file output")
			}
		})
	}
}

// checkpointedJob opens a checkpointed program over a Kafka topic, with
// engine configuration ec.
func checkpointedJob(t *testing.T, ec engine.Config) *pipeline.Job {
	t.Helper()
	addr, _ := eventsTopic(t, 10)
	dir := t.TempDir()
	prog, err := pipeline.Compile("-e", fmt.Sprintf(`CREATE SOURCE ev (ts BIGINT, v INT) WITH (connector = 'kafka', brokers = '%s', topic = 'ev', format = 'json');
CREATE SINK q AS SELECT ts, v FROM ev WITH (connector = 'file', path = '%s');`, addr, filepath.Join(dir, "out.csv")))
	require.NoError(t, err)
	job, err := prog.Open(pipeline.Options{Engine: ec, StopAtEnd: true, CheckpointDir: filepath.Join(dir, "ckpt")})
	require.NoError(t, err)
	return job
}

// checkpointAnswered calls job.Checkpoint, failing the test where it
// waits (for a run that will not answer it) rather than return an error.
func checkpointAnswered(t *testing.T, job *pipeline.Job) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := job.Checkpoint(ctx)
	require.Error(t, err)
	require.NotErrorIs(t, err, context.DeadlineExceeded, "Checkpoint waited for a run that will take no checkpoint")
	return err
}

// TestCheckpointAfterAFailedRun: a run that fails before its feeds (the
// engine refused its configuration) answers a Checkpoint at once, as one
// that ended does, where it waited on ctx for ever: the checkpointer was
// ended only on the way past the feeds.
func TestCheckpointAfterAFailedRun(t *testing.T) {
	t.Parallel()
	// A binding the engine refuses at Start (no processor kind tpu), not
	// at Open.
	job := checkpointedJob(t, engine.Config{Workers: 1, Policy: "static", Static: map[string]string{"q": "tpu"}})
	defer job.Close()
	_, err := job.Run(context.Background())
	require.ErrorIs(t, err, engine.ErrConfig)
	assert.Contains(t, checkpointAnswered(t, job).Error(), "the run has ended")
}

// TestCheckpointOnAClosedJob: a closed job answers a Checkpoint at once,
// run or not, and one waiting when Close comes.
func TestCheckpointOnAClosedJob(t *testing.T) {
	t.Parallel()
	job := checkpointedJob(t, engine.Config{Workers: 1})
	waiting := make(chan error, 1)
	go func() { waiting <- job.Checkpoint(context.Background()) }()
	time.Sleep(50 * time.Millisecond) // it waits for the run
	job.Close()
	select {
	case err := <-waiting:
		assert.ErrorContains(t, err, "the job is closed")
	case <-time.After(5 * time.Second):
		require.FailNow(t, "a Checkpoint waiting when the job closed was not answered")
	}
	assert.Contains(t, checkpointAnswered(t, job).Error(), "the job is closed")
}

// TestCancelStopsASourceThatOnlyWrites: a Go source that loops on Append
// and returns only its error ends once Run's context is done (Append
// returns ErrSourceStopped), and the run drains and says it was
// interrupted; before, Append went on taking tuples and Run waited for
// ever.
func TestCancelStopsASourceThatOnlyWrites(t *testing.T) {
	t.Parallel()
	prog, err := pipeline.Compile("-e", `CREATE SOURCE r (ts BIGINT, v INT) WITH (connector = 'go');
CREATE VIEW all_r AS SELECT ts, v FROM r;`)
	require.NoError(t, err)
	var last error
	require.NoError(t, prog.AttachSource("r", func(_ context.Context, w *pipeline.TupleWriter) error {
		for i := 0; ; i++ {
			if err := w.Append(int64(i), int32(i)); err != nil {
				last = err
				return err
			}
		}
	}))
	require.NoError(t, prog.OnRows("all_r", func(*pipeline.Rows) error { return nil }))
	job, err := prog.Open(pipeline.Options{Engine: engine.Config{Workers: 1}})
	require.NoError(t, err)
	defer job.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	done := make(chan struct{})
	var sum *pipeline.Summary
	go func() {
		defer close(done)
		sum, err = job.Run(ctx)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		require.FailNow(t, "Run has not returned 10 s after its context was cancelled")
	}
	require.NoError(t, err)
	assert.True(t, sum.Interrupted)
	assert.Positive(t, sum.Tuples)
	assert.ErrorIs(t, last, pipeline.ErrSourceStopped)
}
