// Package kafka reads a Kafka topic as a stream of the engine's tuples,
// through franz-go (kgo): each record's value is one record of the
// source's format (a line of JSON or CSV, decoded by a source.Decoder, or
// with Binary the tuple itself), and FillSome fills the engine's buffers
// with whole tuples. A value of several lines gives a tuple per line, all
// at the record's offset; an empty value is malformed; a byte order mark
// at a value's start is dropped.
//
// Only committed transactions' records are read (read_committed; Config.
// ReadUncommitted reads every record): a transactional producer's output,
// saber-hx's Kafka sink among them, exactly once. Transactions' markers
// take offsets without being records: they are read past, not decoded.
//
// # Stream order
//
// The engine's watermark is the largest event time it has seen, in
// stream order, so how records of different partitions interleave decides
// which tuples are late. The source makes that order depend only on each
// partition's records, not on fetch timing: per-partition sequences in
// offset order, merged by smallest head event time, ties by lowest
// offset, then lowest partition, no partition idle. Each partition keeps
// a small buffer of decoded tuples; the next tuple is the head with the
// smallest event time (ties: the head whose record has the lowest offset,
// so that a burst of one event time is taken from the partitions in turn
// and every partition's buffer drains; then the lowest partition
// number), taken only while every assigned
// partition that is not idle has a buffered head. This is Flink's rule
// that a stream's watermark is the minimum of its partitions' watermarks,
// in the form this engine needs.
//
// A partition is idle when the merge waits on it (nothing buffered) and no
// poll has brought it records for IdleTimeout (counted from its last
// records, or from when the merge first waited on it if it had none; the
// time between FillSome's calls, while the engine is busy with what it
// got, does not count), or with StopAtEnd when
// it has been read up to the end offset it had when the source opened. An
// idle partition does not hold the merge back; its next record ends its
// idleness (and may then be late). So the order is deterministic as long
// as no partition goes idle: always for a bounded run (StopAtEnd) over
// records already written.
//
// # Back-pressure
//
// A group member polls records only when the merge waits on a partition
// that has nothing buffered; a source that is not one has each fetcher
// (below) poll ahead, one poll handed to FillSome and one being decoded
// at most. kgo buffers at most one fetch per broker and client (bounded
// by FetchMaxBytes); a partition whose buffer of decoded tuples is full is
// paused (kgo drops what it has buffered of it and fetches it again from
// the first record not polled once resumed), so a slow engine makes the
// source stop fetching rather than buffer without bound. So is a
// partition whose string memory is full (see Strings).
//
// # Fetchers
//
// A source that is not a group member (no Group, or a static assignment)
// splits its partitions among Config.Fetchers consumer clients (one by
// default: see Fetchers for what more of them do to idle partitions),
// each polled by a goroutine of its own that, given Config.NewDecoder, also
// decodes the records it polled with a decoder of its own. kgo
// decompresses and parses fetched batches on one goroutine per broker and
// client, so fetching and decoding both grow with the fetchers, while
// FillSome only takes the decoded tuples into the partitions' buffers and
// merges them: it replays each record's decoding as its own decoder would
// have run it (the same tuples, malformed lines, errors and resume
// positions). A record with long strings is left to FillSome's decoder,
// for a partition's string memory is FillSome's to give. The fetchers
// start on the first FillSome, not at Open: decoding may write state (a
// dictionary of encoded columns) that a checkpoint restores in between. A
// group member keeps one client, polled by FillSome, within whose polls
// the group's callbacks run.
//
// kgo's goroutine per broker and client parses a fetch before it sends
// the next, so what it spends per record bounds each client. The clients
// take the records and the decompressed batches from pools
// (internal/kgopool) rather than the heap, and the source recycles each
// record once FillSome has taken it: a fetcher the records of a poll it
// reuses (off FillSome's merge), a group member's FillSome after each
// poll, and a record that waited for string memory once it is decoded
// or its partition is revoked. (A source that fails or closes leaves the
// records it still holds to the garbage collector.)
// No view of a record's value outlives its decoding (a decoder copies
// what it keeps).
//
// # Strings
//
// A VARCHAR column is a view (package strview) whose long strings
// (longer than strview.MaxInline) live outside the Go heap. A Decoder
// with String columns must take its Options.Strings from Source.Strings
// (a closure over the Source Open returns: the decoder is only called
// inside FillSome); the long strings of the tuples FillSome returns are
// valid until the next FillSome or Close, so the caller copies them (the
// engine's Stream.Write) before it calls FillSome again.
//
// Each partition has its own string memory, Config.StringBytes
// (DefaultStringBytes) mapped on its first long string: a ring
// (buffer.Ring) that the partition's records take from in offset order
// and that is freed in the same order as the merge produces the
// partition's tuples (each buffered tuple remembers where its strings
// end), at the start of the next FillSome. When it is full, the record
// being decoded (from the line that found it full) and the partition's
// records polled after it wait, the partition paused, until FillSome has
// produced its tuples; memory is thus bounded by StringBytes per
// partition, however slow the engine. A record whose long strings need
// more than StringBytes is an error naming it. A partition revoked,
// lost or reassigned drops its waiting records and its buffered tuples
// with their strings (freed at the next FillSome, the memory of a
// partition no longer assigned unmapped then); Close unmaps it all.
//
// # Commits
//
// Offsets are committed (to Group) at least once: never past a record
// whose tuple the engine has not finished with. The source counts the
// bytes of tuples it has produced (the stream position); the engine calls
// Done(pos, complete) when every tuple before stream byte pos has been
// merged and every window holding an event time before complete has been
// emitted (complete is math.MaxInt64 for a stateless query). A record is
// done when its tuple ends at or before pos and its event time is below
// complete, or when it was malformed and skipped. Per partition the source
// commits the offset after the longest prefix of done records, from a
// queue of marks (stream position, offset, largest event time so far)
// pushed at most once per FillSome call per partition, every
// CommitInterval on a goroutine of its own, when partitions are revoked
// and on Close. A revoked partition's buffered tuples are dropped: their
// offsets were not committed, so the new owner reads them again.
//
// # Checkpoints and scale-out
//
// Positions says, per partition, where the first tuple not yet produced
// lies (a record's offset, and how many tuples of a value of several
// lines were produced already); a source opened with them as
// Config.Resume produces exactly the rest of the stream, in the same
// merge order, so that an engine restored from a snapshot taken once it
// had merged everything FillSome returned goes on as if never stopped.
// Config.Instances and Instance split the partitions statically between
// processes (p mod Instances = Instance).
//
// Without a Group nothing is committed and Done only advances the
// statistics. With a Group and a static assignment (Partitions,
// Instances or Resume) the source reads those partitions directly (the static assignment of a scaled-out run) from the
// group's committed offsets and commits as a simple consumer (no group
// membership); with a Group alone it joins the group with the
// cooperative-sticky balancer.
//
// Config.Committed says what the group's committed offsets decide: by
// default (UseCommitted) a partition begins at its committed offset, at
// Start where there is none; IgnoreCommitted begins every partition at
// Start whatever was committed, reading them all directly (a static
// assignment, as Flink's scan.startup.mode 'earliest-offset' and
// 'latest-offset' do) and still committing to the group;
// RequireCommitted begins at the committed offsets and fails Open where
// a partition has none (Flink's 'group-offsets' without
// auto.offset.reset). Resume's positions win over every one of them: a
// run restored from a checkpoint goes on where its state stands. A
// position (resumed or committed) outside the log at open is logged:
// before the log's start (retention deleted those records), the
// partition begins at the start, the least lost, whatever Start says;
// past its end (the topic made again), at Start. An offset found out of
// range while reading goes to Start, as Kafka's auto.offset.reset.
//
// # Malformed records
//
// A value that does not decode follows the decoder's OnError (Binary:
// Config.OnError, for a value that is not TupleSize bytes): with Fail
// FillSome returns an error naming the topic, partition and offset (and
// every later call returns it again); with Skip the record is counted in
// Stats().Malformed and its offset commits with the records around it.
package kafka
