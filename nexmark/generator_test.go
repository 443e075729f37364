package nexmark

import (
	"math"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/temporal"
)

func newGen(t testing.TB, cfg Config) *Generator {
	t.Helper()
	g, err := New(cfg)
	require.NoError(t, err)
	return g
}

// jsonOf is the event's Kafka JSON line, a comparable copy of all its fields.
func jsonOf(ev *Event) string { return string(AppendKafkaJSON(nil, ev)) }

func TestDefaults(t *testing.T) {
	c := DefaultConfig()
	assert.EqualValues(t, 10000, c.EventRate)
	assert.EqualValues(t, [3]int64{1, 3, 46}, [3]int64{c.PersonProportion, c.AuctionProportion, c.BidProportion})
	assert.EqualValues(t, 50, c.TotalProportion())
	assert.EqualValues(t, [3]int64{200, 500, 100}, [3]int64{c.AvgPersonByteSize, c.AvgAuctionByteSize, c.AvgBidByteSize})
	assert.EqualValues(t, [3]int64{2, 4, 4}, [3]int64{c.HotAuctionRatio, c.HotSellersRatio, c.HotBiddersRatio})
	assert.EqualValues(t, 100, c.NumInFlightAuctions)
	assert.EqualValues(t, 1000, c.NumActivePeople)
	assert.EqualValues(t, 1, c.OutOfOrderGroupSize)
	assert.Zero(t, c.Events)
	base, ok := temporal.ParseTimestamp([]byte("2015-07-15 00:00:00"))
	require.True(t, ok)
	assert.Equal(t, base, c.BaseTime)
	require.NoError(t, c.Validate())
}

func TestValidate(t *testing.T) {
	var zero Config
	assert.Error(t, zero.Validate())
	for name, edit := range map[string]func(*Config){
		"rate":        func(c *Config) { c.EventRate = 0 },
		"events":      func(c *Config) { c.Events = -1 },
		"people":      func(c *Config) { c.PersonProportion = 0 },
		"auctions":    func(c *Config) { c.AuctionProportion = 0 },
		"bids":        func(c *Config) { c.BidProportion = -1 },
		"hot auction": func(c *Config) { c.HotAuctionRatio = 0 },
		"active":      func(c *Config) { c.NumActivePeople = 0 },
		"group":       func(c *Config) { c.OutOfOrderGroupSize = 0 },
		"size":        func(c *Config) { c.AvgAuctionByteSize = 1 << 30 },
		"first id":    func(c *Config) { c.FirstEventID = -1 },
	} {
		c := DefaultConfig()
		edit(&c)
		_, err := New(c)
		assert.Error(t, err, name)
	}
	c := DefaultConfig()
	c.BidProportion = 0 // people and auctions only: allowed
	g := newGen(t, c)
	var ev Event
	for range 100 {
		require.True(t, g.Next(&ev))
		assert.NotEqual(t, BidTable, ev.Table)
	}
	assert.False(t, g.NextOf(BidTable, &ev))
}

func TestTables(t *testing.T) {
	for _, tb := range Tables {
		got, err := ParseTable(tb.String())
		require.NoError(t, err)
		assert.Equal(t, tb, got)
	}
	_, err := ParseTable("bids")
	assert.Error(t, err)
	assert.EqualValues(t, 0, PersonTable)
	assert.EqualValues(t, 1, AuctionTable)
	assert.EqualValues(t, 2, BidTable)
}

func TestDeterministicBySeed(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Seed = 42
	a, b := newGen(t, cfg), newGen(t, cfg)
	cfg.Seed = 43
	c := newGen(t, cfg)
	var ea, eb, ec Event
	differ := 0
	for i := range 20000 {
		require.True(t, a.Next(&ea))
		require.True(t, b.Next(&eb))
		require.True(t, c.Next(&ec))
		ja := jsonOf(&ea)
		require.Equal(t, ja, jsonOf(&eb), "event %d", i)
		if ja != jsonOf(&ec) {
			differ++
		}
		// Same table, time and ids whatever the seed: only the random
		// choices differ.
		require.Equal(t, ea.Table, ec.Table)
		require.Equal(t, ea.DateTime, ec.DateTime)
	}
	assert.Greater(t, differ, 19900)

	// Any event on its own is the same as in the sequence.
	cfg.Seed = 42
	d := newGen(t, cfg)
	a.SetPosition(0)
	for _, i := range []int64{0, 1, 49, 50, 1234, 19999} {
		a.SetPosition(i)
		require.True(t, a.Next(&ea))
		d.At(i, &eb)
		assert.Equal(t, jsonOf(&ea), jsonOf(&eb))
		assert.Equal(t, i, eb.Index)
	}
}

// A fixed seed gives the same sequence on every machine and in every
// version: the first events of seed 7, as a hash of their JSON.
func TestSequencePinned(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Seed = 7
	g := newGen(t, cfg)
	var ev Event
	var buf []byte
	h := uint64(14695981039346656037)
	for range 1000 {
		g.Next(&ev)
		buf = AppendKafkaJSON(buf[:0], &ev)
		for _, c := range buf {
			h = (h ^ uint64(c)) * 1099511628211
		}
	}
	assert.Equal(t, uint64(pinnedHash), h, "the sequence of seed 7 changed: %#x", h)
}

func TestProportions(t *testing.T) {
	g := newGen(t, DefaultConfig())
	var ev Event
	var counts [3]int
	var epoch [3]int
	for i := range 100000 {
		require.True(t, g.Next(&ev))
		counts[ev.Table]++
		epoch[ev.Table]++
		if (i+1)%50 == 0 {
			require.Equal(t, [3]int{1, 3, 46}, epoch, "epoch ending at %d", i)
			epoch = [3]int{}
		}
	}
	assert.Equal(t, [3]int{2000, 6000, 92000}, counts)
}

func TestEventTimesAdvanceAtTheRate(t *testing.T) {
	for _, rate := range []int64{10000, 10000000, 3, 7777} {
		cfg := DefaultConfig()
		cfg.EventRate = rate
		g := newGen(t, cfg)
		var ev Event
		prev := int64(math.MinInt64)
		for i := range int64(30000) {
			require.True(t, g.Next(&ev))
			want := cfg.BaseTime + int64(math.Floor(float64(i)*1000/float64(rate)))
			require.Equal(t, want, ev.DateTime, "rate %d event %d", rate, i)
			require.GreaterOrEqual(t, ev.DateTime, prev)
			prev = ev.DateTime
		}
	}
	// The default: 10 events per ms, 10,000 per second of event time.
	cfg := DefaultConfig()
	g := newGen(t, cfg)
	var ev Event
	g.At(10000, &ev)
	assert.Equal(t, cfg.BaseTime+1000, ev.DateTime)
	g.At(9, &ev)
	assert.Equal(t, cfg.BaseTime, ev.DateTime)
	// Far out the clock saturates instead of overflowing.
	assert.Equal(t, cfg.BaseTime+math.MaxInt64/10, cfg.Timestamp(math.MaxInt64))
	cfg.EventRate = 100
	assert.Equal(t, int64(math.MaxInt64), cfg.Timestamp(math.MaxInt64))
	cfg.EventRate = 1
	assert.Equal(t, int64(math.MaxInt64), cfg.Timestamp(math.MaxInt64/1000))
}

func TestEventsEnd(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Events = 120
	g := newGen(t, cfg)
	var ev Event
	n := 0
	for g.Next(&ev) {
		n++
	}
	assert.Equal(t, 120, n)
	assert.True(t, g.Done())
	g.SetPosition(0)
	n = 0
	for g.NextOf(PersonTable, &ev) {
		n++
	}
	assert.Equal(t, 3, n) // events 0, 50, 100
}

// The ids: people and auctions numbered from 1000 in the order they are
// generated; sellers, bidders and bids' auctions among the people and
// auctions that exist or are at most the lead ahead.
func TestIDsAndReferences(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Seed = 3
	g := newGen(t, cfg)
	var ev Event
	people, auctions := int64(0), int64(0) // generated so far
	for range 300000 {
		require.True(t, g.Next(&ev))
		last := people - 1 // newest person, base 0
		lo := max(0, last+1-cfg.NumActivePeople)
		switch ev.Table {
		case PersonTable:
			require.Equal(t, FirstPersonID+people, ev.Person.ID)
			people++
		case AuctionTable:
			require.Equal(t, FirstAuctionID+auctions, ev.Auction.ID)
			auctions++
			s := ev.Auction.Seller - FirstPersonID
			require.True(t, s >= lo && s <= last+PersonIDLead, "seller %d, newest person %d", s, last)
			require.GreaterOrEqual(t, ev.Auction.Category, int64(FirstCategoryID))
			require.Less(t, ev.Auction.Category, int64(FirstCategoryID+Categories))
		case BidTable:
			a := ev.Bid.Auction - FirstAuctionID
			lastA := auctions - 1
			require.True(t, a >= max(0, lastA-cfg.NumInFlightAuctions) && a <= lastA+AuctionIDLead, "auction %d, newest %d", a, lastA)
			b := ev.Bid.Bidder - FirstPersonID
			require.True(t, b >= lo && b <= last+PersonIDLead, "bidder %d, newest person %d", b, last)
		}
	}
}

func TestHotFractions(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Seed = 11
	g := newGen(t, cfg)
	var ev Event
	var auctions, hotSellers, bids, hotAuctions, hotBidders, hotChannels int
	people, nAuctions := int64(0), int64(0)
	for range 1000000 {
		g.Next(&ev)
		switch ev.Table {
		case PersonTable:
			people++
		case AuctionTable:
			nAuctions++
			auctions++
			if ev.Auction.Seller-FirstPersonID == (people-1)/HotBatch*HotBatch {
				hotSellers++
			}
		case BidTable:
			bids++
			if ev.Bid.Auction-FirstAuctionID == (nAuctions-1)/HotBatch*HotBatch {
				hotAuctions++
			}
			if ev.Bid.Bidder-FirstPersonID == (people-1)/HotBatch*HotBatch+1 {
				hotBidders++
			}
			if slices.Contains(hotChannels4(), string(ev.Bid.Channel)) {
				hotChannels++
			}
		}
	}
	frac := func(a, b int) float64 { return float64(a) / float64(b) }
	// 1 - 1/ratio, plus the random choices that hit the hot item.
	assert.InDelta(t, 0.75, frac(hotSellers, auctions), 0.01)
	assert.InDelta(t, 0.5, frac(hotAuctions, bids), 0.01)
	assert.InDelta(t, 0.75, frac(hotBidders, bids), 0.01)
	assert.InDelta(t, 0.5, frac(hotChannels, bids), 0.005)
}

func hotChannels4() []string { return []string{"Google", "Facebook", "Baidu", "Apple"} }

var channelIDRe = regexp.MustCompile(`(&|^)channel_id=([^&]*)`)

func TestChannelsAndURLs(t *testing.T) {
	assert.Equal(t, int32(0), channelID(0))
	assert.Equal(t, int32(math.MinInt32), channelID(1)) // Math.abs(Integer.MIN_VALUE)
	assert.Equal(t, int32(1<<30), channelID(2))
	assert.Equal(t, int32(1<<30), channelID(3))      // abs(0xC0000000)
	assert.Equal(t, int32(1610612736), channelID(5)) // abs(0xA0000000)

	// Nine channels in ten have a channel_id.
	with := 0
	for i := range Channels {
		if _, ok := ChannelID(i); ok {
			with++
		}
	}
	assert.InDelta(t, 9000, with, 150)

	urlRe := regexp.MustCompile(`^https://www\.nexmark\.com/[a-z_]{3,4}/[a-z_]{3,4}/[a-z_]{3,4}/item\.htm\?query=1(&channel_id=-?[0-9]+)?$`)
	g := newGen(t, DefaultConfig())
	var ev Event
	seen := map[string]bool{}
	for range 20000 {
		require.True(t, g.NextOf(BidTable, &ev))
		ch, url := string(ev.Bid.Channel), string(ev.Bid.URL)
		require.Regexp(t, urlRe, url)
		m := channelIDRe.FindStringSubmatch(url)
		if slices.Contains(hotChannels4(), ch) {
			assert.Nil(t, m, "a hot channel's URL has no channel_id: %s", url)
			continue
		}
		num, ok := cutPrefix(ch, "channel-")
		require.True(t, ok, ch)
		i, err := strconv.Atoi(num)
		require.NoError(t, err)
		require.True(t, i >= 0 && i < Channels)
		id, has := ChannelID(i)
		if has {
			require.NotNil(t, m, url)
			assert.Equal(t, strconv.Itoa(int(id)), m[2]) // what q21 extracts
		} else {
			assert.Nil(t, m)
		}
		seen[ch] = true
	}
	assert.Greater(t, len(seen), 5000)
}

func cutPrefix(s, p string) (string, bool) {
	if len(s) >= len(p) && s[:len(p)] == p {
		return s[len(p):], true
	}
	return s, false
}

func TestChannelKeepsItsURL(t *testing.T) {
	g := newGen(t, DefaultConfig())
	var ev Event
	urls := map[string]string{}
	for range 50000 {
		g.NextOf(BidTable, &ev)
		ch := string(ev.Bid.Channel)
		if u, ok := urls[ch]; ok {
			require.Equal(t, u, string(ev.Bid.URL), ch)
		}
		urls[ch] = string(ev.Bid.URL)
	}
	hot := map[string]bool{}
	for _, c := range hotChannels4() {
		hot[urls[c]] = true
	}
	assert.Len(t, hot, 4, "four hot channels, four URLs")
}

func TestStrings(t *testing.T) {
	emailRe := regexp.MustCompile(`^([a-z ]{0,6})@([a-z ]{0,4})\.com$`)
	cardRe := regexp.MustCompile(`^[0-9]{4} [0-9]{4} [0-9]{4} [0-9]{4}$`)
	wordRe := regexp.MustCompile(`^[a-z ]*$`)
	names := map[string]bool{}
	for _, f := range firstNames {
		for _, l := range lastNames {
			names[f+" "+l] = true
		}
	}
	cfg := DefaultConfig()
	cfg.Seed = 5
	g := newGen(t, cfg)
	var ev Event
	for range 200000 {
		g.Next(&ev)
		switch ev.Table {
		case PersonTable:
			p := &ev.Person
			assert.True(t, names[string(p.Name)], string(p.Name))
			m := emailRe.FindStringSubmatch(string(p.EmailAddress))
			require.NotNil(t, m, string(p.EmailAddress))
			for _, part := range m[1:] {
				assert.Equal(t, trimSpaces(part), part, "trimmed: %q", p.EmailAddress)
			}
			assert.Regexp(t, cardRe, string(p.CreditCard))
			assert.Contains(t, usCities, string(p.City))
			assert.Contains(t, usStates, string(p.State))
			checkExtra(t, p.Extra)
		case AuctionTable:
			a := &ev.Auction
			for _, s := range []struct {
				v   []byte
				max int
			}{{a.ItemName, 19}, {a.Description, 99}} {
				assert.LessOrEqual(t, len(s.v), s.max)
				assert.Regexp(t, wordRe, string(s.v))
				assert.Equal(t, trimSpaces(string(s.v)), string(s.v))
			}
			assert.True(t, a.InitialBid >= 100 && a.InitialBid <= 100000000, a.InitialBid)
			assert.GreaterOrEqual(t, a.Reserve, a.InitialBid+100)
			assert.Greater(t, a.Expires, ev.DateTime)
			checkExtra(t, a.Extra)
		case BidTable:
			assert.True(t, ev.Bid.Price >= 100 && ev.Bid.Price <= 100000000, ev.Bid.Price)
			checkExtra(t, ev.Bid.Extra)
		}
	}
}

func trimSpaces(s string) string {
	for len(s) > 0 && s[0] == ' ' {
		s = s[1:]
	}
	for len(s) > 0 && s[len(s)-1] == ' ' {
		s = s[:len(s)-1]
	}
	return s
}

// checkExtra: the characters of Java's signed remainder, 'H' to 'z'.
func checkExtra(t *testing.T, s []byte) {
	for _, c := range s {
		if c < 'H' || c > 'z' {
			t.Fatalf("extra holds %q", c)
		}
	}
}

// The extra strings bring each record to its average size, ±20%.
func TestExtraSizes(t *testing.T) {
	cfg := DefaultConfig()
	g := newGen(t, cfg)
	var ev Event
	var sum, n [3]float64
	for range 500000 {
		g.Next(&ev)
		var size, avg int
		switch ev.Table {
		case PersonTable:
			p := &ev.Person
			size = 8 + len(p.Name) + len(p.EmailAddress) + len(p.CreditCard) + len(p.City) + len(p.State)
			avg = 200
			checkExtraLen(t, size, avg, len(p.Extra))
			size += len(p.Extra)
		case AuctionTable:
			a := &ev.Auction
			size = 8 + len(a.ItemName) + len(a.Description) + 40
			avg = 500
			checkExtraLen(t, size, avg, len(a.Extra))
			size += len(a.Extra)
		case BidTable:
			size = 32
			avg = 100
			checkExtraLen(t, size, avg, len(ev.Bid.Extra))
			size += len(ev.Bid.Extra)
		}
		sum[ev.Table] += float64(size)
		n[ev.Table]++
	}
	assert.InDelta(t, 200, sum[0]/n[0], 2)
	assert.InDelta(t, 500, sum[1]/n[1], 2)
	assert.InDelta(t, 100, sum[2]/n[2], 1)

	// A record already bigger than its average gets no extra.
	cfg.AvgBidByteSize = 20
	g = newGen(t, cfg)
	g.NextOf(BidTable, &ev)
	assert.Empty(t, ev.Bid.Extra)
}

func checkExtraLen(t *testing.T, size, avg, n int) {
	d := avg - size
	delta := int(math.Floor(float64(d)*0.2 + 0.5))
	if n < d-delta || n >= d+max(delta, 1) {
		t.Fatalf("extra of %d bytes for a record of %d, average %d", n, size, avg)
	}
}

// Prices are log-uniform over $1 to $1,000,000: each decade equally likely.
func TestPriceDistribution(t *testing.T) {
	g := newGen(t, DefaultConfig())
	var ev Event
	var decades [7]int
	const n = 200000
	for range n {
		g.NextOf(BidTable, &ev)
		d := int(math.Floor(math.Log10(float64(ev.Bid.Price) / 100)))
		decades[min(d, 6)]++
	}
	for d := range 6 {
		assert.InDelta(t, 1.0/6, float64(decades[d])/n, 0.006, "decade %d", d)
	}
	assert.LessOrEqual(t, decades[6], n/10000)
}

// Auctions last on average as long as it takes to generate
// NumInFlightAuctions auctions: 1666 events, 166 ms at the default rate.
func TestAuctionLengths(t *testing.T) {
	g := newGen(t, DefaultConfig())
	var ev Event
	var sum float64
	const n = 50000
	for range n {
		g.NextOf(AuctionTable, &ev)
		l := ev.Auction.Expires - ev.DateTime
		require.True(t, l >= 1 && l <= 2*167, l)
		sum += float64(l)
	}
	assert.InDelta(t, 167, sum/n, 2)
}

// Generators that take one table each produce the sequence's events of
// that table, at the sequence's times.
func TestNextOfSharesTheClock(t *testing.T) {
	for _, group := range []int64{1, 1000} {
		cfg := DefaultConfig()
		cfg.Seed = 9
		cfg.OutOfOrderGroupSize = group
		cfg.FirstEventID, cfg.FirstEventNumber = 1, 1
		all := newGen(t, cfg)
		var per [3]*Generator
		for _, tb := range Tables {
			per[tb] = newGen(t, cfg)
		}
		var ev, one Event
		for range 20000 {
			require.True(t, all.Next(&ev))
			require.True(t, per[ev.Table].NextOf(ev.Table, &one))
			require.Equal(t, jsonOf(&ev), jsonOf(&one))
			require.Equal(t, ev.Index, one.Index)
		}
	}
}

func TestOutOfOrderGroups(t *testing.T) {
	cfg := DefaultConfig()
	cfg.OutOfOrderGroupSize = 1000
	g := newGen(t, cfg)
	var ev Event
	var counts [3]int
	inOrder := 0
	prev := int64(0)
	for group := range 20 {
		seen := map[int64]bool{}
		for range 1000 {
			g.Next(&ev)
			counts[ev.Table]++
			seen[ev.ID] = true
			if ev.DateTime >= prev {
				inOrder++
			}
			prev = ev.DateTime
		}
		// Each group is a permutation of its event numbers.
		require.Len(t, seen, 1000)
		for id := range seen {
			require.Equal(t, int64(group), id/1000)
		}
	}
	assert.Equal(t, [3]int{400, 1200, 18400}, counts)
	assert.Less(t, inOrder, 20000*9/10, "some events are out of order")
}

// The Flink connector's offsets: event ids and numbers from 1, so that the
// first event is an auction (id 2, the second auction of epoch 0).
func TestFlinkOffsets(t *testing.T) {
	cfg := DefaultConfig()
	cfg.FirstEventID, cfg.FirstEventNumber = 1, 1
	g := newGen(t, cfg)
	var ev Event
	g.Next(&ev)
	assert.Equal(t, AuctionTable, ev.Table)
	assert.Equal(t, int64(1001), ev.Auction.ID)
	assert.Equal(t, int64(2), ev.ID)
	assert.Equal(t, cfg.BaseTime, ev.DateTime) // event number 1: 0.1 ms
	for ev.Table != PersonTable {
		g.Next(&ev)
	}
	assert.Equal(t, int64(48), ev.Index)
	assert.Equal(t, int64(1001), ev.Person.ID)
}

func TestFlinkBidderIDs(t *testing.T) {
	cfg := DefaultConfig()
	a := newGen(t, cfg)
	cfg.FlinkBidderIDs = true
	b := newGen(t, cfg)
	var ea, eb Event
	for range 1000 {
		a.NextOf(BidTable, &ea)
		b.NextOf(BidTable, &eb)
		require.Equal(t, ea.Bid.Bidder+FirstPersonID, eb.Bid.Bidder)
		require.Equal(t, ea.Bid.Auction, eb.Bid.Auction)
	}
}

// Persons and the auctions they sell fall in the same windows (Nexmark's
// q8 joins them over 10-second tumbling windows): the hot seller is one of
// the last 100 people, half a second of events back at the default rate.
func TestSellersInTheirAuctionsWindows(t *testing.T) {
	g := newGen(t, DefaultConfig())
	var ev Event
	personTime := map[int64]int64{}
	const window = 10000
	same, auctions := 0, 0
	for range 1000000 {
		g.Next(&ev)
		switch ev.Table {
		case PersonTable:
			personTime[ev.Person.ID] = ev.DateTime
		case AuctionTable:
			auctions++
			if pt, ok := personTime[ev.Auction.Seller]; ok && pt/window == ev.DateTime/window {
				same++
			}
		}
	}
	assert.Greater(t, float64(same)/float64(auctions), 0.7)
}

func TestNoAllocations(t *testing.T) {
	g := newGen(t, DefaultConfig())
	var ev Event
	g.Next(&ev) // the shared tables
	assert.Zero(t, testing.AllocsPerRun(10000, func() { g.Next(&ev) }))
	assert.Zero(t, testing.AllocsPerRun(2000, func() { g.NextOf(PersonTable, &ev) }))
	assert.Zero(t, testing.AllocsPerRun(2000, func() { g.NextOf(AuctionTable, &ev) }))
}

const pinnedHash = 0xd9af6ea55857e855
