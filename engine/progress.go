package engine

// Progress says how much of the stream's input is fully out: Merged is
// the stream bytes (from its first) whose tasks have been merged, their
// windows and tuples handed to the sink, and every window holding an event
// time below Complete has been emitted. A source that commits offsets (at
// least once, as the Kafka source does) commits a record once its tuple
// lies before Merged and its event time below Complete: the sink has
// received everything the record counts in. The sink may still buffer it:
// read Progress, then flush the sink, then commit.
//
// Complete is math.MaxInt64 for a stateless query (a merged tuple is
// out), the start of the oldest window not yet handed on for a window
// join's input, and math.MinInt64 where the stream cannot tell: a row
// window (positions are not event times). Of a stream whose output feeds
// other queries (a window join's too), they say what is out of those too
// (chainprogress.go).
type Progress struct {
	Merged   uint64
	Complete int64
}

// Progress reads the stream's progress from what the result stage
// publishes after each merge (it takes no lock the result stage holds: a
// lock here would break its hand-off, where a worker that finds the merge
// lock taken leaves its task to the holder). Merged and Complete are read
// apart, each true when read: both only grow, and each alone says what
// it says.
func (s *Stream) Progress() Progress {
	if len(s.downstream) > 0 {
		o := s.out()
		return Progress{Merged: o.bytes, Complete: o.complete}
	}
	return Progress{Merged: s.bytes.Load(), Complete: s.ownComplete()}
}
