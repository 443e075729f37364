package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/pipeline"
	"github.com/saber-hx/saber-hx/sql"
)

const lookupJoinSQL = `CREATE SOURCE e (ts BIGINT, k INT) WITH (connector = 'go');
CREATE TABLE users (id INT NOT NULL, country VARCHAR) WITH (connector = 'file', path = 'users.csv', format = 'csv');
CREATE VIEW out AS SELECT e.k, u.country FROM e JOIN users AS u ON e.k = u.id;`

// countryJob wraps sp with FromSQL, its table's one row of country, its
// source fed by feed and the joined countries collected into got.
func countryJob(t *testing.T, sp *sql.Program, country string, feed pipeline.SourceFunc) (*pipeline.Program, *[]string, *sync.Mutex) {
	t.Helper()
	p := pipeline.FromSQL(country, sp)
	require.NoError(t, p.SetTable("users", []byte("1,"+country+"\n")))
	require.NoError(t, p.AttachSource("e", feed))
	var mu sync.Mutex
	var got []string
	require.NoError(t, p.OnRows("out", func(r *pipeline.Rows) error {
		mu.Lock()
		defer mu.Unlock()
		for i := range r.Len() {
			got = append(got, r.Text(i, 1))
		}
		return nil
	}))
	return p, &got, &mu
}

func oneTuple(_ context.Context, w *pipeline.TupleWriter) error { return w.Append(int64(1), int32(1)) }

// TestOneOpenJobPerSQLProgram: two Programs over one compiled program
// (FromSQL) share its lookup tables, which a job loads into it: the
// second's Open is refused while the first's job is open (it replaced the
// first's rows, and freed them under a running join), and accepted once
// that job is closed, each job joining its own table.
func TestOneOpenJobPerSQLProgram(t *testing.T) {
	t.Parallel()
	sp, err := sql.Compile(lookupJoinSQL)
	require.NoError(t, err)
	p1, got1, _ := countryJob(t, sp, "first", oneTuple)
	job1, err := p1.Open(pipeline.Options{Engine: engine.Config{Workers: 1}})
	require.NoError(t, err)
	defer job1.Close()
	assert.ErrorContains(t, p1.SetTable("users", []byte("1,late\n")), "is opened", "a table given after Open")

	p2, got2, _ := countryJob(t, sp, "second", oneTuple)
	_, err = p2.Open(pipeline.Options{Engine: engine.Config{Workers: 1}})
	require.ErrorIs(t, err, pipeline.ErrUsage)
	assert.ErrorContains(t, err, "compile the program again")

	_, err = job1.Run(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{"first"}, *got1)
	job1.Close()

	// Refused before anything was opened: p2 may still be opened.
	job2, err := p2.Open(pipeline.Options{Engine: engine.Config{Workers: 1}})
	require.NoError(t, err)
	defer job2.Close()
	_, err = job2.Run(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{"second"}, *got2)
}

// TestOneOpenJobPerSQLProgramWhileRunning: the second Open comes while
// the first job's join reads the table (where it was loaded over the rows
// being read: wrong countries, or a fault on the freed memory).
func TestOneOpenJobPerSQLProgramWhileRunning(t *testing.T) {
	t.Parallel()
	sp, err := sql.Compile(lookupJoinSQL)
	require.NoError(t, err)
	started := make(chan struct{})
	var bad atomic.Int64
	p1 := pipeline.FromSQL("first", sp)
	require.NoError(t, p1.SetTable("users", []byte("1,first\n")))
	require.NoError(t, p1.AttachSource("e", func(ctx context.Context, w *pipeline.TupleWriter) error {
		for i := 0; ctx.Err() == nil; i++ {
			if err := w.Append(int64(i), int32(1)); err != nil {
				return err
			}
			if i == 1000 {
				close(started)
			}
		}
		return nil
	}))
	require.NoError(t, p1.OnRows("out", func(r *pipeline.Rows) error {
		for i := range r.Len() {
			if r.Text(i, 1) != "first" {
				bad.Add(1)
			}
		}
		return nil
	}))
	job1, err := p1.Open(pipeline.Options{Engine: engine.Config{Workers: 1}})
	require.NoError(t, err)
	defer job1.Close()
	assert.ErrorContains(t, p1.SetTable("users", []byte("1,late\n")), "is opened", "a table given after Open")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := job1.Run(ctx); done <- err }()
	<-started

	p2, _, _ := countryJob(t, sp, "second", oneTuple)
	job2, err := p2.Open(pipeline.Options{Engine: engine.Config{Workers: 1}})
	if err == nil {
		job2.Close()
	}
	assert.ErrorIs(t, err, pipeline.ErrUsage, "a second job over a compiled program whose job runs")
	cancel()
	require.NoError(t, <-done)
	assert.Zero(t, bad.Load(), "rows joined with another job's table")
}

// TestProgramOpenedOnce: a Program's job reads its attached reader; a
// second Open would read nothing and succeed, so it is refused, saying
// why. An Open refused for its options does not count.
func TestProgramOpenedOnce(t *testing.T) {
	t.Parallel()
	prog, err := pipeline.Compile("-e", `CREATE SOURCE r (ts BIGINT, v INT) WITH (connector = 'go', format = 'csv');
CREATE VIEW all_r AS SELECT ts, v FROM r;`)
	require.NoError(t, err)
	require.NoError(t, prog.AttachReader("r", strings.NewReader("1,1\n2,2\n")))
	require.NoError(t, prog.OnRows("all_r", func(*pipeline.Rows) error { return nil }))

	_, err = prog.Open(pipeline.Options{Engine: engine.Config{Workers: 1}, Duration: -1})
	require.ErrorIs(t, err, pipeline.ErrUsage, "a negative duration")

	job, err := prog.Open(pipeline.Options{Engine: engine.Config{Workers: 1}})
	require.NoError(t, err)
	// Attached after Open: the job would never see them.
	for what, err := range map[string]error{
		"OnRows":       prog.OnRows("all_r", func(*pipeline.Rows) error { return nil }),
		"AttachReader": prog.AttachReader("r", strings.NewReader("3,3\n")),
		"AttachSource": prog.AttachSource("r", func(context.Context, *pipeline.TupleWriter) error { return nil }),
	} {
		assert.ErrorContains(t, err, "program -e is opened: attach sources, outputs and tables before Open", what)
	}
	sum, err := job.Run(context.Background())
	require.NoError(t, err)
	assert.EqualValues(t, 2, sum.Tuples)
	job.Close()

	job2, err := prog.Open(pipeline.Options{Engine: engine.Config{Workers: 1}})
	if err == nil {
		job2.Close()
	}
	require.ErrorIs(t, err, pipeline.ErrUsage)
	assert.ErrorContains(t, err, "opened already")
}

// TestProgramOpenedAgainAfterAMissingFile: an Open that failed on a
// source's missing file read nothing of the caller's: once the file is
// there, the Program opens (it was refused as opened already).
func TestProgramOpenedAgainAfterAMissingFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "in.csv")
	prog, err := pipeline.Compile("-e", fmt.Sprintf(`CREATE SOURCE r (ts BIGINT, v INT) WITH (connector = 'file', path = '%s', format = 'csv');
CREATE VIEW all_r AS SELECT ts, v FROM r;`, path))
	require.NoError(t, err)
	require.NoError(t, prog.OnRows("all_r", func(*pipeline.Rows) error { return nil }))
	_, err = prog.Open(pipeline.Options{Engine: engine.Config{Workers: 1}})
	require.ErrorIs(t, err, pipeline.ErrUsage, "the file is missing")
	require.NoError(t, os.WriteFile(path, []byte("1,1\n2,2\n"), 0o644))
	job, err := prog.Open(pipeline.Options{Engine: engine.Config{Workers: 1}})
	require.NoError(t, err)
	defer job.Close()
	sum, err := job.Run(context.Background())
	require.NoError(t, err)
	assert.EqualValues(t, 2, sum.Tuples)
}

// goJob opens a program of one Go source and a view, with options o.
func goJob(t *testing.T, o pipeline.Options, feed pipeline.SourceFunc) (*pipeline.Job, error) {
	t.Helper()
	prog, err := pipeline.Compile("-e", `CREATE SOURCE r (ts BIGINT, v INT) WITH (connector = 'go');
CREATE VIEW all_r AS SELECT ts, v FROM r;`)
	require.NoError(t, err)
	require.NoError(t, prog.AttachSource("r", feed))
	require.NoError(t, prog.OnRows("all_r", func(*pipeline.Rows) error { return nil }))
	return prog.Open(o)
}

// TestRunAfterClose: a closed job's outputs and sources are closed: Run
// refuses it, saying so, where it ran over them.
func TestRunAfterClose(t *testing.T) {
	t.Parallel()
	job, err := goJob(t, pipeline.Options{Engine: engine.Config{Workers: 1}}, oneTupleRV)
	require.NoError(t, err)
	job.Close()
	_, err = job.Run(context.Background())
	assert.ErrorContains(t, err, "the job is closed")
	job.Close() // twice: nothing
}

func oneTupleRV(_ context.Context, w *pipeline.TupleWriter) error {
	return w.Append(int64(1), int32(1))
}

// TestConcurrentRuns: two Runs of one job at once: one runs, the other
// is refused (they raced on the job's state, and both ran). Run it with
// -race.
func TestConcurrentRuns(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	job, err := goJob(t, pipeline.Options{Engine: engine.Config{Workers: 1}}, func(ctx context.Context, w *pipeline.TupleWriter) error {
		<-release
		return w.Append(int64(1), int32(1))
	})
	require.NoError(t, err)
	defer job.Close()
	errs := make(chan error, 2)
	for range 2 {
		go func() { _, err := job.Run(context.Background()); errs <- err }()
	}
	refused := <-errs // the second returns at once; the first waits for the source
	close(release)
	ran := <-errs
	require.NoError(t, ran)
	assert.ErrorContains(t, refused, "a job runs once")
}

// TestEngineSettingsCheckedAtOpen: a scheduling policy the engine does not
// know is refused by Open, before the outputs' files (or Kafka clients)
// are opened, not by Run.
func TestEngineSettingsCheckedAtOpen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	prog, err := pipeline.Compile("-e", `CREATE SOURCE r (ts BIGINT, v INT) WITH (connector = 'go');
CREATE SINK f AS SELECT ts, v FROM r WITH (connector = 'file', path = '`+dir+`/out.csv');`)
	require.NoError(t, err)
	require.NoError(t, prog.AttachSource("r", oneTupleRV))
	for _, ec := range []engine.Config{{Workers: 1, Policy: "nonsense"}, {Workers: 1, MonitorInterval: -time.Second}} {
		job, err := prog.Open(pipeline.Options{Engine: ec})
		if err == nil {
			job.Close()
		}
		require.ErrorIs(t, err, pipeline.ErrUsage, "%+v", ec)
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		assert.Empty(t, entries, "files made by an Open refused")
	}
	_, err = prog.Open(pipeline.Options{Engine: engine.Config{Workers: 1, Policy: "nonsense"}})
	assert.ErrorContains(t, err, `unknown scheduling policy "nonsense"`)
	job, err := prog.Open(pipeline.Options{Engine: engine.Config{Workers: 1, Policy: "fcfs"}})
	require.NoError(t, err, "the Opens refused did not count")
	job.Close()
}

// TestCheckpointDirErrorsNameTheOption: an embedder sets
// Options.CheckpointDir, not a flag: the library's errors name the option
// (and the command line's flag beside it).
func TestCheckpointDirErrorsNameTheOption(t *testing.T) {
	t.Parallel()
	_, err := goJob(t, pipeline.Options{CheckpointDir: t.TempDir()}, oneTupleRV)
	require.ErrorIs(t, err, pipeline.ErrUsage)
	assert.ErrorContains(t, err, "CheckpointDir (--checkpoint-dir): needs the program's source from Kafka, whose offsets a checkpoint holds (source r reads a Go function (AttachSource))")
}

// TestSourceFuncErrorNamesTheSource: a SourceFunc's error is returned
// naming its source (it came bare), still errors.Is the caller's; an
// error of the TupleWriter's, which names it already, is not named twice.
func TestSourceFuncErrorNamesTheSource(t *testing.T) {
	t.Parallel()
	broke := errors.New("the feed broke")
	job, err := goJob(t, pipeline.Options{Engine: engine.Config{Workers: 1}}, func(context.Context, *pipeline.TupleWriter) error { return broke })
	require.NoError(t, err)
	defer job.Close()
	_, err = job.Run(context.Background())
	require.ErrorIs(t, err, broke)
	assert.EqualError(t, err, "source r: the feed broke")

	job2, err := goJob(t, pipeline.Options{Engine: engine.Config{Workers: 1}}, func(_ context.Context, w *pipeline.TupleWriter) error {
		return w.Append("not a number", int32(1))
	})
	require.NoError(t, err)
	defer job2.Close()
	_, err = job2.Run(context.Background())
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "source r: column ts: "), err.Error())
}
