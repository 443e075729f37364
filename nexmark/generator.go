package nexmark

import (
	"fmt"
	"math"
	"math/bits"
)

// Table is the kind of an event, and the table it belongs to. Its values
// are Nexmark's event_type: 0 person, 1 auction, 2 bid.
type Table uint8

const (
	PersonTable Table = iota
	AuctionTable
	BidTable
)

// Tables lists the three tables in event_type order.
var Tables = [...]Table{PersonTable, AuctionTable, BidTable}

func (t Table) String() string {
	switch t {
	case PersonTable:
		return "person"
	case AuctionTable:
		return "auction"
	case BidTable:
		return "bid"
	}
	return fmt.Sprintf("table(%d)", uint8(t))
}

// ParseTable reads a table's name: person, auction or bid.
func ParseTable(name string) (Table, error) {
	for _, t := range Tables {
		if name == t.String() {
			return t, nil
		}
	}
	return 0, fmt.Errorf("nexmark: no table %q (person, auction or bid)", name)
}

// Person is a new person: someone who sells or bids.
type Person struct {
	ID           int64
	Name         []byte
	EmailAddress []byte
	CreditCard   []byte
	City         []byte
	State        []byte
	Extra        []byte
}

// Auction is a new auction of an item.
type Auction struct {
	ID          int64
	ItemName    []byte
	Description []byte
	InitialBid  int64 // cents
	Reserve     int64 // cents
	Expires     int64 // ms since the Unix epoch
	Seller      int64 // a Person's ID
	Category    int64
	Extra       []byte
}

// Bid is a bid on an auction.
type Bid struct {
	Auction int64 // an Auction's ID
	Bidder  int64 // a Person's ID
	Price   int64 // cents
	Channel []byte
	URL     []byte
	Extra   []byte
}

// Event is one event of the sequence. Only the struct of its Table is
// filled; the other two hold whatever an earlier event left there.
//
// Its strings are slices of memory the generator owns. Those the events
// share (names, cities, states, channels, URLs, extra strings) lie in a
// mapping outside the Go heap that lives as long as the process, and stay
// valid for ever; those made for the event (an email address, a credit
// card number, an item's name and description) are valid until the next
// call of the Generator that filled the Event. Copy what must outlive it.
type Event struct {
	Table Table
	// Index is the event's position in the sequence: 0 for the first
	// event (Java's eventsCountSoFar before it).
	Index int64
	// ID is the event id that decides the event's kind and ids, and
	// seeds its random choices: FirstEventID plus its event number.
	ID int64
	// DateTime is the event time, ms since the Unix epoch: the dateTime
	// of the person, auction or bid.
	DateTime int64
	Person   Person
	Auction  Auction
	Bid      Bid
}

// Generator generates the events of one Config. It is not safe for
// concurrent use; generators of one Config generate the same sequence,
// so that several may generate disjoint parts of it in parallel (At,
// SetPosition) or one table each (NextOf).
type Generator struct {
	cfg   Config
	total int64
	// auctionEvents is how many events it takes to generate
	// NumInFlightAuctions auctions: an auction lasts twice that long at
	// most, on average as long.
	auctionEvents int64
	next          int64
	t             *tables
	r             rng
	scratch       []byte // the event's own strings
	big           []byte // an extra string too long to cut from the pool
}

// New returns a generator of cfg's sequence, positioned at its first event.
func New(cfg Config) (*Generator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Generator{
		cfg:           cfg,
		total:         cfg.TotalProportion(),
		auctionEvents: cfg.NumInFlightAuctions * cfg.TotalProportion() / cfg.AuctionProportion,
		t:             static(),
		scratch:       make([]byte, 0, scratchSize),
	}, nil
}

// scratchSize holds the longest strings of one event: an auction's item
// name (19) and description (99), or a person's email address (15) and
// credit card number (19).
const scratchSize = 128

// Config returns the generator's configuration.
func (g *Generator) Config() Config { return g.cfg }

// Position is the index of the event that Next generates next.
func (g *Generator) Position() int64 { return g.next }

// SetPosition makes the event with index i the next one.
func (g *Generator) SetPosition(i int64) { g.next = max(i, 0) }

// Done reports whether the sequence has ended (Config.Events reached).
func (g *Generator) Done() bool { return g.cfg.Events > 0 && g.next >= g.cfg.Events }

// Next fills ev with the next event and reports whether there was one.
func (g *Generator) Next(ev *Event) bool {
	if g.Done() {
		return false
	}
	g.At(g.next, ev)
	g.next++
	return true
}

// NextOf fills ev with the next event of table t, skipping the others
// without generating them, and reports whether there was one. Generators
// of one Config that each take one table share the sequence's clock: a
// person is at the same event time whichever generator produced it.
func (g *Generator) NextOf(t Table, ev *Event) bool {
	i, ok := g.nextIndexOf(t, g.next)
	if !ok {
		g.next = max(g.next, g.cfg.Events)
		return false
	}
	g.At(i, ev)
	g.next = i + 1
	return true
}

// nextIndexOf is the index of the first event of table t at index i or
// later.
func (g *Generator) nextIndexOf(t Table, i int64) (int64, bool) {
	c := &g.cfg
	lo, hi := int64(0), c.PersonProportion
	switch t {
	case AuctionTable:
		lo, hi = c.PersonProportion, c.PersonProportion+c.AuctionProportion
	case BidTable:
		lo, hi = c.PersonProportion+c.AuctionProportion, g.total
	}
	if lo == hi {
		return 0, false
	}
	if c.OutOfOrderGroupSize <= 1 {
		// The id of index i is FirstEventID+FirstEventNumber+i: jump
		// to the next id whose place in its epoch is in [lo, hi).
		rem := (c.FirstEventID + c.FirstEventNumber + i) % g.total
		switch {
		case rem < lo:
			i += lo - rem
		case rem >= hi:
			i += g.total - rem + lo
		}
	} else {
		for c.TableOf(c.FirstEventID+c.adjust(c.FirstEventNumber+i)) != t {
			i++
		}
	}
	if c.Events > 0 && i >= c.Events {
		return 0, false
	}
	return i, true
}

// At fills ev with the event at index i >= 0, whatever the generator's
// position, which it leaves as it is (Config.Events does not bound it).
func (g *Generator) At(i int64, ev *Event) {
	c := &g.cfg
	n := c.adjust(c.FirstEventNumber + i)
	id := c.FirstEventID + n
	epoch, off := c.split(id)
	ev.Index = i
	ev.ID = id
	ev.DateTime = c.Timestamp(n)
	ev.Table = c.tableAt(off)
	g.r.seedEvent(c.Seed, id)
	g.scratch = g.scratch[:0]
	switch ev.Table {
	case PersonTable:
		g.person(epoch, off, &ev.Person)
	case AuctionTable:
		g.auction(epoch, off, n, ev.DateTime, &ev.Auction)
	default:
		g.bid(epoch, off, &ev.Bid)
	}
}

// person follows PersonGenerator.nextPerson: the next person id, a name
// of a first and a last name, an email address of two random strings, a
// credit card number of four groups of four digits, a city and a state,
// and an extra string that brings the record to AvgPersonByteSize.
func (g *Generator) person(epoch, off int64, p *Person) {
	r, t := &g.r, g.t
	p.ID = g.cfg.lastPerson(epoch, off) + FirstPersonID
	// A first and a last name, independent and uniform: one of the
	// len(firstNames)*len(lastNames) names, uniformly.
	p.Name = t.names[r.intn(int64(len(t.names)))]

	s := g.scratch
	start := len(s)
	s = appendRandomString(s, r, 7, ' ')
	s = append(s, '@')
	s = appendRandomString(s, r, 5, ' ')
	s = append(s, ".com"...)
	p.EmailAddress = s[start:len(s):len(s)]

	start = len(s)
	for k := range 2 {
		// Two groups of four digits, uniform in 0000-9999, from one
		// 64-bit draw (its fraction's first two digits base 10^4).
		if k > 0 {
			s = append(s, ' ')
		}
		v, rest := bits.Mul64(r.next(), 10000)
		w, _ := bits.Mul64(rest, 10000)
		s = append(s, byte('0'+v/1000), byte('0'+v/100%10), byte('0'+v/10%10), byte('0'+v%10), ' ',
			byte('0'+w/1000), byte('0'+w/100%10), byte('0'+w/10%10), byte('0'+w%10))
	}
	p.CreditCard = s[start:len(s):len(s)]
	g.scratch = s

	p.City = t.cities[r.intn(int64(len(t.cities)))]
	p.State = t.states[r.intn(int64(len(t.states)))]
	size := 8 + len(p.Name) + len(p.EmailAddress) + len(p.CreditCard) + len(p.City) + len(p.State)
	p.Extra = g.extra(int64(size), g.cfg.AvgPersonByteSize)
}

// auction follows AuctionGenerator.nextAuction: the next auction id; the
// hot seller (the first person of the newest batch of HotBatch people)
// with probability 1 - 1/HotSellersRatio, else a random active person; a
// category; an initial bid and a reserve above it (prices); an expiry
// (see auctionLength); a name and a description; and an extra string that
// brings the record to AvgAuctionByteSize.
func (g *Generator) auction(epoch, off, n, ts int64, a *Auction) {
	r, c := &g.r, &g.cfg
	a.ID = c.lastAuction(epoch, off) + FirstAuctionID
	lastPerson := c.lastPerson(epoch, off)
	if r.intn(c.HotSellersRatio) > 0 {
		a.Seller = lastPerson / HotBatch * HotBatch
	} else {
		a.Seller = g.randomPerson(lastPerson)
	}
	a.Seller += FirstPersonID
	a.Category = FirstCategoryID + r.intn(Categories)
	a.InitialBid = r.price()
	a.Expires = ts + g.auctionLength(n, ts)

	s := g.scratch
	start := len(s)
	s = appendRandomString(s, r, 20, ' ')
	a.ItemName = s[start:len(s):len(s)]
	start = len(s)
	s = appendRandomString(s, r, 100, ' ')
	a.Description = s[start:len(s):len(s)]
	g.scratch = s

	a.Reserve = a.InitialBid + r.price()
	size := 8 + len(a.ItemName) + len(a.Description) + 8 + 8 + 8 + 8 + 8
	a.Extra = g.extra(int64(size), c.AvgAuctionByteSize)
}

// auctionLength is how long an auction generated at event number n and
// time ts lasts, ms (AuctionGenerator.nextAuctionLengthMs): uniform in
// [1, 2h] for h the event time until NumInFlightAuctions more auctions
// have been generated, so that on average about that many are open.
func (g *Generator) auctionLength(n, ts int64) int64 {
	horizon := g.cfg.Timestamp(n+g.auctionEvents) - ts
	return 1 + g.r.intn(max(horizon*2, 1))
}

// bid follows BidGenerator.nextBid: the hot auction (the first of the
// newest batch of HotBatch auctions) with probability 1 - 1/HotAuctionRatio,
// else one of the newest NumInFlightAuctions auctions (or a few ahead);
// the hot bidder (the second person of the newest batch of HotBatch
// people, so that hot sellers and bidders differ) with probability
// 1 - 1/HotBiddersRatio, else a random active person; a price; a hot
// channel with its URL with probability 1 - 1/HotChannelsRatio, else one
// of Channels channels and its URL; and an extra string that brings the
// record to AvgBidByteSize.
func (g *Generator) bid(epoch, off int64, b *Bid) {
	r, c, t := &g.r, &g.cfg, g.t
	lastAuction := c.lastAuction(epoch, off)
	if r.intn(c.HotAuctionRatio) > 0 {
		b.Auction = lastAuction / HotBatch * HotBatch
	} else {
		b.Auction = g.randomAuction(lastAuction)
	}
	b.Auction += FirstAuctionID
	lastPerson := c.lastPerson(epoch, off)
	if r.intn(c.HotBiddersRatio) > 0 {
		b.Bidder = lastPerson/HotBatch*HotBatch + 1
	} else {
		b.Bidder = g.randomPerson(lastPerson)
	}
	b.Bidder += FirstPersonID
	if c.FlinkBidderIDs {
		b.Bidder += FirstPersonID
	}
	b.Price = r.price()
	if r.intn(HotChannelsRatio) > 0 {
		i := r.intn(int64(len(t.hotChan)))
		b.Channel, b.URL = t.hotChan[i], t.hotURLs[i]
	} else {
		i := r.intn(Channels)
		b.Channel, b.URL = t.channels[i], t.chanURLs[i]
	}
	b.Extra = g.extra(8+8+8+8, c.AvgBidByteSize)
}

// randomPerson is PersonGenerator.nextBase0PersonId: one of the newest
// NumActivePeople people or the PersonIDLead after them, uniformly, so
// that the people per auction or bid do not thin out over a long run.
// last is the newest person, base 0.
func (g *Generator) randomPerson(last int64) int64 {
	people := last + 1
	active := min(people, g.cfg.NumActivePeople)
	return people - active + g.r.intn(active+PersonIDLead)
}

// randomAuction is AuctionGenerator.nextBase0AuctionId: one of the
// auctions from NumInFlightAuctions before the newest to AuctionIDLead
// after it, uniformly. last is the newest auction, base 0.
func (g *Generator) randomAuction(last int64) int64 {
	first := max(last-g.cfg.NumInFlightAuctions, 0)
	return first + g.r.intn(last-first+1+AuctionIDLead)
}

// extra is StringsGenerator.nextExtra: for a record of size bytes whose
// average should be avg, a string of avg-size bytes ±20% (uniform in
// [d-delta, d+delta) for d = avg-size and delta = round(d/5)), empty
// when the record is already bigger; cut from the shared text at a random
// offset (nextExactString).
func (g *Generator) extra(size, avg int64) []byte {
	if size > avg {
		return nil
	}
	d := avg - size
	delta := int64(math.Floor(float64(d)*0.2 + 0.5))
	n := d - delta
	if delta > 0 {
		n += g.r.intn(2 * delta)
	}
	pool := g.t.extraPool
	if n < int64(len(pool))/2 {
		off := g.r.intn(int64(len(pool)) - n)
		return pool[off : off+n : off+n]
	}
	// Validate keeps sizes below this; Java generates such a string
	// afresh.
	g.big = appendExactLetters(g.big[:0], &g.r, int(n))
	return g.big
}
