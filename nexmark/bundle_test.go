package nexmark

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBundlePeriod(t *testing.T) {
	cfg := DefaultConfig()
	assert.EqualValues(t, 50, BundlePeriod(cfg)) // 10 events per ms
	cfg.EventRate = 10000000
	assert.EqualValues(t, 10000, BundlePeriod(cfg)) // 10,000 per ms
	cfg.EventRate = 7
	assert.EqualValues(t, 350, BundlePeriod(cfg)) // 7 events: 1000 ms
	cfg.EventRate = 10000
	cfg.OutOfOrderGroupSize = 1000
	assert.EqualValues(t, 1000, BundlePeriod(cfg))
}

func newBundle(t *testing.T, cfg Config, events int) *Bundle {
	t.Helper()
	b, err := NewBundle(cfg, events)
	require.NoError(t, err)
	t.Cleanup(b.Free)
	return b
}

func TestBundlePassZeroIsTheSequence(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Seed = 21
	b := newBundle(t, cfg, 100049) // rounded down to 100,000
	assert.EqualValues(t, 100000, b.Events())
	assert.EqualValues(t, 10000, b.Span())
	assert.EqualValues(t, [3]int64{2000, 6000, 92000}, [3]int64{b.Count(PersonTable), b.Count(AuctionTable), b.Count(BidTable)})
	assert.EqualValues(t, 2000, b.People())
	assert.EqualValues(t, 6000, b.Auctions())

	g := newGen(t, cfg)
	var ev, back Event
	var next [3]int
	for range 100000 {
		require.True(t, g.Next(&ev))
		tb := ev.Table
		size := tb.TupleSize()
		DecodeTuple(&back, tb, b.Tuples(tb)[next[tb]*size:(next[tb]+1)*size])
		sameEvent(t, &ev, &back)
		next[tb]++
	}
	// Less than a period: one period.
	small := newBundle(t, cfg, 3)
	assert.EqualValues(t, 50, small.Events())
	_, err := NewBundle(cfg, 0)
	assert.Error(t, err)
}

func TestBundlePasses(t *testing.T) {
	cfg := DefaultConfig()
	b := newBundle(t, cfg, 20000)
	var e0, ep Event
	for _, tb := range Tables {
		size := tb.TupleSize()
		n := int(b.Count(tb))
		dst := make([]byte, n*size)
		for _, pass := range []int64{0, 1, 5} {
			require.Equal(t, n, b.Fill(dst, tb, pass))
			for i := range n {
				DecodeTuple(&e0, tb, b.Tuples(tb)[i*size:(i+1)*size])
				DecodeTuple(&ep, tb, dst[i*size:(i+1)*size])
				dt := pass * b.Span()
				dp, da := pass*b.People(), pass*b.Auctions()
				require.Equal(t, e0.DateTime+dt, ep.DateTime)
				switch tb {
				case PersonTable:
					require.Equal(t, e0.Person.ID+dp, ep.Person.ID)
					require.Equal(t, string(e0.Person.Extra), string(ep.Person.Extra))
				case AuctionTable:
					require.Equal(t, e0.Auction.ID+da, ep.Auction.ID)
					require.Equal(t, e0.Auction.Seller+dp, ep.Auction.Seller)
					require.Equal(t, e0.Auction.Expires+dt, ep.Auction.Expires)
					require.Equal(t, e0.Auction.Reserve, ep.Auction.Reserve)
				case BidTable:
					require.Equal(t, e0.Bid.Auction+da, ep.Bid.Auction)
					require.Equal(t, e0.Bid.Bidder+dp, ep.Bid.Bidder)
					require.Equal(t, e0.Bid.Price, ep.Bid.Price)
					require.Equal(t, string(e0.Bid.URL), string(ep.Bid.URL))
				}
			}
		}
		// A short destination takes the first tuples.
		assert.Equal(t, 3, b.Fill(dst[:3*size+1], tb, 2))
	}
}

// FillAt reads the table's endless stream: pass after pass, any range,
// across the wrap; and the passes' clocks continue one another.
func TestBundleFillAt(t *testing.T) {
	cfg := DefaultConfig()
	b := newBundle(t, cfg, 5000)
	for _, tb := range Tables {
		size := tb.TupleSize()
		n := int(b.Count(tb))
		passes := make([]byte, 3*n*size)
		for p := range 3 {
			b.Fill(passes[p*n*size:(p+1)*n*size], tb, int64(p))
		}
		for _, k := range []int{0, 1, n - 1, n, n + 7, 2*n - 3} {
			for _, cnt := range []int{1, 5, n} {
				if k+cnt > 3*n {
					continue
				}
				dst := make([]byte, cnt*size+size/2)
				b.FillAt(dst, tb, uint64(k))
				require.Equal(t, passes[k*size:(k+cnt)*size], dst[:cnt*size], "%s k=%d n=%d", tb, k, cnt)
			}
		}
		var ev Event
		prev := int64(0)
		for i := range 3 * n {
			DecodeTuple(&ev, tb, passes[i*size:(i+1)*size])
			require.GreaterOrEqual(t, ev.DateTime, prev)
			prev = ev.DateTime
		}
	}
}

// Every pass's references land on its own people and auctions.
func TestBundleReferencesStayInTheirPass(t *testing.T) {
	cfg := DefaultConfig()
	b := newBundle(t, cfg, 50000)
	const pass = 3
	var ev Event
	people, auctions := map[int64]bool{}, map[int64]bool{}
	fill := func(tb Table) []byte {
		dst := make([]byte, int(b.Count(tb))*tb.TupleSize())
		b.Fill(dst, tb, pass)
		return dst
	}
	for tup := fill(PersonTable); len(tup) > 0; tup = tup[PersonTupleSize:] {
		DecodeTuple(&ev, PersonTable, tup)
		people[ev.Person.ID] = true
	}
	for tup := fill(AuctionTable); len(tup) > 0; tup = tup[AuctionTupleSize:] {
		DecodeTuple(&ev, AuctionTable, tup)
		auctions[ev.Auction.ID] = true
	}
	missing := 0
	for tup := fill(AuctionTable); len(tup) > 0; tup = tup[AuctionTupleSize:] {
		DecodeTuple(&ev, AuctionTable, tup)
		if !people[ev.Auction.Seller] {
			missing++ // a lead: a person of the pass's last few
			require.Greater(t, ev.Auction.Seller, FirstPersonID+pass*b.People()+b.People()-PersonIDLead-1)
		}
	}
	for tup := fill(BidTable); len(tup) > 0; tup = tup[BidTupleSize:] {
		DecodeTuple(&ev, BidTable, tup)
		if !auctions[ev.Bid.Auction] {
			missing++
			require.Greater(t, ev.Bid.Auction, FirstAuctionID+pass*b.Auctions()+b.Auctions()-AuctionIDLead-1)
		}
		if !people[ev.Bid.Bidder] {
			missing++
			require.Greater(t, ev.Bid.Bidder, FirstPersonID+pass*b.People()+b.People()-PersonIDLead-1)
		}
	}
	assert.Less(t, missing, 50)
}
