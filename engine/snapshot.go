package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/strview"
)

// engineSnapshotVersion is the version of Snapshot's encoding. Version 1
// (queries fed by producers, range windows or stateless; no stream
// positions) is still restored, 3 where no query has string group keys
// (version 3 held their numbers in 8 bytes of a key, 4 on), and 4 where
// no query reads dictionary-encoded columns (Spec.DictColumns: in 5, the
// queries over one source number their strings in the source's one
// dictionary; in 4 each in its own, whose numbers the source's cannot
// take). Version 5 also holds a dictionary that queries share once
// (sharedDicts). Version 6 adds a stream's unmatched tuples (a lookup
// join's) to its counters: before it a restored stateless query counted
// them from the restore on only.
const engineSnapshotVersion = 6

// The kinds of query in a snapshot.
const (
	snapStateless   = 0
	snapAggregation = 1
	snapJoin        = 2
)

// Snapshot appends a snapshot of every query's state to dst, taken at a
// task boundary: once each stream's result stage has merged every task
// dispatched so far. What it holds, per query (in Spec order): its name,
// its kind, per input stream (a window join has two) its counters and its
// position (the stream bytes from its start: a row window's positions
// count on from it after a restore), and an aggregation's open panes,
// watermark and next window (window.Assembler.AppendSnapshot) or a
// join's open panes of both sides (kernels.WindowJoin.AppendSnapshot). A
// producer's tuples not yet in a task are not in it: the producer calls
// Snapshot from its goroutine after Stream.Flush of every stream it
// feeds, and records with it where its input stands (a Kafka source's
// offsets), so that a restore (Config.Restore) and a re-read from there
// give what the run without the interruption gives. (Engine.Restore)
//
// Snapshot waits for the tasks in flight (the workers merge them), and
// drains the chain in stream order, so that every output an upstream
// emitted is in its downstream's state: an upstream's tasks merged, the
// task its output left partly filled in its downstream's ring
// dispatched, that one merged, and so on; a join's closed windows joined
// and handed on. Windows still open stay open: only their state is
// saved, and the restored engine closes them as the run would have.
func (e *Engine) Snapshot(dst []byte) ([]byte, error) {
	for _, s := range e.streams {
		if s.upstream == "" && s.filled != 0 {
			return dst, fmt.Errorf("engine: snapshot of query %q with %d bytes committed and not dispatched: Flush first", s.specName(), s.filled)
		}
	}
	if err := e.drain(); err != nil {
		return dst, err
	}
	le := binary.LittleEndian
	dst = append(dst, engineSnapshotVersion)
	dst = le.AppendUint32(dst, uint32(len(e.entries)))
	var dicts sharedDicts
	for i, en := range e.entries {
		s := en.stream
		name := s.specName()
		dst = le.AppendUint16(dst, uint16(len(name)))
		dst = append(dst, name...)
		switch {
		case en.join != nil:
			dst = append(dst, snapJoin)
			dst = s.appendCounters(dst)
			dst = s.right.appendCounters(dst)
			js := en.join
			js.mu.Lock()
			var err error
			dst, err = js.op.AppendSnapshot(dst)
			js.mu.Unlock()
			if err != nil {
				return dst, fmt.Errorf("engine: snapshot: %w", err)
			}
		case s.asm != nil:
			dst = append(dst, snapAggregation)
			dst = s.appendCounters(dst)
			s.mergeMu.Lock()
			dst = s.asm.AppendSnapshot(dst)
			s.mergeMu.Unlock()
			dst = dicts.append(dst, i, s.plan.Strings())
		default:
			dst = append(dst, snapStateless)
			dst = s.appendCounters(dst)
		}
	}
	return dst, nil
}

// appendCounters appends the stream's counters and its position.
func (s *Stream) appendCounters(dst []byte) []byte {
	st := s.stats()
	for _, v := range []uint64{st.Tasks, st.Bytes, st.Tuples, st.Filtered, st.Counted, uint64(st.Watermark), s.taskStart, st.Unmatched} {
		dst = binary.LittleEndian.AppendUint64(dst, v)
	}
	return dst
}

// drain brings every stream to the task boundary Snapshot saves, in the
// streams' order (an upstream's before its downstreams'): a chained
// stream's partly filled task dispatched (under the lock its upstream
// pushes under, which is done pushing: its tasks are merged), its tasks
// merged, and once both of a join's inputs are, its closed windows joined
// and handed on. The producer runs tasks meanwhile where a chain or a
// join needs it (the workers run a join's windows only between tasks of
// their own, and none may come).
func (e *Engine) drain() error {
	for _, s := range e.streams {
		if s.feeder != nil {
			s.feeder.Lock()
			if s.filled > 0 {
				s.dispatch()
			}
			s.feeder.Unlock()
		}
		for s.next.Load() != s.nextID {
			if err := e.failed(); err != nil {
				return err
			}
			if s.feeder != nil || s.joinSide != nil {
				e.snapHelper().help()
			} else {
				time.Sleep(20 * time.Microsecond)
			}
		}
		if js := s.joinSide; js != nil && s.side == 1 {
			if err := js.drainAll(e.snapHelper()); err != nil {
				return err
			}
		}
	}
	return e.failed()
}

// snapHelper is the worker the producer runs tasks on while Snapshot
// drains the chain.
func (e *Engine) snapHelper() *worker {
	s := e.streams[0]
	if s.helper == nil {
		s.helper = e.newWorker(-1)
	}
	return s.helper
}

// drainAll joins every window the join closed and hands it on, once both
// inputs are merged up to a task boundary.
func (js *joinStage) drainAll(w *worker) error {
	for {
		if err := js.process(w); err != nil {
			return err
		}
		js.mu.Lock()
		pending := js.op.Pending()
		js.mu.Unlock()
		if pending == 0 {
			break
		}
		if err := js.e.failed(); err != nil {
			return err
		}
		w.help()
	}
	// The goroutine that took the last window off the queue hands it on
	// under drainMu: wait for it.
	js.drainMu.Lock()
	js.drainMu.Unlock() //nolint:staticcheck // an empty section: the wait is the point
	return nil
}

// Restored is where a query stood in the snapshot an engine was restored
// from (Engine.Restore).
type Restored struct {
	Query string
	// Tasks and Bytes are the tasks and stream bytes merged before the
	// snapshot; the restored engine's Stats count its own from zero (its
	// Progress is that of its own input), and its tuple, window and row
	// counters go on from the snapshot's.
	Tasks, Bytes uint64
}

// Restore sets every query's state to a snapshot of Snapshot, taken of an
// engine of the same queries (names, kinds, windows, aggregates and tuple
// sizes are checked), and returns where each query stood in it. Call it
// after Start and before the first tuple, from the producer's goroutine;
// a bad snapshot is an ErrConfig and leaves the queries as Start made
// them. A row window's stream goes on from the snapshot's position: its
// next tuple is the one after the snapshot's last (and a fill function,
// Stream.SetFill, is asked for the bytes from that position on).
func (e *Engine) Restore(b []byte) (r []Restored, err error) {
	for _, s := range e.streams {
		if s.nextID != 0 || s.filled != 0 {
			return nil, fmt.Errorf("engine: restore after query %q took input", s.specName())
		}
	}
	defer func() {
		if err != nil {
			e.clearRestore()
			err = asConfigError(fmt.Errorf("engine: restore: %w", err))
		}
	}()
	le := binary.LittleEndian
	take := func(n int) []byte {
		if err != nil || len(b) < n {
			if err == nil {
				err = errors.New("snapshot truncated")
			}
			return nil
		}
		v := b[:n]
		b = b[n:]
		return v
	}
	u64 := func() uint64 {
		if w := take(8); w != nil {
			return le.Uint64(w)
		}
		return 0
	}
	var version byte
	if v := take(1); v != nil {
		version = v[0]
		if version == 3 && e.stringKeys() {
			return nil, fmt.Errorf("snapshot version 3 holds string group keys in 8 bytes, this saber-hx in %d: start without this checkpoint", query.StringKeyWidth)
		}
		if version == 4 && e.dictColumns() {
			return nil, errors.New("snapshot version 4 numbers each query's string group keys in a dictionary of its own, this saber-hx a source's grouped VARCHAR columns in one dictionary that its queries share: start without this checkpoint")
		}
		if version != 1 && version != 3 && version != 4 && version != 5 && version != engineSnapshotVersion {
			return nil, fmt.Errorf("snapshot version %d, want 1, 3, 4, 5 or %d", v[0], engineSnapshotVersion)
		}
	}
	n := take(4)
	if err != nil {
		return nil, err
	}
	if got := int(le.Uint32(n)); got != len(e.entries) {
		return nil, fmt.Errorf("snapshot of %d queries, the engine has %d", got, len(e.entries))
	}
	// counters reads a stream's counters (and, from version 2 on, its
	// position).
	counters := func() (v [8]uint64) {
		for j := range 6 {
			v[j] = u64()
		}
		if version > 1 {
			v[6] = u64()
		}
		if version > 5 {
			v[7] = u64()
		}
		return v
	}
	restored := make([]Restored, len(e.entries))
	saved := map[*Stream][8]uint64{}
	var dicts sharedDicts
	for i, en := range e.entries {
		s := en.stream
		name := s.specName()
		var got string
		if l := take(2); l != nil {
			got = string(take(int(le.Uint16(l))))
		}
		var kind byte
		var v [8]uint64
		if version == 1 {
			v = counters()
		}
		if k := take(1); k != nil {
			kind = k[0]
		}
		if err != nil {
			return nil, err
		}
		if got != name {
			return nil, fmt.Errorf("snapshot's query %d is %q, the engine's %q", i, got, name)
		}
		want := byte(snapStateless)
		switch {
		case en.join != nil:
			want = snapJoin
		case s.asm != nil:
			want = snapAggregation
		}
		if kind != want {
			return nil, fmt.Errorf("query %q: snapshot of a query of kind %d, not %d (0 stateless, 1 aggregation, 2 window join)", name, kind, want)
		}
		if version > 1 {
			v = counters()
		}
		saved[s] = v
		restored[i] = Restored{Query: name, Tasks: v[0], Bytes: v[1]}
		if en.join != nil {
			rv := counters()
			saved[s.right] = rv
			restored[i].Tasks += rv[0]
			restored[i].Bytes += rv[1]
		}
		if err != nil {
			return nil, err
		}
		switch {
		case en.join != nil:
			js := en.join
			js.mu.Lock()
			b, err = js.op.RestoreSnapshot(b)
			js.noteFiled()
			js.mu.Unlock()
		case s.asm != nil:
			s.mergeMu.Lock()
			b, err = s.asm.RestoreSnapshot(b)
			s.mergeMu.Unlock()
			if err == nil && version >= 3 {
				b, err = dicts.restore(b, i, s.plan.Strings())
			}
		}
		if err != nil {
			return nil, fmt.Errorf("query %q: %w", name, err)
		}
	}
	if len(b) > 0 {
		return nil, fmt.Errorf("%d bytes after the snapshot", len(b))
	}
	for s, v := range saved {
		if !s.countsRows() {
			continue
		}
		if version == 1 {
			return nil, fmt.Errorf("query %q: a row window in a snapshot of version 1, which has no stream positions", s.specName())
		}
		// A row window's watermark is its last tuple's index: the
		// position must be the one after it.
		next := uint64(0)
		if wm := s.asm.Watermark(); wm != math.MinInt64 {
			if wm < 0 {
				return nil, fmt.Errorf("query %q: a row window's watermark %d", s.specName(), wm)
			}
			next = uint64(wm) + 1
		}
		if ts := uint64(s.plan.TupleSize); v[6]%ts != 0 || v[6]/ts != next {
			return nil, fmt.Errorf("query %q: stream position %d, not that of tuple %d, the one after the row window's last", s.specName(), v[6], next)
		}
	}
	for _, s := range e.streams {
		v := saved[s]
		if s.countsRows() {
			if err := s.skipTo(v[6]); err != nil {
				return nil, fmt.Errorf("query %q: %w", s.specName(), err)
			}
		}
		s.mergeMu.Lock()
		// The counters carried over, set before they are published
		// (RestoredStats).
		r := Stats{Tuples: v[2], Filtered: v[3], Counted: v[4], Unmatched: v[7], Rows: v[4]} // a stateless query's rows are its counted tuples
		if s.asm != nil {
			c := s.asm.Counts()
			r = Stats{Tuples: c.Tuples, Filtered: c.Filtered, Unmatched: c.Unmatched, Late: c.Late, Counted: c.Counted, Windows: c.Windows, Rows: c.Rows}
		}
		s.restored.Store(&r)
		if s.asm == nil {
			s.seq.Add(1)
			s.tuples.Store(v[2])
			s.filtered.Store(v[3])
			s.counted.Store(v[4])
			s.rows.Store(v[4])
			s.unmatched.Store(v[7])
			s.watermark.Store(int64(v[5]))
			s.seq.Add(1)
		}
		s.publish(nil, nil)
		s.mergeMu.Unlock()
	}
	return restored, nil
}

// countsRows says whether the stream's positions are its tuples' indexes
// from its start: an aggregation over a row window. (A join's row
// windows count in its operator, whose snapshot holds them.)
func (s *Stream) countsRows() bool {
	return s.asm != nil && s.plan.Query.Window.Type == query.Rows
}

// skipTo moves a stream that took no input on to stream position pos, so
// that its next task starts there: the ring's positions are the stream's,
// and a row window's kernel reads its tuples' indexes from them. The ring
// skips the bytes before pos without touching them (buffer.Ring.Skip), so
// the cost does not grow with the position.
func (s *Stream) skipTo(pos uint64) error {
	if pos <= s.taskStart {
		return nil
	}
	if err := s.ring.Skip(pos); err != nil {
		return err
	}
	s.taskStart = pos
	return nil
}

// clearRestore undoes a restore that failed part way: every assembler
// and join empty again.
func (e *Engine) clearRestore() {
	for _, en := range e.entries {
		if js := en.join; js != nil {
			js.mu.Lock()
			_, _ = js.op.RestoreSnapshot(nil) // refused: leaves it empty
			js.noteFiled()
			js.mu.Unlock()
		}
		if s := en.stream; s.asm != nil {
			s.mergeMu.Lock()
			_, _ = s.asm.RestoreSnapshot(nil) // refused: leaves it empty
			s.mergeMu.Unlock()
		}
	}
}

// sharedDicts are the dictionaries of string keys a snapshot holds, by
// the query whose entry holds them: queries over one source's
// dictionary-encoded columns share one (Spec.DictColumns), which a
// snapshot holds once. A later query's entry refers to the earlier one
// (sameStrings, then its index) where the dictionary has not grown since
// (a decoding pool may number strings while the snapshot is taken: then
// the later entry holds the longer list, of which the earlier is a
// prefix, as Dict.Restore takes it).
type sharedDicts struct {
	at  map[*strview.Dict][2]int // the entry that holds it, and its length there
	got map[int][][]byte         // restore: the strings of an entry
}

// sameStrings, in place of a count of strings, says that the strings of
// another entry's (its index follows) are this one's.
const sameStrings = math.MaxUint32

// append appends the strings of entry i's string keys (d; nil: none), in
// number order, that its groups' states refer to: a count, then each
// one's length and bytes; or sameStrings and the entry that holds them.
func (sd *sharedDicts) append(dst []byte, i int, d *strview.Dict) []byte {
	le := binary.LittleEndian
	if d != nil {
		if w, ok := sd.at[d]; ok && w[1] == d.Len() {
			dst = le.AppendUint32(dst, sameStrings)
			return le.AppendUint32(dst, uint32(w[0]))
		}
	}
	var strs [][]byte
	if d != nil {
		strs = d.AppendAll(nil)
		if sd.at == nil {
			sd.at = map[*strview.Dict][2]int{}
		}
		sd.at[d] = [2]int{i, len(strs)}
	}
	dst = le.AppendUint32(dst, uint32(len(strs)))
	for _, s := range strs {
		dst = le.AppendUint32(dst, uint32(len(s)))
		dst = append(dst, s...)
	}
	return dst
}

// restore reads append's strings of entry i into d.
func (sd *sharedDicts) restore(b []byte, i int, d *strview.Dict) ([]byte, error) {
	le := binary.LittleEndian
	if len(b) < 4 {
		return nil, errors.New("snapshot truncated: the strings of the keys are cut short")
	}
	n := int(le.Uint32(b))
	b = b[4:]
	if n == sameStrings {
		if len(b) < 4 {
			return nil, errors.New("snapshot truncated: the strings of the keys are cut short")
		}
		j := int(le.Uint32(b))
		strs, ok := sd.got[j]
		if !ok || j >= i {
			return nil, fmt.Errorf("snapshot: the strings of the keys are those of entry %d, which holds none", j)
		}
		return b[4:], restoreDict(d, strs)
	}
	if n > 0 && d == nil {
		return nil, fmt.Errorf("snapshot: %d strings of keys for a query without string keys", n)
	}
	if n > len(b)/4 {
		return nil, fmt.Errorf("snapshot: %d strings of keys in %d bytes", n, len(b))
	}
	strs := make([][]byte, n)
	for k := range strs {
		if len(b) < 4 || uint64(len(b)-4) < uint64(le.Uint32(b)) {
			return nil, fmt.Errorf("snapshot truncated: string %d of the keys is cut short", k)
		}
		l := int(le.Uint32(b))
		strs[k], b = b[4:4+l], b[4+l:]
	}
	if sd.got == nil {
		sd.got = map[int][][]byte{}
	}
	sd.got[i] = strs
	return b, restoreDict(d, strs)
}

// restoreDict makes d (nil: none) hold strs. A dictionary that holds
// strings already is shared (a source's, restored by another query over
// the source): the snapshot must agree with them.
func restoreDict(d *strview.Dict, strs [][]byte) error {
	if d == nil {
		if len(strs) > 0 {
			return fmt.Errorf("snapshot: %d strings of keys for a query without string keys", len(strs))
		}
		return nil
	}
	if err := d.Restore(strs); err != nil {
		return fmt.Errorf("snapshot: the strings of the keys: %w", err)
	}
	return nil
}

// dictColumns reports whether a query of the engine reads
// dictionary-encoded columns (Spec.DictColumns).
func (e *Engine) dictColumns() bool {
	for _, en := range e.entries {
		if en.stream != nil && en.stream.spec.DictColumns != nil {
			return true
		}
	}
	return false
}

// stringKeys reports whether a query of the engine has string group keys.
func (e *Engine) stringKeys() bool {
	for _, en := range e.entries {
		if en.stream != nil && en.stream.plan.StringKeys() {
			return true
		}
	}
	return false
}
