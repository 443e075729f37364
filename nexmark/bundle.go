package nexmark

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/saber-hx/saber-hx/source"
	"github.com/saber-hx/saber-hx/strview"
)

// Bundle is a stretch of the event sequence generated once into one tuple
// buffer per table, to be replayed (as ysb's and source.Replay's bundles
// are for YSB) so that the engine can be measured without the generator.
//
// Pass p of a table is the bundle's tuples with every event time (dateTime,
// and an auction's expires) p*Span() ms later, and every id past those of
// the passes before it: person ids and the sellers and bidders that refer
// to them by p*People(), auction ids and the bids' auctions by
// p*Auctions(). Each pass's references thus land on its own people and
// auctions, as pass 0's do, and the tables of one pass share its clock.
// Pass 0 is the generator's sequence exactly; later passes are not its
// continuation (its random draws differ, and every pass repeats the
// sequence's start, where fewer than NumActivePeople people exist).
//
// The tuples' long strings reference the bundle's arenas and the
// generator's shared tables: they are valid until Free.
type Bundle struct {
	cfg      Config
	events   int64
	span     int64
	people   int64
	auctions int64
	tuples   [3][]byte
	counts   [3]int64
	arenas   []*strview.Arena
}

// BundlePeriod is the smallest number of events that a bundle holds a
// whole number of: whole epochs of TotalProportion event ids, whole
// out-of-order groups, and a whole number of milliseconds of event time,
// so that passes continue one another's clock exactly.
func BundlePeriod(cfg Config) int64 {
	msEvents := cfg.EventRate / gcd(cfg.EventRate, 1000) // events per whole number of ms
	return lcm(lcm(cfg.TotalProportion(), msEvents), max(cfg.OutOfOrderGroupSize, 1))
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func lcm(a, b int64) int64 { return a / gcd(a, b) * b }

// NewBundle generates the first events of cfg's sequence (events rounded
// down to a whole number of BundlePeriod, but at least one period; cfg's
// Events is ignored) into per-table tuples, on every available CPU.
func NewBundle(cfg Config, events int) (*Bundle, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if events <= 0 {
		return nil, fmt.Errorf("nexmark: a bundle of %d events", events)
	}
	cfg.Events = 0
	period := BundlePeriod(cfg)
	n := max(int64(events)/period, 1) * period
	epochs := n / cfg.TotalProportion()
	b := &Bundle{
		cfg:      cfg,
		events:   n,
		span:     n * 1000 / cfg.EventRate,
		people:   epochs * cfg.PersonProportion,
		auctions: epochs * cfg.AuctionProportion,
	}

	workers := int64(max(1, min(runtime.GOMAXPROCS(0), int(n/4096))))
	bounds := make([]int64, workers+1)
	for w := range workers + 1 {
		bounds[w] = n * w / workers
	}
	// Where each worker's tuples go: the tables of a range of events,
	// counted without generating them.
	starts := make([][3]int64, workers+1)
	for w := range workers {
		starts[w+1] = starts[w]
		for i := bounds[w]; i < bounds[w+1]; i++ {
			starts[w+1][cfg.TableOf(cfg.FirstEventID+cfg.adjust(cfg.FirstEventNumber+i))]++
		}
	}
	b.counts = starts[workers]
	for _, t := range Tables {
		b.tuples[t] = make([]byte, b.counts[t]*int64(t.TupleSize()))
	}
	b.arenas = make([]*strview.Arena, workers)
	var wg sync.WaitGroup
	for w := range workers {
		a := strview.NewArena(0)
		b.arenas[w] = a
		wg.Go(func() {
			g, _ := New(cfg) // cfg is valid
			var ev Event
			off := starts[w]
			for i := bounds[w]; i < bounds[w+1]; i++ {
				g.At(i, &ev)
				t := ev.Table
				size := int64(t.TupleSize())
				EncodeTuple(b.tuples[t][off[t]*size:(off[t]+1)*size], &ev, a)
				off[t]++
			}
		})
	}
	wg.Wait()
	return b, nil
}

// Config is the configuration the bundle was generated from.
func (b *Bundle) Config() Config { return b.cfg }

// Events is the number of events in one pass.
func (b *Bundle) Events() int64 { return b.events }

// Span is the event time of one pass, ms: Events()*1000/EventRate.
func (b *Bundle) Span() int64 { return b.span }

// People and Auctions are the person and auction ids that one pass adds.
func (b *Bundle) People() int64   { return b.people }
func (b *Bundle) Auctions() int64 { return b.auctions }

// Count is the number of table t's tuples in one pass.
func (b *Bundle) Count(t Table) int64 { return b.counts[t] }

// Tuples is table t's tuples of pass 0, in event order. They must not be
// modified.
func (b *Bundle) Tuples(t Table) []byte { return b.tuples[t] }

// Fill writes table t's tuples of pass pass into dst, from the first, as
// many whole tuples as fit (at most Count(t)), and returns how many it
// wrote. Passes may be filled concurrently.
func (b *Bundle) Fill(dst []byte, t Table, pass int64) int {
	size := t.TupleSize()
	n := min(len(dst)/size, len(b.tuples[t])/size)
	b.copyShift(dst[:n*size], b.tuples[t][:n*size], t, pass)
	return n
}

// FillAt writes table t's stream from its tuple k on into dst (whole
// tuples; a trailing partial tuple of dst is left as it is): tuple k of
// the stream is tuple k mod Count(t) of pass k / Count(t). It is safe for
// concurrent use, so that workers may copy their own tasks.
func (b *Bundle) FillAt(dst []byte, t Table, k uint64) {
	size := t.TupleSize()
	count := uint64(b.counts[t])
	if count == 0 {
		return
	}
	src := b.tuples[t]
	for off := 0; off+size <= len(dst); {
		pos := k % count
		c := min((len(dst)-off)/size, int(count-pos)) * size
		p := int(pos) * size
		b.copyShift(dst[off:off+c], src[p:p+c], t, int64(k/count))
		off += c
		k += uint64(c / size)
	}
}

// copyShift copies whole tuples of table t from src to dst and moves them
// to pass pass: event times later by pass*span, ids past pass passes'.
// source.CopyAdd adds each word's delta between load and store.
func (b *Bundle) copyShift(dst, src []byte, t Table, pass int64) {
	if pass == 0 {
		copy(dst, src)
		return
	}
	dt, dp, da := pass*b.span, pass*b.people, pass*b.auctions
	var words [max(PersonTupleSize, AuctionTupleSize, BidTupleSize) / 8]int64 // on the stack
	delta := words[:t.TupleSize()/8]
	delta[offTime/8] = dt
	switch t {
	case PersonTable:
		delta[offPersonID/8] = dp
	case AuctionTable:
		delta[offAuctionID/8] = da
		delta[offAuctionExp/8] = dt
		delta[offAuctionSeller/8] = dp
	default:
		delta[offBidAuction/8] = da
		delta[offBidBidder/8] = dp
	}
	source.CopyAdd(dst, src, delta)
}

// Free returns the memory of the bundle's strings; its tuples must not be
// read afterwards.
func (b *Bundle) Free() {
	for _, a := range b.arenas {
		a.Free()
	}
	b.arenas = nil
	b.tuples = [3][]byte{}
	b.counts = [3]int64{}
}
