package pipeline

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
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
//
// The outputs of a program to one cluster share their producer (its
// transactional ID, its transaction): a checkpoint's rows in all of them
// commit together, or none does. Committed one after another, a crash
// between two commits left the outputs at different checkpoints, and the
// restart, from the older, wrote that checkpoint's rows again in those
// that had committed it.
type txnSink struct {
	*txnProducer
	topic string
	where string

	arena []byte
	spans []span
	recs  []*kgo.Record
}

// txnProducer is the transactional producer of the outputs to one cluster
// (txnSink).
type txnProducer struct {
	cl      *kgo.Client
	sec     security.Kafka
	guard   *security.Guard // ends a secured client's waits on a refused connection
	brokers []string
	id      string
	where   string
	// begun says whether a transaction is open: its outputs' flushes,
	// each under its output's lock, may begin it together (mu).
	mu    sync.Mutex
	begun bool
	// outage reports the brokers' outages (kgo's connect hook) and counts
	// the failed connections, which kgo retries.
	outage *retry.Outage
	closed sync.Once
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

// txnID is the transactional ID of a checkpointed run's Kafka outputs to
// one cluster, the queries qs: stable across restarts of one instance of
// the program (a single output's is named after its query, as it was
// before outputs shared their producer), and its own, the checkpoint
// directory's token at its end (txnToken).
func (j *Job) txnID(qs []*sql.Query) (string, error) {
	src := j.prog.Sources[0]
	group := src.Group
	if group == "" {
		group = src.Topic
	}
	names := make([]string, len(qs))
	for i, q := range qs {
		names[i] = q.Name
	}
	id := fmt.Sprintf("saber-hx.%s.%s.%d-of-%d", group, strings.Join(names, "+"), j.share.instance, j.share.instances)
	token, err := j.txnToken()
	if token != "" {
		id += "." + token
	}
	return id, err
}

// txnNote is the checkpoint directory's note of the token that makes its
// run's transactional IDs its own: two programs over one topic (or
// group), whose outputs had the same names, took the same IDs, each
// fencing the other's producer and reading the other's epoch markers.
// A directory holds one run's checkpoints (its lock), so its token is
// that run's, kept across restarts and wherever the directory moves.
// "-": none, a directory whose checkpoints were written before tokens
// were kept, whose outputs' IDs stand as they were.
const txnNote = "kafka-transactional-id"

// txnToken reads the checkpoint directory's token, or makes it: random
// in a directory without checkpoints, none ("-") in one with some.
func (j *Job) txnToken() (string, error) {
	d := j.ckptDir
	b, ok, err := d.ReadNote(txnNote)
	if err != nil {
		return "", err
	}
	token := strings.TrimSpace(string(b))
	if !ok {
		highest, err := d.Highest()
		if err != nil {
			return "", err
		}
		token = "-"
		if highest == 0 {
			token = fmt.Sprintf("%016x", rand.Uint64())
		}
		if err := d.WriteNote(txnNote, []byte(token+"\n")); err != nil {
			return "", err
		}
	}
	if token == "-" {
		return "", nil
	}
	if len(token) != 16 || strings.Trim(token, "0123456789abcdef") != "" {
		return "", fmt.Errorf("%s: %q is not a token (16 hexadecimal digits, or - for none): remove the file to start afresh", filepath.Join(d.Path, txnNote), token)
	}
	return token, nil
}

// kafkaCluster is the cluster a Kafka output writes to, as far as the
// program says: its brokers and how it connects, credentials included
// (outputs whose passwords differ do not share the first's connection:
// the other's, wrong, would never be tried).
type kafkaCluster struct {
	brokers string
	sec     security.Kafka
}

func clusterOf(k *sql.Sink) kafkaCluster {
	return kafkaCluster{brokers: strings.Join(k.Brokers, ","), sec: k.KafkaSecurity}
}

// txnGroup is the Kafka outputs of a checkpointed run to one cluster
// (kafkaCluster) and the transactional producer they share.
type txnGroup struct {
	cluster kafkaCluster
	p       *txnProducer
	outs    []*rowSink
}

// txnGroupOf is the group of q's output where the run checkpoints and q
// writes to Kafka (nil otherwise): the one of every Kafka output of the
// program to that cluster, its producer opened by the first.
func (j *Job) txnGroupOf(q *sql.Query, retry sinkRetry) (*txnGroup, error) {
	if j.ckpt == nil || q.Sink == nil || q.Sink.Connector != "kafka" {
		return nil, nil
	}
	timeout := txnTimeoutFor(j.ckpt.every)
	if timeout > maxTxnTimeout {
		return nil, usagef("query %s: a Kafka output commits once per checkpoint: CheckpointInterval (--checkpoint-interval) %v is longer than its transaction may stay open (at most %v: brokers refuse transactions longer than transaction.max.timeout.ms, %v by default)",
			q.Name, j.ckpt.every, (maxTxnTimeout-30*time.Second)/2, maxTxnTimeout)
	}
	cluster := clusterOf(q.Sink)
	for _, g := range j.txns {
		if g.cluster == cluster {
			return g, nil
		}
	}
	var shared []*sql.Query
	for _, o := range j.prog.Queries {
		if o.Sink != nil && o.Sink.Connector == "kafka" && clusterOf(o.Sink) == cluster {
			shared = append(shared, o)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id, err := j.txnID(shared)
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", q.Name, err)
	}
	p, err := openTxnProducer(ctx, q.Sink.Brokers, q.Sink.KafkaSecurity, id, timeout, retry.logf)
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", q.Name, err)
	}
	g := &txnGroup{cluster: cluster, p: p}
	j.txns = append(j.txns, g)
	return g, nil
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

// commitTxns commits epoch in every transactional producer: its outputs
// held (no row appended meanwhile) and flushed, then one transaction for
// them all.
func (j *Job) commitTxns(ctx context.Context, epoch uint64) error {
	for _, g := range j.txns {
		if err := g.holding(ctx, func(ctx context.Context) error {
			for _, s := range g.outs {
				if err := s.txn.Flush(ctx); err != nil {
					return err
				}
			}
			return g.p.Commit(ctx, epoch)
		}); err != nil {
			return err
		}
	}
	return nil
}

// abortTxns drops every transactional producer's open transaction and
// its outputs' rows not flushed.
func (j *Job) abortTxns(ctx context.Context) error {
	for _, g := range j.txns {
		if err := g.holding(ctx, func(ctx context.Context) error {
			for _, s := range g.outs {
				s.txn.drop()
			}
			return g.p.Abort(ctx)
		}); err != nil {
			return err
		}
	}
	return nil
}

// holding runs f with g's outputs held, in their order, and ctx bounded
// by the first's bound (every output of a group has the same).
func (g *txnGroup) holding(ctx context.Context, f func(context.Context) error) error {
	if len(g.outs) == 0 {
		return nil
	}
	for _, s := range g.outs {
		s.mu.Lock()
		defer s.mu.Unlock()
	}
	ctx, cancel := g.outs[0].bounded(ctx)
	defer cancel()
	return f(ctx)
}

// outputEpoch is the checkpoint epoch the transactional Kafka outputs
// stand at: the least their producers' markers say (ok false: one has
// none, or there is no such output).
func (j *Job) outputEpoch() (epoch uint64, ok bool, err error) {
	if len(j.txns) == 0 {
		return 0, false, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i, g := range j.txns {
		e, has, err := g.p.CommittedEpoch(ctx)
		if err != nil || !has {
			return 0, false, err
		}
		if i == 0 || e < epoch {
			epoch = e
		}
	}
	return epoch, true, nil
}

// sink is an output of p's to topic.
func (p *txnProducer) sink(topic string) *txnSink {
	return &txnSink{txnProducer: p, topic: topic, where: fmt.Sprintf("kafka sink %s (brokers %s, transactional id %s)", topic, strings.Join(p.brokers, ","), p.id)}
}

// openTxnProducer opens the transactional producer of the Kafka outputs
// to one cluster.
func openTxnProducer(ctx context.Context, brokers []string, sec security.Kafka, id string, timeout time.Duration, logf func(string, ...any)) (*txnProducer, error) {
	where := fmt.Sprintf("kafka output (brokers %s, transactional id %s)", strings.Join(brokers, ","), id)
	outage := retry.NewOutage(where, logf, 0)
	cl, guard, err := sec.Connect(ctx, brokers,
		kgo.WithHooks(retry.BrokerHook{O: outage}),
		kgo.AllowAutoTopicCreation(),
		kgo.ProducerLinger(0),
		kgo.TransactionalID(id),
		kgo.TransactionTimeout(timeout),
	)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	p := &txnProducer{cl: cl, sec: sec, guard: guard, brokers: brokers, id: id, where: where, outage: outage}
	// The producer ID, under the transactional ID: it fences an earlier
	// process of the same ID and aborts its open transaction.
	pctx, unbind := p.bind(ctx)
	defer unbind()
	if _, _, err := cl.ProducerID(pctx); err != nil {
		cl.Close()
		return nil, fmt.Errorf("%s: init producer: %w", where, p.guard.Err(err))
	}
	return p, nil
}

// bind makes ctx end where the guard finds the brokers refuse a secured
// connection (kgo would retry it as an outage).
func (p *txnProducer) bind(ctx context.Context) (context.Context, context.CancelFunc) {
	if !p.sec.Secured() {
		return ctx, func() {}
	}
	return p.guard.Bind(ctx)
}

// Retries is the number of failed connections to the brokers, each
// retried by kgo.
func (p *txnProducer) Retries() uint64 { return p.outage.Retries() }

// Down says whether the brokers are unreachable now.
func (p *txnProducer) Down() bool { return p.outage.Down() }

// Append buffers one record (bytes copied).
func (s *txnSink) Append(key, value []byte) {
	k0 := len(s.arena)
	s.arena = append(s.arena, key...)
	k1 := len(s.arena)
	s.arena = append(s.arena, value...)
	s.spans = append(s.spans, span{k0, k1, len(s.arena)})
}

func (p *txnProducer) begin() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.begun {
		return nil
	}
	if err := p.cl.BeginTransaction(); err != nil {
		return fmt.Errorf("%s: begin transaction: %w", p.where, err)
	}
	p.begun = true
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
	err := retry.ProduceSync(ctx, s.cl, s.recs...)
	clear(s.recs)
	s.arena, s.spans = s.arena[:0], s.spans[:0]
	if err != nil {
		return fmt.Errorf("%s: produce: %w", s.where, s.guard.Err(err))
	}
	return nil
}

// Commit ends epoch's transaction: the rows its outputs flushed and its
// marker, committed together.
func (p *txnProducer) Commit(ctx context.Context, epoch uint64) error {
	ctx, unbind := p.bind(ctx)
	defer unbind()
	if err := p.begin(); err != nil {
		return err
	}
	marker := &kgo.Record{Topic: epochTopic, Key: []byte(p.id), Value: strconv.AppendUint(nil, epoch, 10)}
	if err := retry.ProduceSync(ctx, p.cl, marker); err != nil {
		return fmt.Errorf("%s: epoch %d marker: %w", p.where, epoch, p.guard.Err(err))
	}
	if err := p.cl.Flush(ctx); err != nil {
		return fmt.Errorf("%s: flush: %w", p.where, p.guard.Err(err))
	}
	p.ended()
	if err := p.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return fmt.Errorf("%s: commit epoch %d: %w", p.where, epoch, p.guard.Err(err))
	}
	return nil
}

// drop forgets the rows appended and not flushed.
func (s *txnSink) drop() { s.arena, s.spans = s.arena[:0], s.spans[:0] }

// Abort drops the open transaction: what every output of p's flushed (a
// run that stops: they are emitted again by the run that resumes from its
// last checkpoint).
func (p *txnProducer) Abort(ctx context.Context) error {
	if !p.ended() {
		return nil
	}
	ctx, unbind := p.bind(ctx)
	defer unbind()
	if err := p.cl.AbortBufferedRecords(ctx); err != nil {
		return fmt.Errorf("%s: abort: %w", p.where, err)
	}
	if err := p.cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
		return fmt.Errorf("%s: abort: %w", p.where, err)
	}
	return nil
}

// ended marks the open transaction ended (commit or abort: its outputs
// held, no flush begins one meanwhile) and says whether one was open.
func (p *txnProducer) ended() (was bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	was, p.begun = p.begun, false
	return was
}

// Close closes p's client, once whatever its outputs' closes.
func (p *txnProducer) Close() error {
	p.closed.Do(p.cl.Close)
	return nil
}

// CommittedEpoch reads the last epoch p's transactional ID
// committed (ok false: none). Call it after openTxnProducer, which aborted any
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
func (p *txnProducer) CommittedEpoch(ctx context.Context) (epoch uint64, ok bool, err error) {
	fail := func(err error) (uint64, bool, error) {
		return 0, false, fmt.Errorf("%s: read epochs from %s: %w", p.where, epochTopic, err)
	}
	cl, _, err := p.sec.Connect(ctx, p.brokers, kgo.FetchIsolationLevel(kgo.ReadUncommitted()), kgo.KeepControlRecords())
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
			m.add(r, p.id)
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
	// open: the highest epoch of each producer's open transaction, by
	// partition (a transaction's control records are per partition, and
	// a topic that gained partitions has a producer's markers in two).
	open  map[txnOpen]uint64
	epoch uint64
	ok    bool
}

// txnOpen is a producer's transaction open in a partition.
type txnOpen struct {
	partition int32
	producer  int64
}

func (m *txnMarkers) add(r *kgo.Record, id string) {
	if r.Attrs.IsControl() {
		var k kmsg.ControlRecordKey
		if k.ReadFrom(r.Key) != nil {
			return
		}
		at := txnOpen{r.Partition, r.ProducerID}
		e, open := m.open[at]
		delete(m.open, at)
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
		m.open = map[txnOpen]uint64{}
	}
	at := txnOpen{r.Partition, r.ProducerID}
	if cur, ok := m.open[at]; !ok || e > cur {
		m.open[at] = e
	}
}

func (m *txnMarkers) commit(e uint64) {
	if !m.ok || e > m.epoch {
		m.epoch, m.ok = e, true
	}
}

// committed is the highest committed epoch (ok false: none).
func (m *txnMarkers) committed() (uint64, bool) { return m.epoch, m.ok }
