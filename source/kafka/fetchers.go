package kafka

// Fetchers: where the source is not a group member, its partitions are
// split among several consumer clients, each polled by a goroutine of
// its own that also decodes what it polled (predecode), so that the
// client's fetching (decompressing and parsing record batches, on the
// client's goroutine per broker) and the records' decoding both run on
// as many cores as there are fetchers, and FillSome's goroutine only
// copies decoded tuples into the partitions' buffers and merges them.
// A group member keeps one client polled by FillSome itself: the group's
// callbacks run within its polls.

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/saber-hx/saber-hx/source"
)

// fetcher is one consumer client of a source that is not a group
// member, and the goroutine (run) that polls it.
type fetcher struct {
	s   *Source
	cl  *kgo.Client
	ids []int32 // its partitions
	// dec decodes the polled records on the fetcher's goroutine (nil:
	// FillSome's goroutine decodes them, with Source.dec).
	dec source.Decoder
	// slot holds a token while a poll of the fetcher waits for FillSome
	// (in Source.polled): one at a time, so that a poll of FillSome
	// takes at most one of each fetcher. The fetcher polls its next one
	// meanwhile: a partition paused by FillSome may still get the
	// records of that poll, two polls' worth in all.
	slot chan struct{}
	// predecoded and fellBack count the records dec decoded and those
	// it left to FillSome (they need string memory, which is the
	// partition's and FillSome's to give).
	predecoded, fellBack int
}

// polled is what a poll of a fetcher gave: the records, and where its
// fetcher decoded them, their decoding.
type polled struct {
	from    *fetcher
	fetches kgo.Fetches
	// recs is, for each record in the order EachPartition and the
	// partitions' Records give them, where its decoding starts in calls
	// and tuples, and then one more entry where the last record's ends;
	// empty: nothing decoded.
	recs   []predecodedRecord
	calls  []decodeCall
	tuples []byte
	// kept are the records (their indices in the order of recs) that
	// take left in a partition's backlog: FillSome recycles them once
	// decoded (drain); recycleRecords the others.
	kept []int32
}

// predecodedRecord is where one record's decoding starts in
// polled.calls and polled.tuples.
type predecodedRecord struct {
	call, tuple int32
	malformed   int32 // the lines of it the decoder skipped as malformed
	// serial: the record needs string memory, or is a transaction's
	// marker (never decoded), and is left to FillSome's goroutine (it
	// has no calls).
	serial bool
}

// decodeCall is one Decoder.Decode call's result: tuples (0 or 1, the
// tuple the next in polled.tuples) and err (the record's decoding ends
// there).
type decodeCall struct {
	tuples int8
	err    error
}

// errPredecodeStrings is the fetchers' decoders' Strings: a record with
// long strings is left to FillSome's goroutine.
var errPredecodeStrings = errors.New("kafka source: strings are decoded by FillSome")

// run polls the fetcher's client and hands what it polled to FillSome
// (s.polled) until ctx is done (Close).
func (f *fetcher) run(ctx context.Context) {
	defer f.s.wg.Done()
	for {
		fs := f.cl.PollRecords(ctx, f.s.maxPoll)
		if ctx.Err() != nil {
			return
		}
		b := f.s.freePolled()
		b.from, b.fetches = f, fs
		if f.dec != nil {
			f.predecode(b)
		}
		select {
		case f.slot <- struct{}{}:
		case <-ctx.Done():
			return
		}
		select {
		case f.s.polled <- b:
		case <-ctx.Done():
			return
		}
	}
}

// predecode decodes b's records into b.calls and b.tuples as FillSome's
// decode would, call by call, so that FillSome replays them (decode).
func (f *fetcher) predecode(b *polled) {
	ts := f.s.ts
	dec := f.dec
	b.fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
		for _, r := range fp.Records {
			calls, tuples := len(b.calls), len(b.tuples)
			rec := predecodedRecord{call: int32(calls), tuple: int32(tuples / ts)}
			if r.Attrs.IsControl() {
				rec.serial = true // a transaction's marker: decode moves past it
				b.recs = append(b.recs, rec)
				continue
			}
			m0 := dec.Malformed()
			for val := valueText(r.Value); len(val) > 0; {
				n := len(b.tuples)
				b.tuples = growTuple(b.tuples, ts)
				t, c, err := dec.Decode(b.tuples[n:], val, true)
				if t == 0 || err != nil {
					b.tuples = b.tuples[:n]
				}
				if errors.Is(err, errPredecodeStrings) {
					rec.serial = true
					b.calls, b.tuples = b.calls[:calls], b.tuples[:tuples]
					break
				}
				b.calls = append(b.calls, decodeCall{tuples: int8(t), err: err})
				if err != nil || c == 0 {
					break
				}
				val = val[c:]
			}
			rec.malformed = int32(dec.Malformed() - m0)
			if rec.serial {
				f.fellBack++
			} else {
				f.predecoded++
			}
			b.recs = append(b.recs, rec)
		}
	})
	b.recs = append(b.recs, predecodedRecord{call: int32(len(b.calls)), tuple: int32(len(b.tuples) / ts)})
	if f.fellBack > 256 && f.fellBack > f.predecoded {
		// Most records have long strings: decoding them here only to
		// decode them again on FillSome's goroutine costs more than it
		// saves.
		f.dec = nil
	}
}

// growTuple extends tuples by one tuple of ts bytes.
func growTuple(tuples []byte, ts int) []byte {
	n := len(tuples)
	if n+ts > cap(tuples) {
		grown := make([]byte, n, max(n+ts, 2*cap(tuples), 64*ts))
		copy(grown, tuples)
		tuples = grown
	}
	return tuples[:n+ts]
}

// freePolled returns a polled to fill, one FillSome is done with where
// there is one: its records go back to their client's pools here, on
// the fetcher's goroutine rather than in FillSome's merge.
func (s *Source) freePolled() *polled {
	select {
	case b := <-s.free:
		b.recycleRecords()
		return b
	default:
		return &polled{}
	}
}

// recycle keeps b, taken, for a fetcher's next poll, which recycles its
// records.
func (s *Source) recycle(b *polled) {
	<-b.from.slot
	b.from = nil
	b.recs, b.calls, b.tuples = b.recs[:0], b.calls[:0], b.tuples[:0]
	select {
	case s.free <- b:
	default:
		b.recycleRecords()
	}
}

// recycleRecords gives b's records, taken, back to their client's pools
// (Record.Recycle), all but those kept for later; their values are not
// read again.
func (b *polled) recycleRecords() {
	i, k := int32(0), 0
	b.fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
		for _, r := range fp.Records {
			if k < len(b.kept) && b.kept[k] == i {
				k++
			} else {
				r.Recycle()
			}
			i++
		}
	})
	b.fetches, b.kept = nil, b.kept[:0]
}

// waitPolled waits for what the fetchers polled, and takes whatever
// more is there; false: pctx is done (or the source closed) first.
func (s *Source) waitPolled(pctx context.Context, into []*polled) ([]*polled, bool) {
	select {
	case b := <-s.polled:
		into = append(into, b)
	case <-pctx.Done():
		return into, false
	case <-s.stop:
		return into, false
	}
	for {
		select {
		case b := <-s.polled:
			into = append(into, b)
		default:
			return into, true
		}
	}
}

// replay pushes the tuples that a fetcher decoded from admitted record r
// of p (its i-th in b) as decode would have decoded them, and returns
// the tuples pushed.
func (s *Source) replay(p *part, r *kgo.Record, b *polled, i int) (got int, err error) {
	rec, end := b.recs[i], b.recs[i+1].call
	ts := s.ts
	tuple := int(rec.tuple) * ts
	s.preMalformed += int64(rec.malformed)
	for _, c := range b.calls[rec.call:end] {
		if c.err != nil {
			return got, recordError(s.cfg.Topic, p.id, r.Offset, c.err)
		}
		if c.tuples == 1 {
			copy(p.reserve(ts), b.tuples[tuple:tuple+ts])
			tuple += ts
			got = s.pushLine(p, r, got)
		}
	}
	if got == 0 && rec.malformed == 0 {
		s.malformed++ // an empty value
	}
	return got, nil
}

// own returns those of ids that are f's partitions.
func (f *fetcher) own(ids []int32) []int32 {
	var out []int32
	for _, id := range ids {
		if slices.Contains(f.ids, id) {
			out = append(out, id)
		}
	}
	return out
}

// openFetchers makes the clients of a source that is not a group
// member: Config.Fetchers of them (or the default), partition want[i]
// read by client i mod their count from offs, with opts.
func (s *Source) openFetchers(opts []kgo.Opt, offs map[int32]kgo.Offset, want []int32) error {
	n := min(max(s.cfg.Fetchers, 1), len(want))
	s.fetchers = make([]*fetcher, n)
	for i := range s.fetchers {
		s.fetchers[i] = &fetcher{s: s, slot: make(chan struct{}, 1)}
	}
	for i, id := range want {
		f := s.fetchers[i%n]
		f.ids = append(f.ids, id)
	}
	for i, f := range s.fetchers {
		mine := map[int32]kgo.Offset{}
		for _, id := range f.ids {
			mine[id] = offs[id]
		}
		cl, err := kgo.NewClient(append(slices.Clip(opts), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{s.cfg.Topic: mine}))...)
		if err == nil && s.cfg.NewDecoder != nil && !s.binary {
			if f.dec, err = s.cfg.NewDecoder(func(int) ([]byte, error) { return nil, errPredecodeStrings }); err != nil {
				cl.Close()
				err = fmt.Errorf("decoder of fetcher %d: %w", i, err)
			}
		}
		if err != nil {
			for _, f := range s.fetchers[:i] {
				f.cl.Close()
			}
			s.fetchers = nil
			return err
		}
		f.cl = cl
	}
	// A fetcher polls and decodes again while FillSome has not taken
	// what it polled: one poll handed on and one decoded per fetcher at
	// most.
	s.polled = make(chan *polled, n)
	s.free = make(chan *polled, 2*n)
	return nil
}

// startFetchers starts the fetchers' goroutines, on FillSome's first
// poll: not at Open, for decoding may write to state (a dictionary of
// the strings of encoded columns) that the source's reader restores
// from a checkpoint between Open and the first FillSome.
func (s *Source) startFetchers() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fetchers == nil || s.stopFetchers != nil {
		return
	}
	select {
	case <-s.stop:
		return // closed
	default:
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.stopFetchers = cancel
	s.wg.Add(len(s.fetchers))
	for _, f := range s.fetchers {
		go f.run(ctx)
	}
}
