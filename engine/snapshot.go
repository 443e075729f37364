package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/saber-hx/saber-hx/query"
)

// engineSnapshotVersion is the version of Snapshot's encoding.
const engineSnapshotVersion = 1

// Snapshot appends a snapshot of every query's state to dst, taken at a
// task boundary: once each stream's result stage has merged every task
// dispatched so far. What it holds, per query (in Spec order): its name,
// the stream bytes merged (the position its producer had reached), its
// counters, and an aggregation's open panes, watermark and next window
// (window.Assembler.AppendSnapshot). A producer's tuples not yet in a
// task are not in it: the producer calls Snapshot from its goroutine
// after Stream.Flush of every stream it feeds, and records with it where
// its input stands (a Kafka source's offsets), so that a restore
// (Config.Restore) and a re-read from there give what the run without the
// interruption gives. (Engine.Restore)
//
// Snapshot waits for the tasks in flight (the workers merge them). It
// supports queries fed by a producer over range windows, or stateless;
// a window join, a chained query, or a row window (whose positions count
// from the start of the stream) is an ErrConfig.
func (e *Engine) Snapshot(dst []byte) ([]byte, error) {
	for _, en := range e.entries {
		if err := en.stream.snapshotable(en.join != nil); err != nil {
			return dst, err
		}
		if en.stream.filled != 0 {
			return dst, fmt.Errorf("engine: snapshot of query %q with %d bytes committed and not dispatched: Flush first", en.stream.win.Query, en.stream.filled)
		}
	}
	for _, en := range e.entries {
		s := en.stream
		for s.next.Load() != s.nextID {
			if err := e.failed(); err != nil {
				return dst, err
			}
			time.Sleep(20 * time.Microsecond)
		}
	}
	le := binary.LittleEndian
	dst = append(dst, engineSnapshotVersion)
	dst = le.AppendUint32(dst, uint32(len(e.entries)))
	for _, en := range e.entries {
		s := en.stream
		s.mergeMu.Lock()
		dst = le.AppendUint16(dst, uint16(len(s.win.Query)))
		dst = append(dst, s.win.Query...)
		st := s.stats()
		for _, v := range []uint64{st.Tasks, st.Bytes, st.Tuples, st.Filtered, st.Counted, uint64(st.Watermark)} {
			dst = le.AppendUint64(dst, v)
		}
		if s.asm == nil {
			dst = append(dst, 0)
		} else {
			dst = append(dst, 1)
			dst = s.asm.AppendSnapshot(dst)
		}
		s.mergeMu.Unlock()
	}
	return dst, nil
}

// snapshotable says whether Snapshot and Restore support the stream.
func (s *Stream) snapshotable(join bool) error {
	switch {
	case join || s.joinSide != nil:
		return asConfigError(fmt.Errorf("engine: query %q: a window join cannot be checkpointed yet", s.specName()))
	case s.upstream != "" || len(s.downstream) > 0:
		return asConfigError(fmt.Errorf("engine: query %q: a chained query cannot be checkpointed yet", s.win.Query))
	case s.asm != nil && s.plan.Query.Window.Type == query.Rows:
		return asConfigError(fmt.Errorf("engine: query %q: a row window cannot be checkpointed (its positions count from the stream's start)", s.win.Query))
	}
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
// engine of the same queries (names, windows and aggregates are checked),
// and returns where each query stood in it. Call it after Start and
// before the first tuple, from the producer's goroutine; a bad snapshot
// is an ErrConfig and leaves the queries as Start made them.
func (e *Engine) Restore(b []byte) (r []Restored, err error) {
	for _, en := range e.entries {
		if s := en.stream; s.nextID != 0 || s.filled != 0 {
			return nil, fmt.Errorf("engine: restore after query %q took input", s.win.Query)
		}
	}
	defer func() {
		if err != nil {
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
	if v := take(1); v != nil && v[0] != engineSnapshotVersion {
		return nil, fmt.Errorf("snapshot version %d, want %d", v[0], engineSnapshotVersion)
	}
	n := take(4)
	if err != nil {
		return nil, err
	}
	if got := int(le.Uint32(n)); got != len(e.entries) {
		return nil, fmt.Errorf("snapshot of %d queries, the engine has %d", got, len(e.entries))
	}
	restored := make([]Restored, len(e.entries))
	stateless := map[*Stream][6]uint64{}
	for i, en := range e.entries {
		s := en.stream
		if err := s.snapshotable(en.join != nil); err != nil {
			return nil, err
		}
		var name string
		if l := take(2); l != nil {
			name = string(take(int(le.Uint16(l))))
		}
		var v [6]uint64
		for j := range v {
			if w := take(8); w != nil {
				v[j] = le.Uint64(w)
			}
		}
		kind := take(1)
		if err != nil {
			return nil, err
		}
		if name != s.win.Query {
			return nil, fmt.Errorf("snapshot's query %d is %q, the engine's %q", i, name, s.win.Query)
		}
		if (kind[0] == 1) != (s.asm != nil) || kind[0] > 1 {
			return nil, fmt.Errorf("query %q: snapshot of another kind of query (aggregation %v)", name, kind[0] == 1)
		}
		restored[i] = Restored{Query: name, Tasks: v[0], Bytes: v[1]}
		if s.asm != nil {
			s.mergeMu.Lock()
			b, err = s.asm.RestoreSnapshot(b)
			s.mergeMu.Unlock()
			if err != nil {
				e.clearRestore()
				return nil, fmt.Errorf("query %q: %w", name, err)
			}
			continue
		}
		stateless[s] = v
	}
	if len(b) > 0 {
		e.clearRestore()
		return nil, fmt.Errorf("%d bytes after the snapshot", len(b))
	}
	for _, en := range e.entries {
		s := en.stream
		s.mergeMu.Lock()
		if v, ok := stateless[s]; ok {
			s.seq.Add(1)
			s.tuples.Store(v[2])
			s.filtered.Store(v[3])
			s.counted.Store(v[4])
			s.watermark.Store(int64(v[5]))
			s.seq.Add(1)
		}
		s.publish(nil, nil)
		s.mergeMu.Unlock()
	}
	return restored, nil
}

// clearRestore undoes a restore that failed part way: every assembler
// empty again.
func (e *Engine) clearRestore() {
	for _, en := range e.entries {
		if s := en.stream; s.asm != nil {
			s.mergeMu.Lock()
			_, _ = s.asm.RestoreSnapshot(nil) // refused: leaves it empty
			s.mergeMu.Unlock()
		}
	}
}
