package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/internal/kafkatest"
	"github.com/saber-hx/saber-hx/internal/redistest"
	"github.com/saber-hx/saber-hx/internal/security"
	"github.com/saber-hx/saber-hx/internal/testenv"
)

// produceUntil writes records {"ts": i, "k": i%7} to topic until ctx
// ends, pausing pause after each.
func produceUntil(ctx context.Context, t *testing.T, addr, topic string, pause time.Duration) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	require.NoError(t, err)
	go func() {
		defer cl.Close()
		for i := 0; ctx.Err() == nil; i++ {
			_ = cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, `{"ts": %d, "k": %d}`, i, i%7)}).FirstErr()
			time.Sleep(pause)
		}
	}()
}

// TestTxnBeginOnce: two Kafka outputs share their transactional producer,
// and each flushes under its own lock: the run's flusher one, a
// checkpoint the other, at once. The transaction is begun once (the race
// pass caught both reading and writing whether it was).
func TestTxnBeginOnce(t *testing.T) {
	t.Parallel()
	cluster := kafkatest.Start(t, 1, "in", "out1", "out2")
	rs := redistest.Start(t)
	prog, err := Compile("race.sql", fmt.Sprintf(`
CREATE SOURCE e (ts BIGINT, k INT) WITH (connector = 'kafka', brokers = '%[1]s', topic = 'in', group = 'race', format = 'json', idle_timeout = '1s');
CREATE SINK a AS SELECT ts, k FROM e WITH (connector = 'kafka', brokers = '%[1]s', topic = 'out1');
CREATE SINK b AS SELECT ts, k FROM e WITH (connector = 'kafka', brokers = '%[1]s', topic = 'out2');
CREATE SINK r AS SELECT ts, k FROM e WITH (connector = 'redis', addr = '%[2]s', key = 'r:{ts}', flush = '1ms');`, cluster.Addr, rs.Addr))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	produceUntil(ctx, t, cluster.Addr, "in", 100*time.Microsecond) // as many as the broker takes: flushes at once
	job, err := prog.Open(Options{Engine: engine.Config{Workers: 1, TaskSize: 16 * 4, BufferSize: 1 << 16},
		CheckpointDir: t.TempDir(), CheckpointInterval: time.Millisecond, Duration: time.Duration(testenv.Scale(700, 2000)) * time.Millisecond})
	require.NoError(t, err)
	defer job.Close()
	_, err = job.Run(ctx)
	require.NoError(t, err)
}

// TestTxnIDPerRun: two programs over one topic, without a group, whose
// outputs have the same name, each with its checkpoint directory: their
// transactional IDs differ (the directories' tokens), where the second
// fenced the first's producer; the token stays across restarts.
func TestTxnIDPerRun(t *testing.T) {
	t.Parallel()
	cluster := kafkatest.Start(t, 1, "in", "outA", "outB")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Records keep coming, so that every transaction has some; hundreds
	// a second are plenty, where thousands kept the broker busy.
	produceUntil(ctx, t, cluster.Addr, "in", time.Millisecond)
	open := func(dir, sqlText string, d time.Duration) *Job {
		prog, err := Compile("p.sql", sqlText)
		require.NoError(t, err)
		job, err := prog.Open(Options{Engine: engine.Config{Workers: 1, TaskSize: 16 * 4, BufferSize: 1 << 16},
			CheckpointDir: dir, CheckpointInterval: 100 * time.Millisecond, Duration: d})
		require.NoError(t, err)
		return job
	}
	program := func(k int, topic string) string {
		return fmt.Sprintf(`CREATE SOURCE e (ts BIGINT, k INT) WITH (connector = 'kafka', brokers = '%[1]s', topic = 'in', format = 'json');
CREATE SINK out AS SELECT ts, k FROM e WHERE k = %[2]d WITH (connector = 'kafka', brokers = '%[1]s', topic = '%[3]s');`, cluster.Addr, k, topic)
	}
	dirA, dirB := t.TempDir(), t.TempDir()
	// B runs within A's run, checkpointing (and so committing) several
	// times while A does.
	a := open(dirA, program(1, "outA"), 1500*time.Millisecond)
	var wg sync.WaitGroup
	var errA error
	wg.Add(1)
	go func() { defer wg.Done(); _, errA = a.Run(ctx) }()
	time.Sleep(500 * time.Millisecond)
	b := open(dirB, program(2, "outB"), 800*time.Millisecond)
	_, errB := b.Run(ctx)
	wg.Wait()
	assert.NoError(t, errA, "program A")
	assert.NoError(t, errB, "program B")
	idA, idB := a.txns[0].p.id, b.txns[0].p.id
	assert.NotEqual(t, idA, idB)
	a.Close()
	b.Close()
	a = open(dirA, program(1, "outA"), time.Millisecond)
	defer a.Close()
	assert.Equal(t, idA, a.txns[0].p.id, "a restart takes its directory's token")
}

// TestTxnIDOfAnOlderDirectory: a checkpoint directory whose checkpoints
// were written before tokens were kept keeps its outputs' IDs (no token),
// so that its restart finds its epoch markers; a token that is not one is
// refused.
func TestTxnIDOfAnOlderDirectory(t *testing.T) {
	t.Parallel()
	cluster := kafkatest.Start(t, 1, "in", "out")
	text := fmt.Sprintf(`CREATE SOURCE e (ts BIGINT, k INT) WITH (connector = 'kafka', brokers = '%[1]s', topic = 'in', format = 'json');
CREATE SINK out AS SELECT ts, k FROM e WITH (connector = 'kafka', brokers = '%[1]s', topic = 'out');`, cluster.Addr)
	// A Program is opened once: one per job, as a restarted process.
	open := func(dir string) (*Job, error) {
		prog, err := Compile("p.sql", text)
		require.NoError(t, err)
		return prog.Open(Options{CheckpointDir: dir, Duration: time.Millisecond})
	}
	dir := t.TempDir()
	job, err := open(dir)
	require.NoError(t, err)
	job.Close()
	require.NoError(t, os.Remove(filepath.Join(dir, txnNote)))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ckpt-00000000000000000003.bin"), []byte("written before tokens"), 0o644))
	job, err = open(dir)
	require.NoError(t, err)
	assert.Equal(t, "saber-hx.in.out.0-of-1", job.txns[0].p.id)
	job.Close()
	note, err := os.ReadFile(filepath.Join(dir, txnNote))
	require.NoError(t, err)
	assert.Equal(t, "-\n", string(note))

	require.NoError(t, os.WriteFile(filepath.Join(dir, txnNote), []byte("xyz\n"), 0o644))
	_, err = open(dir)
	assert.ErrorContains(t, err, `"xyz" is not a token`)
}

// TestFailedFlushStaysFailed: a flush that failed dropped its rows (a
// Kafka transaction's): every later flush fails with its error, so that
// no checkpoint after it counts those rows out.
func TestFailedFlushStaysFailed(t *testing.T) {
	t.Parallel()
	cluster := kafkatest.Start(t, 1, "out")
	ctx := context.Background()
	p, err := openTxnProducer(ctx, []string{cluster.Addr}, security.Kafka{}, "saber-hx.test.out.0-of-1", time.Minute, t.Logf)
	require.NoError(t, err)
	s := &rowSink{where: "kafka topic out", txn: p.sink("out"), bound: 5 * time.Second}
	s.txn.Append(nil, []byte(`{"a":1}`))
	require.NoError(t, p.Close()) // the next produce fails
	err = s.flush(ctx)
	require.Error(t, err)
	assert.Equal(t, err, s.flush(ctx), "the rows are gone: the sink stays failed")
}

// TestTxnOutputsWithOtherPasswords: two Kafka outputs to one cluster
// whose passwords differ do not share a producer: the second's wrong
// password is refused, where its rows went through the first's
// connection.
func TestTxnOutputsWithOtherPasswords(t *testing.T) {
	t.Parallel()
	cluster := kafkatest.StartSecure(t, kafkatest.Secure{User: "saber", Password: "right", Mechanisms: []string{"PLAIN"}}, 1, "in", "out1", "out2")
	sec := func(password string) string {
		return fmt.Sprintf(`properties.security.protocol = 'SASL_PLAINTEXT', properties.sasl.mechanism = 'PLAIN',
  properties.sasl.username = 'saber', properties.sasl.password = '%s'`, password)
	}
	prog, err := Compile("p.sql", fmt.Sprintf(`
CREATE SOURCE e (ts BIGINT, k INT) WITH (connector = 'kafka', brokers = '%[1]s', topic = 'in', format = 'json', %[2]s);
CREATE SINK a AS SELECT ts, k FROM e WITH (connector = 'kafka', brokers = '%[1]s', topic = 'out1', %[2]s);
CREATE SINK b AS SELECT ts, k FROM e WITH (connector = 'kafka', brokers = '%[1]s', topic = 'out2', %[3]s);`, cluster.Addr, sec("right"), sec("n0t-the-0ne")))
	require.NoError(t, err)
	job, err := prog.Open(Options{Engine: engine.Config{Workers: 1, TaskSize: 16 * 4, BufferSize: 1 << 16},
		CheckpointDir: t.TempDir(), CheckpointInterval: time.Second, Duration: time.Millisecond})
	if err == nil {
		job.Close()
	}
	require.Error(t, err)
	assert.True(t, security.Failed(err), "%v", err)
	assert.Contains(t, err.Error(), "query b")
	assert.NotContains(t, err.Error(), "n0t-the-0ne")
}
