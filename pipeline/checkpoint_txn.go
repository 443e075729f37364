package pipeline

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/saber-hx/saber-hx/internal/retry"
	"github.com/saber-hx/saber-hx/internal/security"
	"github.com/saber-hx/saber-hx/sql"
)

// epochTopic holds the epoch markers of checkpointed runs' Kafka sinks:
// each transaction of a sink ends with a record keyed by its
// transactional ID whose value is the epoch (the checkpoint) it
// completes, so that a restart reads (read committed) which checkpoint
// the output stands at.
const epochTopic = "__saber_hx_epochs"

// txnSink writes a query's rows to a Kafka topic in transactions, one per
// checkpoint epoch: rows are produced within the open transaction (Flush,
// acknowledged but not visible to read-committed consumers), and Commit,
// once the epoch's checkpoint is written, commits them with the epoch's
// marker. A restart with the same transactional ID fences the old
// producer, which aborts its open transaction: the rows after the last
// committed epoch are then emitted again from that epoch's checkpoint,
// and a read-committed consumer sees each row once.
type txnSink struct {
	cl      *kgo.Client
	sec     security.Kafka
	guard   *security.Guard // ends a secured client's waits on a refused connection
	brokers []string
	id      string
	topic   string
	where   string
	begun   bool
	// outage reports the brokers' outages (kgo's connect hook) and counts
	// the failed connections, which kgo retries.
	outage *retry.Outage

	arena []byte
	spans []span
	recs  []*kgo.Record
}

type span struct{ k0, k1, v1 int }

// txnTimeout is the transactions' timeout at the least: a process that
// dies with one open leaves it to the broker for at most that long (a
// restart fences it at once).
var txnTimeout = time.Minute

// maxTxnTimeout is the longest transaction Kafka's brokers take by
// default (transaction.max.timeout.ms).
const maxTxnTimeout = 15 * time.Minute

// txnTimeoutFor is the transactions' timeout where checkpoints come every
// interval: a transaction stays open from the first row after one
// checkpoint to the next, and one that outlives its timeout is aborted by
// the broker, failing the checkpoint that would commit it (and every one
// after: the run never commits).
func txnTimeoutFor(every time.Duration) time.Duration {
	return max(txnTimeout, 2*every+30*time.Second)
}

// txnID is a transactional Kafka sink's ID where the run checkpoints (""
// otherwise): stable across restarts of one instance of the program, one
// per query.
func (j *Job) txnID(q *sql.Query) string {
	if j.ckpt == nil || q.Sink == nil || q.Sink.Connector != "kafka" {
		return ""
	}
	src := j.prog.Sources[0]
	group := src.Group
	if group == "" {
		group = src.Topic
	}
	return fmt.Sprintf("saber-hx.%s.%s.%d-of-%d", group, q.Name, j.share.instance, j.share.instances)
}

// txnSinks are the run's transactional Kafka sinks.
func (j *Job) txnSinks() []*rowSink {
	var out []*rowSink
	for _, s := range j.sinks {
		if s != nil && s.txn != nil {
			out = append(out, s)
		}
	}
	return out
}

// outputEpoch is the checkpoint epoch the transactional Kafka outputs
// stand at: the least their markers say (ok false: one has none, or there
// is no such output).
func (j *Job) outputEpoch() (epoch uint64, ok bool, err error) {
	sinks := j.txnSinks()
	if len(sinks) == 0 {
		return 0, false, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i, s := range sinks {
		e, has, err := s.txn.CommittedEpoch(ctx)
		if err != nil || !has {
			return 0, false, err
		}
		if i == 0 || e < epoch {
			epoch = e
		}
	}
	return epoch, true, nil
}

// openTxnSink opens a transactional Kafka output, its connections secured
// as sec says; logf (nil: none) receives its outage reports.
func openTxnSink(ctx context.Context, brokers []string, sec security.Kafka, topic, id string, timeout time.Duration, logf func(string, ...any)) (*txnSink, error) {
	where := fmt.Sprintf("kafka sink %s (brokers %s, transactional id %s)", topic, strings.Join(brokers, ","), id)
	outage := retry.NewOutage(where, logf, 0)
	cl, guard, err := sec.Connect(ctx, brokers,
		kgo.WithHooks(retry.BrokerHook{O: outage}),
		kgo.DefaultProduceTopic(topic),
		kgo.AllowAutoTopicCreation(),
		kgo.ProducerLinger(0),
		kgo.TransactionalID(id),
		kgo.TransactionTimeout(timeout),
	)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	s := &txnSink{cl: cl, sec: sec, guard: guard, brokers: brokers, id: id, topic: topic, where: where, outage: outage}
	// The producer ID, under the transactional ID: it fences an earlier
	// process of the same ID and aborts its open transaction.
	pctx, unbind := s.bind(ctx)
	defer unbind()
	if _, _, err := cl.ProducerID(pctx); err != nil {
		cl.Close()
		return nil, fmt.Errorf("%s: init producer: %w", where, s.guard.Err(err))
	}
	return s, nil
}

// bind makes ctx end where the guard finds the brokers refuse a secured
// connection (kgo would retry it as an outage).
func (s *txnSink) bind(ctx context.Context) (context.Context, context.CancelFunc) {
	if !s.sec.Secured() {
		return ctx, func() {}
	}
	return s.guard.Bind(ctx)
}

// Retries is the number of failed connections to the brokers, each
// retried by kgo.
func (s *txnSink) Retries() uint64 { return s.outage.Retries() }

// Down says whether the brokers are unreachable now.
func (s *txnSink) Down() bool { return s.outage.Down() }

// Append buffers one record (bytes copied).
func (s *txnSink) Append(key, value []byte) {
	k0 := len(s.arena)
	s.arena = append(s.arena, key...)
	k1 := len(s.arena)
	s.arena = append(s.arena, value...)
	s.spans = append(s.spans, span{k0, k1, len(s.arena)})
}

func (s *txnSink) begin() error {
	if s.begun {
		return nil
	}
	if err := s.cl.BeginTransaction(); err != nil {
		return fmt.Errorf("%s: begin transaction: %w", s.where, err)
	}
	s.begun = true
	return nil
}

// Flush produces the rows appended within the open transaction and waits
// for their acknowledgements.
func (s *txnSink) Flush(ctx context.Context) error {
	if len(s.spans) == 0 {
		return nil
	}
	ctx, unbind := s.bind(ctx)
	defer unbind()
	if err := s.begin(); err != nil {
		return err
	}
	s.recs = s.recs[:0]
	for _, sp := range s.spans {
		r := &kgo.Record{Topic: s.topic, Value: s.arena[sp.k1:sp.v1:sp.v1]}
		if sp.k1 > sp.k0 {
			r.Key = s.arena[sp.k0:sp.k1:sp.k1]
		}
		s.recs = append(s.recs, r)
	}
	err := s.cl.ProduceSync(ctx, s.recs...).FirstErr()
	clear(s.recs)
	s.arena, s.spans = s.arena[:0], s.spans[:0]
	if err != nil {
		return fmt.Errorf("%s: produce: %w", s.where, s.guard.Err(err))
	}
	return nil
}

// Commit ends epoch's transaction: its rows and its marker, committed
// together.
func (s *txnSink) Commit(ctx context.Context, epoch uint64) error {
	if err := s.Flush(ctx); err != nil {
		return err
	}
	ctx, unbind := s.bind(ctx)
	defer unbind()
	if err := s.begin(); err != nil {
		return err
	}
	marker := &kgo.Record{Topic: epochTopic, Key: []byte(s.id), Value: strconv.AppendUint(nil, epoch, 10)}
	if err := s.cl.ProduceSync(ctx, marker).FirstErr(); err != nil {
		return fmt.Errorf("%s: epoch %d marker: %w", s.where, epoch, s.guard.Err(err))
	}
	if err := s.cl.Flush(ctx); err != nil {
		return fmt.Errorf("%s: flush: %w", s.where, s.guard.Err(err))
	}
	s.begun = false
	if err := s.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return fmt.Errorf("%s: commit epoch %d: %w", s.where, epoch, s.guard.Err(err))
	}
	return nil
}

// Abort drops the open transaction's rows (a run that stops: they are
// emitted again by the run that resumes from its last checkpoint).
func (s *txnSink) Abort(ctx context.Context) error {
	s.arena, s.spans = s.arena[:0], s.spans[:0]
	if !s.begun {
		return nil
	}
	ctx, unbind := s.bind(ctx)
	defer unbind()
	s.begun = false
	if err := s.cl.AbortBufferedRecords(ctx); err != nil {
		return fmt.Errorf("%s: abort: %w", s.where, err)
	}
	if err := s.cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
		return fmt.Errorf("%s: abort: %w", s.where, err)
	}
	return nil
}

func (s *txnSink) Close() error {
	s.cl.Close()
	return nil
}

// CommittedEpoch reads the last epoch this sink's transactional ID
// committed (ok false: none). Call it after openTxnSink, which aborted any
// transaction left open.
//
// It reads the marker topic to its end offsets, listed first: reading
// until a poll comes back empty would take a slow first fetch (a loaded
// machine, a broker just restarted) for an empty topic, and restart from
// scratch an output that stands at a checkpoint, writing its rows twice.
// The read is uncommitted, with the control records kept, so that every
// offset below the end is seen (read committed leaves out aborted
// records, and could never reach an end behind them); which markers were
// committed it decides itself, from the transactions' control records
// (txnMarkers).
func (s *txnSink) CommittedEpoch(ctx context.Context) (epoch uint64, ok bool, err error) {
	fail := func(err error) (uint64, bool, error) {
		return 0, false, fmt.Errorf("%s: read epochs from %s: %w", s.where, epochTopic, err)
	}
	cl, _, err := s.sec.Connect(ctx, s.brokers, kgo.FetchIsolationLevel(kgo.ReadUncommitted()), kgo.KeepControlRecords())
	if err != nil {
		return fail(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	starts, err := adm.ListStartOffsets(ctx, epochTopic)
	if err != nil {
		return fail(err)
	}
	ends, err := adm.ListEndOffsets(ctx, epochTopic)
	if err != nil {
		return fail(err)
	}
	unread := map[int32]int64{} // the partitions to read, and their ends
	from := map[int32]kgo.Offset{}
	var lerr error
	ends.Each(func(o kadm.ListedOffset) {
		if errors.Is(o.Err, kerr.UnknownTopicOrPartition) {
			return // no marker was ever written
		}
		st, _ := starts.Lookup(epochTopic, o.Partition)
		if o.Err == nil {
			o.Err = st.Err
		}
		if o.Err != nil {
			lerr = cmp.Or(lerr, fmt.Errorf("partition %d offsets: %w", o.Partition, o.Err))
			return
		}
		if o.Offset > st.Offset {
			unread[o.Partition], from[o.Partition] = o.Offset, kgo.NewOffset().At(st.Offset)
		}
	})
	if lerr != nil {
		return fail(lerr)
	}
	if len(unread) == 0 {
		return 0, false, nil
	}
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{epochTopic: from})
	var m txnMarkers
	for len(unread) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fail(fmt.Errorf("%d partitions not read to their end: %w", len(unread), err))
		}
		var ferr error
		fs.EachError(func(_ string, p int32, err error) { ferr = cmp.Or(ferr, fmt.Errorf("partition %d: %w", p, err)) })
		if ferr != nil {
			return fail(ferr)
		}
		fs.EachRecord(func(r *kgo.Record) {
			m.add(r, s.id)
			if end, ok := unread[r.Partition]; ok && r.Offset >= end-1 {
				delete(unread, r.Partition)
			}
		})
	}
	epoch, ok = m.committed()
	return epoch, ok, nil
}

// txnMarkers decides, from a read uncommitted, which epoch markers of one
// transactional ID were committed: a transactional marker counts once a
// commit control record of its producer follows it, and not if an abort
// does (a producer's transactions follow one another, so its open one is
// the one the next control record ends).
type txnMarkers struct {
	open  map[int64]uint64 // producer ID: the highest epoch of its open transaction
	epoch uint64
	ok    bool
}

func (m *txnMarkers) add(r *kgo.Record, id string) {
	if r.Attrs.IsControl() {
		var k kmsg.ControlRecordKey
		if k.ReadFrom(r.Key) != nil {
			return
		}
		e, open := m.open[r.ProducerID]
		delete(m.open, r.ProducerID)
		if open && k.Type == kmsg.ControlRecordKeyTypeCommit {
			m.commit(e)
		}
		return
	}
	if string(r.Key) != id {
		return
	}
	e, err := strconv.ParseUint(string(r.Value), 10, 64)
	if err != nil {
		return
	}
	if !r.Attrs.IsTransactional() {
		m.commit(e)
		return
	}
	if m.open == nil {
		m.open = map[int64]uint64{}
	}
	if cur, ok := m.open[r.ProducerID]; !ok || e > cur {
		m.open[r.ProducerID] = e
	}
}

func (m *txnMarkers) commit(e uint64) {
	if !m.ok || e > m.epoch {
		m.epoch, m.ok = e, true
	}
}

// committed is the highest committed epoch (ok false: none).
func (m *txnMarkers) committed() (uint64, bool) { return m.epoch, m.ok }
