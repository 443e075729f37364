package nexmark

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// The generator's constants: fixed in the Nexmark project's Java code
// (GeneratorConfig, PersonGenerator, AuctionGenerator, BidGenerator,
// StringsGenerator), not options of its connector.
const (
	// FirstPersonID, FirstAuctionID and FirstCategoryID are the first
	// ids: people and auctions are numbered from 1000, categories from
	// 10, so that queries find matches on small data sets.
	FirstPersonID   = 1000
	FirstAuctionID  = 1000
	FirstCategoryID = 10
	// Categories is the number of auction categories (10 to 14).
	Categories = 5
	// PersonIDLead and AuctionIDLead are how many ids past the newest
	// person or auction a random reference may name: a bid or an auction
	// may refer to a person or an auction that comes a little later.
	PersonIDLead  = 10
	AuctionIDLead = 10
	// HotBatch is the size of the batches whose first member is the hot
	// seller and hot auction, and whose second is the hot bidder.
	HotBatch = 100
	// HotChannelsRatio: a bid comes from one of the four hot channels
	// with probability 1 - 1/HotChannelsRatio.
	HotChannelsRatio = 2
	// Channels is the number of other channels, channel-0 to channel-9999.
	Channels = 10000
	// MinStringLength is the shortest random string before trimming.
	MinStringLength = 3
	// ExtraPoolSize is the size of the text that extra strings are cut
	// from.
	ExtraPoolSize = 1 << 20
)

// DefaultBaseTime is the event time of event number 0: 2015-07-15
// 00:00:00.000 UTC, in milliseconds since the Unix epoch, the fixed base
// time of Beam's Nexmark (NexmarkUtils.BASE_TIME), which the Nexmark
// project's configuration means by useWallclockEventTime = false. The
// project's Flink connector takes the wall clock at job start instead
// (System.currentTimeMillis()), which no run can reproduce.
const DefaultBaseTime int64 = 1436918400000

// Config is the generator's configuration. DefaultConfig has Nexmark's
// defaults; the zero Config is not valid.
type Config struct {
	// Seed makes the sequence: the same seed and configuration, the same
	// events, on any machine.
	Seed uint64

	// EventRate is events per second of event time (first-event.rate,
	// default 10,000): event number n happens n*1000/EventRate ms after
	// BaseTime. The project's rate shape (square, 600 s period) and
	// next-event.rate are options its GeneratorConfig reads but does not
	// use: its clock has one inter-event delay, 10^6/first-event.rate
	// µs, so the default rate is constant.
	EventRate int64

	// Events is the number of events; 0 means no end (events.num).
	Events int64

	// PersonProportion, AuctionProportion and BidProportion are the mix
	// (1, 3 and 46): of every PersonProportion+AuctionProportion+
	// BidProportion consecutive event ids, the first PersonProportion
	// are people, the next AuctionProportion auctions, the rest bids.
	PersonProportion, AuctionProportion, BidProportion int64

	// AvgPersonByteSize, AvgAuctionByteSize and AvgBidByteSize (200, 500
	// and 100) are the records' average idealised sizes: the extra
	// field pads each record to its average, ±20%.
	AvgPersonByteSize, AvgAuctionByteSize, AvgBidByteSize int64

	// HotAuctionRatio (2): a bid is for the hot auction with probability
	// 1 - 1/HotAuctionRatio. HotSellersRatio (4): an auction is the hot
	// seller's with probability 1 - 1/HotSellersRatio. HotBiddersRatio
	// (4): a bid is the hot bidder's with probability 1 - 1/HotBiddersRatio.
	HotAuctionRatio, HotSellersRatio, HotBiddersRatio int64

	// NumInFlightAuctions (100) is how many of the newest auctions a
	// random bid chooses from; it also sets how long auctions last.
	NumInFlightAuctions int64
	// NumActivePeople (1000) is how many of the newest people a random
	// seller or bidder is chosen from.
	NumActivePeople int64

	// OutOfOrderGroupSize (1: none) emits each group of that many
	// consecutive events in a fixed pseudo-random order: event number n
	// is generated as n/g*g + (n*953)%g, its time and its id included.
	OutOfOrderGroupSize int64

	// BaseTime is event number 0's event time, ms since the Unix epoch.
	BaseTime int64

	// FirstEventID and FirstEventNumber offset the event ids (which
	// decide each event's kind and ids) and the event numbers (which
	// decide its time): event i of the sequence has number
	// FirstEventNumber+i and id FirstEventID+FirstEventNumber+i. 0 and 0
	// are Beam's and RisingWave's; the project's Flink connector uses 1
	// and 1, so that its first event is an auction.
	FirstEventID, FirstEventNumber int64

	// FlinkBidderIDs adds FirstPersonID to a bid's bidder twice, as the
	// project's Flink BidGenerator has done since 2021 (bidders 1000
	// people past the person the rule chose, mostly people that do not
	// exist yet). False, the default, adds it once, as Beam's generator
	// and RisingWave's do: a bidder is a person of the sequence.
	FlinkBidderIDs bool
}

// DefaultConfig returns Nexmark's defaults (NexmarkConfiguration and the
// Flink connector's options) with seed 0 and the fixed base time.
func DefaultConfig() Config {
	return Config{
		EventRate:           10000,
		PersonProportion:    1,
		AuctionProportion:   3,
		BidProportion:       46,
		AvgPersonByteSize:   200,
		AvgAuctionByteSize:  500,
		AvgBidByteSize:      100,
		HotAuctionRatio:     2,
		HotSellersRatio:     4,
		HotBiddersRatio:     4,
		NumInFlightAuctions: 100,
		NumActivePeople:     1000,
		OutOfOrderGroupSize: 1,
		BaseTime:            DefaultBaseTime,
	}
}

// Validate reports the first setting that no generator can run with.
func (c *Config) Validate() error {
	pos := []struct {
		name string
		v    int64
	}{
		{"event rate", c.EventRate},
		{"hot auction ratio", c.HotAuctionRatio},
		{"hot sellers ratio", c.HotSellersRatio},
		{"hot bidders ratio", c.HotBiddersRatio},
		{"number of active people", c.NumActivePeople},
		{"out-of-order group size", c.OutOfOrderGroupSize},
	}
	for _, p := range pos {
		if p.v <= 0 {
			return fmt.Errorf("nexmark: the %s is %d; it must be positive", p.name, p.v)
		}
	}
	nonneg := []struct {
		name string
		v    int64
	}{
		{"number of events", c.Events},
		{"person proportion", c.PersonProportion},
		{"auction proportion", c.AuctionProportion},
		{"bid proportion", c.BidProportion},
		{"average person size", c.AvgPersonByteSize},
		{"average auction size", c.AvgAuctionByteSize},
		{"average bid size", c.AvgBidByteSize},
		{"number of in-flight auctions", c.NumInFlightAuctions},
		{"first event id", c.FirstEventID},
		{"first event number", c.FirstEventNumber},
	}
	for _, p := range nonneg {
		if p.v < 0 {
			return fmt.Errorf("nexmark: the %s is %d; it must not be negative", p.name, p.v)
		}
	}
	if c.PersonProportion == 0 || c.AuctionProportion == 0 {
		// Auctions need sellers and bids need auctions: the Java rules
		// divide by these proportions.
		return errors.New("nexmark: the person and auction proportions must be positive (auctions need sellers, bids need auctions)")
	}
	const limit = 1 << 40
	for _, v := range []int64{c.PersonProportion + c.AuctionProportion + c.BidProportion, c.AvgPersonByteSize, c.AvgAuctionByteSize, c.AvgBidByteSize, c.NumInFlightAuctions, c.NumActivePeople, c.OutOfOrderGroupSize} {
		if v > limit {
			return fmt.Errorf("nexmark: a proportion, size or count of %d is beyond %d", v, int64(limit))
		}
	}
	if c.AvgPersonByteSize > maxExtra || c.AvgAuctionByteSize > maxExtra || c.AvgBidByteSize > maxExtra {
		return fmt.Errorf("nexmark: average record sizes above %d bytes are not supported", maxExtra)
	}
	return nil
}

// maxExtra bounds the average sizes: an extra string is at most 1.2 times
// the average, and strings of half the extra pool or more would have to be
// generated per event.
const maxExtra = ExtraPoolSize / 4

// TotalProportion is PersonProportion + AuctionProportion + BidProportion:
// the length of one epoch of event ids.
func (c *Config) TotalProportion() int64 {
	return c.PersonProportion + c.AuctionProportion + c.BidProportion
}

// adjust is the event number that the event at number n is generated as:
// n itself, or its place in its out-of-order group.
func (c *Config) adjust(n int64) int64 {
	g := c.OutOfOrderGroupSize
	if g <= 1 {
		return n
	}
	return n/g*g + mulMod(n, 953, g)
}

// mulMod is a*b mod m for a, b, m >= 0 without overflow.
func mulMod(a, b, m int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	_, r := bits.Div64(hi%uint64(m), lo, uint64(m))
	return int64(r)
}

// Timestamp is the event time of event number n (an adjusted number, as
// the Java generator's timestampForEvent takes): BaseTime +
// floor(n*1000/EventRate) ms. Java computes the same in floating point,
// (long)(n * (10^6/rate µs)) / 1000; for every rate that divides 10^6,
// the default 10,000 among them, and for 10^7, the two agree exactly.
func (c *Config) Timestamp(n int64) int64 {
	if n < 0 {
		n = 0
	}
	hi, lo := bits.Mul64(uint64(n), 1000)
	if hi >= uint64(c.EventRate) {
		// Past the int64 range of milliseconds: saturate rather than
		// panic in Div64.
		return math.MaxInt64
	}
	q, _ := bits.Div64(hi, lo, uint64(c.EventRate))
	if q > math.MaxInt64 || c.BaseTime > 0 && int64(q) > math.MaxInt64-c.BaseTime {
		return math.MaxInt64
	}
	return c.BaseTime + int64(q)
}

// TableOf is the table of the event with event id id: its place in its
// epoch of TotalProportion ids.
func (c *Config) TableOf(id int64) Table {
	_, off := c.split(id)
	return c.tableAt(off)
}

// lastPerson is the newest person id (base 0) at the event id of epoch
// epoch and place off in it (id = epoch*TotalProportion + off): the person
// itself for a person event (PersonGenerator.lastBase0PersonId).
func (c *Config) lastPerson(epoch, off int64) int64 {
	if off >= c.PersonProportion {
		off = c.PersonProportion - 1
	}
	return epoch*c.PersonProportion + off
}

// lastAuction is the newest auction id (base 0) at the event id of epoch
// epoch and place off in it: the auction itself for an auction event, the
// previous epoch's last auction for a person event
// (AuctionGenerator.lastBase0AuctionId; -1 before the first auction).
func (c *Config) lastAuction(epoch, off int64) int64 {
	switch {
	case off < c.PersonProportion:
		epoch--
		off = c.AuctionProportion - 1
	case off >= c.PersonProportion+c.AuctionProportion:
		off = c.AuctionProportion - 1
	default:
		off -= c.PersonProportion
	}
	return epoch*c.AuctionProportion + off
}

// split is event id id's epoch and its place in it, with one division.
func (c *Config) split(id int64) (epoch, off int64) {
	total := c.TotalProportion()
	epoch = id / total
	return epoch, id - epoch*total
}

// tableAt is the table of the event at place off of its epoch.
func (c *Config) tableAt(off int64) Table {
	switch {
	case off < c.PersonProportion:
		return PersonTable
	case off < c.PersonProportion+c.AuctionProportion:
		return AuctionTable
	}
	return BidTable
}
