package pipeline

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/saber-hx/saber-hx/checkpoint"
	"github.com/saber-hx/saber-hx/internal/kafkatest"
	"github.com/saber-hx/saber-hx/internal/security"
)

// openTxnSink opens a transactional Kafka output with a producer of its
// own, as a run with one Kafka output has.
func openTxnSink(ctx context.Context, brokers []string, sec security.Kafka, topic, id string, timeout time.Duration, logf func(string, ...any)) (*txnSink, error) {
	p, err := openTxnProducer(ctx, brokers, sec, id, timeout, logf)
	if err != nil {
		return nil, err
	}
	return p.sink(topic), nil
}

// Commit ends epoch's transaction with s's rows flushed, as commitTxns
// does for a group of one.
func (s *txnSink) Commit(ctx context.Context, epoch uint64) error {
	if err := s.Flush(ctx); err != nil {
		return err
	}
	return s.txnProducer.Commit(ctx, epoch)
}

// Abort drops the open transaction and s's rows not flushed, as
// abortTxns does for a group of one.
func (s *txnSink) Abort(ctx context.Context) error {
	s.drop()
	return s.txnProducer.Abort(ctx)
}

// TestCommittedEpoch: the epoch a transactional sink stands at is its
// highest committed marker: not an aborted one, not one of a transaction
// still open, not another sink's; none before any marker. It holds when
// the broker answers the first fetches slowly (CI's race pass once took
// such a slow start for an empty topic and restarted an output that stood
// at a checkpoint from scratch, writing its rows twice).
func TestCommittedEpoch(t *testing.T) {
	t.Parallel()
	cluster := kafkatest.Start(t, 3, "out")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	brokers := []string{cluster.Addr}
	a, err := openTxnSink(ctx, brokers, security.Kafka{}, "out", "sink-a", time.Minute, nil)
	require.NoError(t, err)
	defer a.Close()
	_, ok, err := a.CommittedEpoch(ctx)
	require.NoError(t, err)
	assert.False(t, ok, "an epoch before any marker")

	for e := uint64(1); e <= 2; e++ {
		a.Append(nil, []byte("row"))
		require.NoError(t, a.Commit(ctx, e))
	}
	// Epoch 3's transaction aborted, as a crash between the checkpoint
	// and the commit leaves it once a restart fences the producer.
	require.NoError(t, a.begin())
	require.NoError(t, a.cl.ProduceSync(ctx, &kgo.Record{Topic: epochTopic, Key: []byte(a.id), Value: []byte("3")}).FirstErr())
	require.NoError(t, a.Abort(ctx))
	// Another sink's marker, committed.
	b, err := openTxnSink(ctx, brokers, security.Kafka{}, "out", "sink-b", time.Minute, nil)
	require.NoError(t, err)
	defer b.Close()
	require.NoError(t, b.Commit(ctx, 9))
	// A marker of sink-a's key in a transaction still open.
	c, err := openTxnSink(ctx, brokers, security.Kafka{}, "out", "sink-c", time.Minute, nil)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.begin())
	require.NoError(t, c.cl.ProduceSync(ctx, &kgo.Record{Topic: epochTopic, Key: []byte(a.id), Value: []byte("4")}).FirstErr())

	// The first fetches answered 1.5 s late, each.
	var slowed atomic.Int32
	cluster.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		if slowed.Add(1) <= 2 {
			cluster.KeepControl()
			cluster.SleepControl(func() { time.Sleep(1500 * time.Millisecond) })
		}
		return nil, nil, false
	})
	for _, s := range []*txnSink{a, b} {
		e, ok, err := s.CommittedEpoch(ctx)
		require.NoError(t, err)
		require.True(t, ok, s.id)
		assert.Equal(t, map[string]uint64{"sink-a": 2, "sink-b": 9}[s.id], e, s.id)
	}
	assert.Positive(t, slowed.Load(), "no fetch was slowed")

	// Many epochs: every one read.
	for e := uint64(10); e < 400; e++ {
		require.NoError(t, a.Commit(ctx, e))
	}
	e, ok, err := a.CommittedEpoch(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, uint64(399), e)
}

// TestTxnTimeoutFollowsTheInterval: a Kafka output's transaction stays
// open from one checkpoint to the next, so its timeout grows with the
// checkpoint interval; an interval whose transactions brokers would refuse
// is a usage error at Open, before anything is read.
func TestTxnTimeoutFollowsTheInterval(t *testing.T) {
	assert.Equal(t, time.Minute, txnTimeoutFor(5*time.Second))
	assert.Equal(t, 4*time.Minute+30*time.Second, txnTimeoutFor(2*time.Minute))
	assert.LessOrEqual(t, txnTimeoutFor(7*time.Minute), maxTxnTimeout)

	addr := kafkatest.Broker(t, 1, "in")
	prog, err := Compile("txn.sql", `CREATE SOURCE e (ts BIGINT, k INT) WITH (connector = 'kafka', brokers = '`+addr+`', topic = 'in');
CREATE SINK o AS SELECT ts, k FROM e WITH (connector = 'kafka', brokers = '`+addr+`', topic = 'out');`)
	require.NoError(t, err)
	_, err = prog.Open(Options{CheckpointDir: t.TempDir(), CheckpointInterval: 8 * time.Minute})
	var usage usageError
	require.ErrorAs(t, err, &usage)
	assert.ErrorContains(t, err, "CheckpointInterval (--checkpoint-interval) 8m0s is longer than its transaction may stay open (at most 7m15s")
}

// TestCheckpointDirOneRun: a run holds its checkpoint directory until it
// closes: another opened on it meanwhile fails, naming it, and opens once
// the first has closed.
func TestCheckpointDirOneRun(t *testing.T) {
	addr := kafkatest.Broker(t, 1, "in")
	// A program compiled for each job: a Program is opened once, and a
	// compiled program backs one open job.
	open := func(dir string) (*Job, error) {
		prog, err := Compile("one.sql", `CREATE SOURCE e (ts BIGINT, k INT) WITH (connector = 'kafka', brokers = '`+addr+`', topic = 'in');
CREATE SINK o AS SELECT ts, k FROM e WITH (connector = 'kafka', brokers = '`+addr+`', topic = 'out');`)
		require.NoError(t, err)
		return prog.Open(Options{CheckpointDir: dir})
	}
	dir := t.TempDir()
	first, err := open(dir)
	require.NoError(t, err)
	_, err = open(dir)
	require.ErrorIs(t, err, checkpoint.ErrInUse)
	assert.ErrorContains(t, err, dir)
	first.Close()
	again, err := open(dir)
	require.NoError(t, err)
	again.Close()
}
