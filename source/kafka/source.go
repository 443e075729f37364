package kafka

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/saber-hx/saber-hx/internal/kgopool"
	"github.com/saber-hx/saber-hx/internal/retry"
	"github.com/saber-hx/saber-hx/internal/security"
	"github.com/saber-hx/saber-hx/source"
)

// Start is where a partition is read from when the group has no committed
// offset for it (or there is no group).
type Start uint8

const (
	// Earliest reads from the partition's first record (the default).
	Earliest Start = iota
	// Latest reads only records written after the source opened.
	Latest
)

func (s Start) String() string {
	if s == Latest {
		return "latest"
	}
	return "earliest"
}

// Committed is how a source with a Group begins its partitions with
// respect to the offsets the group committed before it opened. A
// checkpoint's positions (Config.Resume) win over all three.
type Committed uint8

const (
	// UseCommitted begins each partition at the group's committed offset,
	// at Start where the group has none for it (the default).
	UseCommitted Committed = iota
	// IgnoreCommitted begins every partition at Start whatever the group
	// committed (Flink's scan.startup.mode 'earliest-offset' and
	// 'latest-offset'); the source still commits to the group. Its
	// assignment is static, as Flink's is: every partition (or those of
	// Partitions and Instances), read directly, committed as a simple
	// consumer, not the group's share of them.
	IgnoreCommitted
	// RequireCommitted begins each partition at the group's committed
	// offset, and Open fails where the group has none for a partition
	// the source reads (Flink's 'group-offsets' without
	// auto.offset.reset); it needs a Group.
	RequireCommitted
)

func (c Committed) String() string {
	switch c {
	case IgnoreCommitted:
		return "ignore-committed"
	case RequireCommitted:
		return "require-committed"
	}
	return "use-committed"
}

// Defaults of Config's durations.
const (
	DefaultIdleTimeout    = 5 * time.Second
	DefaultCommitInterval = time.Second
)

// Linger is how long a reader of a Source should let tuples wait in a
// partial engine task before dispatching it (engine.Stream.Flush): while
// the topic is quiet, and at least that often while records trickle in,
// so that at a low rate windows are emitted without waiting for a task to
// fill, at the cost of a small task per pause.
const Linger = 100 * time.Millisecond

// Config is what a Source reads and how.
type Config struct {
	Brokers []string
	Topic   string
	// Security is how the connections to the brokers are secured (TLS,
	// SASL; the zero value is PLAINTEXT). Every client of the source
	// (metadata, consumer, offset commits) uses it. Brokers that refuse
	// it fail Open, or FillSome once open, with a *security.Error.
	Security security.Kafka
	// Group is the consumer group whose offsets are committed; "" reads
	// without a group (Partitions, or all of them) and commits nothing.
	Group string
	Start Start
	// Committed is whether the group's committed offsets decide where a
	// partition begins: UseCommitted (the default), IgnoreCommitted or
	// RequireCommitted. Without a Group it does not apply
	// (RequireCommitted is then an error).
	Committed Committed
	// Partitions is a static assignment (nil: all partitions, or the
	// group's share of them when Group is set).
	Partitions []int32
	// Instances, if above 1, makes the assignment static: this source
	// reads the partitions p of the topic (or of Partitions) with
	// p mod Instances = Instance, the share of one of Instances processes
	// that split the topic between them (a scaled-out run). With a Group
	// each commits its own partitions, as a simple consumer.
	Instance, Instances int
	// Resume, per partition, is where to read from instead of the
	// group's committed offset or Start: a checkpoint's Positions. A
	// non-nil Resume, even empty, makes the assignment static (a
	// partition not in it starts as it would without it), for a
	// checkpointed run's state is that of every partition it reads.
	Resume map[int32]Position
	// Decoder decodes one record value into one tuple. With Binary it may
	// be nil (TupleSize says the size) and is not called.
	//
	// A Decoder with String columns must take its Options.Strings from
	// Source.Strings (a closure over the Source that Open returns: the
	// decoder is called only from FillSome); the long strings of the
	// tuples FillSome returns are valid until the next FillSome or Close.
	Decoder source.Decoder
	// NewDecoder, where set, makes another decoder like Decoder (a
	// Decoder of its own for each fetcher, see Fetchers): they decode on
	// the fetchers' goroutines. Their Options.Strings is strings, which
	// leaves any record with long strings to Decoder. nil: Decoder
	// decodes every record, on FillSome's goroutine.
	NewDecoder func(strings func(n int) ([]byte, error)) (source.Decoder, error)
	// Fetchers is how many consumer clients read the partitions of a
	// source that is not a group member, each polled (and its records
	// decoded, with NewDecoder) by a goroutine of its own, so that
	// fetching and decoding grow with the cores (0: one; at most one per
	// partition). A group member has one client. Partitions that went
	// idle together wake in the same poll of one client (kgo fetches the
	// partitions of a broker together); with several, a record of one
	// still idle when another woke may be late.
	Fetchers int
	// StringBytes is the memory of each partition's long strings (those
	// of its tuples buffered, and of those FillSome last returned),
	// mapped outside the Go heap on the first one: rounded up to a power
	// of two, at least a page (0: DefaultStringBytes). A partition whose
	// memory is full is not fetched until FillSome has produced its
	// tuples; a record whose long strings need more is an error.
	StringBytes int
	// Binary: the record value is the tuple itself, TupleSize bytes.
	Binary    bool
	TupleSize int            // Binary: the tuple's size (0: Decoder.TupleSize())
	OnError   source.OnError // Binary: what a value of the wrong size is
	// TimeOffset is the byte offset of the little-endian int64 event time
	// in the tuple.
	TimeOffset int
	// IdleTimeout is how long a partition with nothing buffered holds the
	// merge back (0: DefaultIdleTimeout; negative: for ever).
	IdleTimeout time.Duration
	// StopAtEnd reads each partition up to the end offset it had when the
	// source opened; then FillSome returns io.EOF. Reading committed
	// records, a partition whose last records before its end are an
	// aborted transaction's, aborted while another was open, ends only
	// once that other one ends: nothing read before says where the
	// aborted records stop.
	StopAtEnd bool
	// ReadUncommitted reads the records of transactions not committed,
	// aborted ones included (Kafka's read_uncommitted). By default only
	// committed records are read (read_committed): a transactional
	// producer's output, saber-hx's Kafka sink with checkpoints among
	// them, exactly once; the end offsets (StopAtEnd, Latest) are then
	// the last stable ones, before any transaction still open.
	ReadUncommitted bool
	// CommitInterval is how often done offsets are committed (0:
	// DefaultCommitInterval).
	CommitInterval time.Duration
	// Logger receives warnings (nil: none).
	Logger func(format string, args ...any)

	// Tests lower these to vary how records arrive.
	fetchPartitionBytes int32
	maxPoll             int
	bufferTuples        int
	fetchMaxWait        time.Duration // how long a fetch waits for records (0: 500 ms)
	metadataAge         time.Duration // how often the topic's partitions are looked up (0: kgo's 5 minutes)
	// afterTake, in tests, runs (s.mu held) once the fetchers have their
	// polls' slots back: they may poll again from then on.
	afterTake func(*Source)
}

// Stats are a source's counters.
type Stats struct {
	Records   int64  // records polled (of assigned partitions)
	Bytes     int64  // their value bytes
	Malformed int64  // records skipped (OnError Skip)
	Tuples    int64  // tuples produced by FillSome
	Position  uint64 // the stream position: bytes of tuples produced
	Commits   int64  // successful commit requests
	// StringWaits counts the times a record waited for its partition's
	// string memory (Config.StringBytes) to be freed.
	StringWaits int64
	Partitions  []PartitionStats
}

// PartitionStats are one assigned partition's.
type PartitionStats struct {
	Partition int32
	Next      int64 // the offset after the last record polled (-1: none yet)
	High      int64 // the high watermark of the last fetch (-1: none yet); lag = High - Next
	Watermark int64 // the largest event time polled (math.MinInt64: none)
	Buffered  int   // decoded tuples not yet produced
	Committed int64 // the offset last committed (-1: none)
	Idle      bool
	// StringMemory is the size of its string memory (0: none mapped),
	// Strings the bytes of it in use: the long strings of tuples buffered
	// or last returned by FillSome (and of tuples dropped), until the next
	// FillSome.
	StringMemory int
	Strings      int
}

// Source is a Kafka topic read as tuples. FillSome is for one goroutine;
// Done, Stats and Close may be called from others. A Decoder with String
// columns must take its Options.Strings from Source.Strings; the long
// strings of tuples FillSome returns are valid until the next FillSome
// or Close.
type Source struct {
	cfg     Config
	ts      int
	timeOff int
	binary  bool
	skipBin bool
	dec     source.Decoder
	idle    time.Duration
	// outSince is when FillSome last returned (zero: in it, or never
	// called): the idle clock stops while the engine is away (idleClock).
	outSince time.Time
	maxPoll  int
	bufCap   int
	pools    *kgopool.Pools // the clients' records and decompressed batches
	strSize  int            // a partition's string memory

	cl   *kgo.Client // a group member's (nil: fetchers)
	meta *kgo.Client
	// fetchers read the partitions where the source is not a group
	// member: what they polled comes through polled, and goes back to
	// them through free once taken (taking: those FillSome takes now);
	// stopFetchers ends their polls (Close).
	fetchers     []*fetcher
	polled       chan *polled
	free         chan *polled
	taking       []*polled
	stopFetchers context.CancelFunc
	adm          *kadm.Client
	member       bool // a group member (commits through cl); else static commits through adm
	static       bool // Partitions, Instances or Resume: no group membership
	// left: where the stream of each partition this member lost or gave
	// up stood then (adjustOffsets).
	left map[int32]Position
	// outage reports the brokers unreachable (kgo retries meanwhile):
	// once when it begins, every so often, and when it ends.
	outage *retry.Outage
	// guard fails the source where the brokers refuse its credentials or
	// certificates (kgo would retry that as an outage); stopGuard undoes
	// its report to FillSome.
	guard     *security.Guard
	stopGuard func() bool

	start map[int32]int64 // the log start offsets seen at open
	end   map[int32]int64 // StopAtEnd: the end offsets seen at open

	mu        sync.Mutex
	parts     []*part
	heap      []int32 // partitions with buffered tuples, by head (time, partition)
	waiting   int     // assigned partitions neither ended nor idle with nothing buffered
	assigned  bool    // whether partitions were ever assigned
	pos       uint64
	touched   []int32 // partitions to push a mark for
	pauseReq  []int32
	resumeReq []int32
	wake      context.CancelFunc // ends the poll in progress, if any
	// rebalances counts assignment changes, so that a poll about to start
	// sees one that came after FillSome looked.
	rebalances uint64
	stats      Stats
	malformed  int64 // binary values of the wrong size, empty values
	// preMalformed counts the malformed lines of the records fetchers
	// decoded and FillSome took.
	preMalformed int64
	err          error // sticky FillSome error
	// cur is the partition whose record the decoder is decoding (for
	// Strings); strParts lists the partitions with string memory mapped.
	cur      *part
	strParts []int32
	closed   bool // Close has unmapped the string memory

	commitMu  sync.Mutex // serialises commits (the committer, revokes, Close)
	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// Open connects to the brokers, checks the topic and starts consuming.
func Open(ctx context.Context, cfg Config) (*Source, error) {
	s, err := newSource(cfg)
	if err != nil {
		return nil, err
	}
	where := fmt.Sprintf("kafka source %s (brokers %s)", cfg.Topic, strings.Join(cfg.Brokers, ","))
	secure, err := cfg.Security.Opts()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	secure = append(secure, s.guard.Opt())
	s.meta, err = kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(cfg.Brokers...), kgo.WithHooks(retry.BrokerHook{O: s.outage})}, secure...)...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	fail := func(err error) (*Source, error) {
		s.meta.Close()
		return nil, err
	}
	s.adm = kadm.NewClient(s.meta)
	octx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	// Refused credentials or certificates end what Open waits for.
	octx, unbind := s.guard.Bind(octx)
	defer unbind()
	if cfg.Security.Secured() {
		if err := s.guard.Ping(octx, s.meta); security.IsFailure(err) {
			return fail(fmt.Errorf("%s: %w", where, err))
		} // else the brokers answered, or are down: ListTopics waits for them
	}
	tds, err := s.adm.ListTopics(octx, cfg.Topic)
	if err != nil {
		if !cfg.Security.Secured() {
			// A plaintext source at a TLS port, or at a broker that
			// requires SASL: the ping says so.
			if perr := s.guard.Ping(octx, s.meta); security.IsFailure(perr) {
				return fail(fmt.Errorf("%s: %w", where, perr))
			}
		}
		return fail(fmt.Errorf("%s: metadata: %w", where, s.guard.Err(err)))
	}
	td, ok := tds[cfg.Topic]
	if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		// A broker that creates topics on first use creates it now.
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(cfg.Topic)
		req.Topics = append(req.Topics, rt)
		req.AllowAutoTopicCreation = true
		if _, err := req.RequestWith(octx, s.meta); err == nil {
			if td, ok, err = WaitTopic(octx, s.meta, s.adm, cfg.Topic); err == nil && ok && td.Err == nil {
				s.logf("%s: topic created by the broker (auto-creation), %d partitions", where, len(td.Partitions))
			}
		}
	}
	if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		return fail(fmt.Errorf("%s: topic %q does not exist (create it first, or produce to a broker that creates topics)", where, cfg.Topic))
	}
	if td.Err != nil {
		return fail(fmt.Errorf("%s: metadata: %w", where, s.guard.Err(td.Err)))
	}
	all := td.Partitions.Numbers()
	if len(all) == 0 {
		return fail(fmt.Errorf("%s: topic has no partitions", where))
	}
	want := all
	if cfg.Partitions != nil {
		for _, p := range cfg.Partitions {
			if _, ok := td.Partitions[p]; !ok {
				return fail(fmt.Errorf("%s: no partition %d (the topic has %d)", where, p, len(all)))
			}
		}
		want = cfg.Partitions
	}
	if cfg.Instances > 1 {
		var share []int32
		for _, p := range want {
			if int(p)%cfg.Instances == cfg.Instance {
				share = append(share, p)
			}
		}
		if len(share) == 0 {
			return fail(fmt.Errorf("%s: instance %d of %d has no partition (the topic has %d)", where, cfg.Instance, cfg.Instances, len(all)))
		}
		want = share
	}
	s.static = cfg.Partitions != nil || cfg.Instances > 1 || cfg.Resume != nil ||
		cfg.Group != "" && cfg.Committed == IgnoreCommitted
	for p := range cfg.Resume {
		if !slices.Contains(want, p) {
			// A checkpoint of other partitions (another --instances):
			// its state is not this source's.
			return fail(fmt.Errorf("%s: resume of partition %d, which this source does not read (it reads %v)", where, p, want))
		}
	}
	starts, err := s.adm.ListStartOffsets(octx, cfg.Topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return fail(fmt.Errorf("%s: list start offsets: %w", where, s.guard.Err(err)))
	}
	s.start = map[int32]int64{}
	starts.Each(func(o kadm.ListedOffset) { s.start[o.Partition] = o.Offset })
	listEnds := s.adm.ListCommittedOffsets
	if cfg.ReadUncommitted {
		listEnds = s.adm.ListEndOffsets
	}
	ends, err := listEnds(octx, cfg.Topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return fail(fmt.Errorf("%s: list end offsets: %w", where, s.guard.Err(err)))
	}
	s.end = map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { s.end[o.Partition] = o.Offset })

	opts := []kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.WithHooks(retry.BrokerHook{O: s.outage}),
		kgo.FetchMaxBytes(8 << 20),
		kgo.FetchMaxPartitionBytes(1 << 20),
		kgo.FetchMaxWait(500 * time.Millisecond),
		// Transactions' markers take offsets: StopAtEnd reads up to the
		// end offset, which counts the last one.
		kgo.KeepControlRecords(),
		// The clients take the records' and decompressed batches' memory
		// from pools, and the source gives it back record by record once
		// FillSome has taken them (Record.Recycle, see recycleRecords):
		// the client's goroutine per broker, which parses each fetch
		// before it fetches again, then neither allocates nor zeroes it.
		kgo.WithPools(s.pools),
	}
	if !cfg.ReadUncommitted {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	opts = append(opts, secure...)
	if cfg.fetchPartitionBytes > 0 {
		opts = append(opts, kgo.FetchMaxPartitionBytes(cfg.fetchPartitionBytes), kgo.FetchMaxBytes(cfg.fetchPartitionBytes))
	}
	if cfg.fetchMaxWait > 0 {
		opts = append(opts, kgo.FetchMaxWait(cfg.fetchMaxWait))
	}
	if cfg.metadataAge > 0 {
		opts = append(opts, kgo.MetadataMinAge(cfg.metadataAge), kgo.MetadataMaxAge(cfg.metadataAge))
	}
	reset := kgo.NewOffset().AtStart()
	if cfg.Start == Latest {
		reset = kgo.NewOffset().AtEnd()
	}
	// An offset found out of range while reading (retention deleted
	// what a slow reader had not read) goes to Start, as Kafka's
	// auto.offset.reset.
	opts = append(opts, kgo.ConsumeResetOffset(reset))
	if cfg.Group != "" && !s.static {
		s.member = true
	}
	if s.member {
		opts = append(opts,
			kgo.ConsumerGroup(cfg.Group),
			kgo.ConsumeTopics(cfg.Topic),
			kgo.Balancers(kgo.CooperativeStickyBalancer()),
			kgo.DisableAutoCommit(),
			kgo.OnPartitionsAssigned(s.onAssigned),
			kgo.OnPartitionsRevoked(s.onRevoked),
			kgo.OnPartitionsLost(s.onLost),
			kgo.AdjustFetchOffsetsFn(s.adjustOffsets),
		)
	}
	var committed kadm.OffsetResponses
	if cfg.Group != "" && (!s.member && cfg.Committed != IgnoreCommitted || cfg.Committed == RequireCommitted) {
		if committed, err = s.adm.FetchOffsets(octx, cfg.Group); errors.Is(err, kerr.GroupIDNotFound) {
			committed, err = nil, nil // nothing committed yet
		}
		if err != nil {
			return fail(fmt.Errorf("%s: fetch offsets of group %s: %w", where, cfg.Group, s.guard.Err(err)))
		}
	}
	if cfg.Committed == RequireCommitted {
		var none []int32
		for _, p := range want {
			if _, ok := cfg.Resume[p]; ok {
				continue
			}
			if c, ok := committed.Lookup(cfg.Topic, p); !ok || c.Err != nil || c.At < 0 {
				none = append(none, p)
			}
		}
		if len(none) > 0 {
			what := "partition"
			if len(none) > 1 {
				what = "partitions"
			}
			return fail(fmt.Errorf("%s: group %s has no committed offset for %s %s, and where to begin without one is not given (Flink's scan.startup.mode 'group-offsets' reads properties.auto.offset.reset: 'earliest' or 'latest')", where, cfg.Group, what, joinInts(none)))
		}
	}
	if !s.member {
		offs := map[int32]kgo.Offset{}
		next := map[int32]int64{}
		var hwm map[int32]int64   // the partitions' high watermarks, where needed
		moved := map[int32]bool{} // the partitions whose position inRange moved
		for _, p := range want {
			o, n := reset, int64(-1)
			if cfg.Start == Latest {
				n = s.end[p]
			} else {
				n = s.start[p]
			}
			if n >= 0 {
				// Read from the offset listed here, the one the source
				// records (a checkpoint's position before any record),
				// not from where kgo finds the end a moment later.
				o = kgo.NewOffset().At(n)
			}
			if c, ok := committed.Lookup(cfg.Topic, p); ok && c.Err == nil && c.At >= 0 {
				o, n = kgo.NewOffset().At(c.At), c.At
			}
			from := "committed offset"
			if r, ok := cfg.Resume[p]; ok {
				o, n, from = kgo.NewOffset().At(r.Offset), r.Offset, "checkpoint's offset"
			}
			if e, listed := s.end[p]; listed && n > e && !cfg.ReadUncommitted && hwm == nil {
				// s.end is the last stable offset; a position past it may
				// still be in the log (another transaction open).
				l, err := s.adm.ListEndOffsets(octx, cfg.Topic)
				if err == nil {
					err = l.Error()
				}
				if err != nil {
					return fail(fmt.Errorf("%s: list end offsets: %w", where, s.guard.Err(err)))
				}
				hwm = map[int32]int64{}
				l.Each(func(o kadm.ListedOffset) { hwm[o.Partition] = o.Offset })
			}
			end, ok := hwm[p]
			if !ok {
				end = s.end[p]
			}
			if placed, at := s.inRange(p, n, end, from); at != n {
				// Moved: a resume's skip of the record at n is not the
				// record now at n (the topic made again) nor any other.
				o, n = placed, at
				moved[p] = true
			}
			offs[p] = o
			next[p] = n
		}
		if err := s.openFetchers(opts, offs, want); err != nil {
			return fail(fmt.Errorf("%s: %w", where, err))
		}
		s.mu.Lock()
		for _, p := range want {
			s.assign(p, next[p])
			if r, ok := cfg.Resume[p]; ok && !moved[p] {
				s.parts[p].resumeAt(r)
			}
		}
		s.mu.Unlock()
	}
	if s.member {
		if s.cl, err = kgo.NewClient(opts...); err != nil {
			return fail(fmt.Errorf("%s: %w", where, err))
		}
	}
	s.applyPauses(s.cl)
	// Refused once open (the brokers restarted with other credentials):
	// FillSome's next call fails with it, the poll it waits in woken.
	s.stopGuard = s.guard.OnFailure(func(err error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.err == nil {
			s.err = fmt.Errorf("kafka source %s: %w", cfg.Topic, err)
		}
		s.wakePoll()
	})
	if cfg.Group != "" {
		s.wg.Add(1)
		go s.committer()
	}
	return s, nil
}

// newSource checks cfg and sets up what does not need the brokers.
func newSource(cfg Config) (*Source, error) {
	if len(cfg.Brokers) == 0 {
		return nil, errors.New("kafka source: no brokers")
	}
	if cfg.Topic == "" {
		return nil, fmt.Errorf("kafka source (brokers %s): no topic", strings.Join(cfg.Brokers, ","))
	}
	s := &Source{cfg: cfg, dec: cfg.Decoder, pools: kgopool.New(), binary: cfg.Binary, timeOff: cfg.TimeOffset, stop: make(chan struct{}),
		outage: retry.NewOutage("kafka source "+cfg.Topic, cfg.Logger, 0), guard: security.NewGuard(cfg.Security, cfg.Brokers)}
	switch {
	case cfg.Binary && cfg.TupleSize > 0:
		s.ts = cfg.TupleSize
	case cfg.Decoder != nil:
		s.ts = cfg.Decoder.TupleSize()
	case cfg.Binary:
		return nil, fmt.Errorf("kafka source %s: binary needs TupleSize or a Decoder", cfg.Topic)
	default:
		return nil, fmt.Errorf("kafka source %s: no decoder", cfg.Topic)
	}
	if cfg.Binary && cfg.Decoder != nil && cfg.TupleSize > 0 && cfg.Decoder.TupleSize() != cfg.TupleSize {
		return nil, fmt.Errorf("kafka source %s: TupleSize %d is not the decoder's %d", cfg.Topic, cfg.TupleSize, cfg.Decoder.TupleSize())
	}
	if cfg.TimeOffset < 0 || cfg.TimeOffset+8 > s.ts {
		return nil, fmt.Errorf("kafka source %s: event time at offset %d does not fit a %d-byte tuple", cfg.Topic, cfg.TimeOffset, s.ts)
	}
	if cfg.Committed > RequireCommitted {
		return nil, fmt.Errorf("kafka source %s: Committed %d is not valid", cfg.Topic, cfg.Committed)
	}
	if cfg.Committed == RequireCommitted && cfg.Group == "" {
		return nil, fmt.Errorf("kafka source %s: RequireCommitted needs a Group (the committed offsets to begin at)", cfg.Topic)
	}
	if cfg.Instances < 0 || cfg.Instances > 1 && (cfg.Instance < 0 || cfg.Instance >= cfg.Instances) {
		return nil, fmt.Errorf("kafka source %s: instance %d of %d: want 0 <= instance < instances", cfg.Topic, cfg.Instance, cfg.Instances)
	}
	for p, r := range cfg.Resume {
		if r.Offset < 0 || r.Skip < 0 {
			return nil, fmt.Errorf("kafka source %s: resume partition %d at offset %d, skip %d: negative", cfg.Topic, p, r.Offset, r.Skip)
		}
	}
	s.skipBin = cfg.OnError == source.Skip
	s.idle = cfg.IdleTimeout
	if s.idle == 0 {
		s.idle = DefaultIdleTimeout
	}
	if s.cfg.CommitInterval <= 0 {
		s.cfg.CommitInterval = DefaultCommitInterval
	}
	// A poll takes every record the client has buffered (maxPoll 0): the
	// client sends its next fetch only once the last one is all taken, so
	// a fetch taken in parts held the next one back while its rest was
	// decoded.
	s.maxPoll = cfg.maxPoll
	s.bufCap = cfg.bufferTuples
	if s.bufCap <= 0 {
		s.bufCap = max(256, min(8192, (1<<20)/s.ts))
	}
	var err error
	if s.strSize, err = stringBytes(cfg.StringBytes); err != nil {
		return nil, fmt.Errorf("kafka source %s: %w", cfg.Topic, err)
	}
	return s, nil
}

// inRange is where partition p begins, given its offset n (from names
// where n came from), the log's start listed at open and its end: n
// itself where it lies in the log (the offset returned is then unset).
// Before the log's start (retention deleted those records), it begins at
// the start, the least lost, whatever Start says; past its end (the topic
// made again, or truncated), at Start. Either is logged: records are
// lost, or read again.
func (s *Source) inRange(p int32, n, end int64, from string) (kgo.Offset, int64) {
	start, listed := s.start[p]
	_, ended := s.end[p]
	switch {
	case n < 0 || start < 0 || !listed || !ended: // a partition made since the lists
		return kgo.Offset{}, n
	case n < start:
		s.logf("kafka source %s: partition %d: the %s %d is before the log's start %d (deleted by retention): %d records lost, reading from %d", s.cfg.Topic, p, from, n, start, start-n, start)
		return kgo.NewOffset().At(start), start
	case end >= 0 && n > end:
		at := start
		if s.cfg.Start == Latest {
			at = s.end[p]
		}
		s.logf("kafka source %s: partition %d: the %s %d is past the log's end %d (the topic made again, or truncated?): reading from %d (%s)", s.cfg.Topic, p, from, n, end, at, s.cfg.Start)
		return kgo.NewOffset().At(at), at
	}
	return kgo.Offset{}, n
}

// TupleSize is the size of the tuples FillSome writes.
func (s *Source) TupleSize() int { return s.ts }

func (s *Source) logf(format string, args ...any) {
	if s.cfg.Logger != nil {
		s.cfg.Logger(format, args...)
	}
}

// part returns partition id's state, creating it.
func (s *Source) part(id int32) *part {
	for int(id) >= len(s.parts) {
		s.parts = append(s.parts, nil)
	}
	if s.parts[id] == nil {
		s.parts[id] = &part{id: id, next: -1, high: -1, end: -1, wm: math.MinInt64, runMax: math.MinInt64, done: -1, committed: -1}
	}
	return s.parts[id]
}

// assign starts reading partition id from offset next (-1: unknown).
func (s *Source) assign(id int32, next int64) {
	p := s.part(id)
	p.reset()
	p.assigned = true
	p.next = next
	p.idle = false
	p.emptySince = time.Time{}
	if e, ok := s.end[id]; ok {
		p.end = e
	} else if s.cfg.StopAtEnd {
		// A partition made after the source opened: its end then was
		// its start, and its records come after it.
		p.end = 0
	}
	p.ended = s.cfg.StopAtEnd && next >= 0 && p.end >= 0 && next >= p.end
	if p.ended && !p.paused {
		p.paused = true
		s.pauseReq = append(s.pauseReq, id)
	}
	if !p.ended && p.paused {
		p.paused = false
		s.resumeReq = append(s.resumeReq, id)
	}
	s.assigned = true
	s.refresh(p)
}

// unassign drops partition id's buffered tuples and marks.
func (s *Source) unassign(id int32) {
	if int(id) >= len(s.parts) || s.parts[id] == nil {
		return
	}
	p := s.parts[id]
	if p.n > 0 {
		s.heapRemove(id)
	}
	p.reset()
	p.assigned = false
	s.refresh(p)
	if p.paused {
		p.paused = false
		s.resumeReq = append(s.resumeReq, id)
	}
}

// Stats returns the counters and each assigned partition's.
func (s *Source) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Position = s.pos
	st.Malformed = s.malformed
	if s.dec != nil && !s.binary {
		st.Malformed += s.dec.Malformed() + s.preMalformed
	}
	st.Partitions = nil
	for _, p := range s.parts {
		if p == nil || !p.assigned {
			continue
		}
		ps := PartitionStats{Partition: p.id, Next: p.next, High: p.high,
			Watermark: p.wm, Buffered: p.n, Committed: p.committed, Idle: p.idle}
		if p.strs != nil {
			ps.StringMemory, ps.Strings = p.strs.Size(), int(p.strW-p.strs.Freed())
		}
		st.Partitions = append(st.Partitions, ps)
	}
	return st
}

// Close commits what is done, leaves the group, closes the clients and
// unmaps the string memory (the strings of tuples FillSome returned are
// then invalid); FillSome then fails.
func (s *Source) Close() error {
	s.closeOnce.Do(func() {
		close(s.stop)
		s.mu.Lock() // after close(s.stop): no fetcher starts now (startFetchers)
		stop := s.stopFetchers
		s.mu.Unlock()
		if stop != nil {
			stop()
		}
		s.wg.Wait()
		if s.stopGuard != nil {
			s.stopGuard()
		}
		if s.cfg.Group != "" {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			s.closeErr = s.commit(ctx, nil)
			cancel()
			if s.closeErr != nil {
				s.logf("%v", s.closeErr)
			}
		}
		if s.cl != nil {
			s.cl.Close()
		}
		for _, f := range s.fetchers {
			f.cl.Close()
		}
		s.meta.Close()
		s.mu.Lock()
		s.closed = true
		if s.err == nil {
			// No tuple, and no view of memory now unmapped, after Close.
			s.err = fmt.Errorf("kafka source %s: %w", s.cfg.Topic, kgo.ErrClientClosed)
		}
		for _, id := range s.strParts {
			s.unmapStrings(s.parts[id])
		}
		s.strParts = nil
		s.mu.Unlock()
	})
	return s.closeErr
}

// joinInts is ids separated by commas.
func joinInts(ids []int32) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.Itoa(int(id))
	}
	return strings.Join(parts, ", ")
}
