package nexmark

import (
	"encoding/binary"
	"strconv"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/strview"
)

// The tables' tuples: the columns of the Nexmark project's person, auction
// and bid views (queries/ddl_views.sql over ddl_gen.sql), BIGINT as int64,
// VARCHAR as a 16-byte string view, TIMESTAMP(3) as int64 ms (Logical
// Time). The event time, dateTime, comes first, at offset 0, as every
// saber-hx stream's; the other columns follow in the DDL's order. No column
// is nullable: the generator fills every field.
const (
	PersonTupleSize  = 112
	AuctionTupleSize = 104
	BidTupleSize     = 80
)

// Offsets of the columns in the tuples.
const (
	offTime = 0

	offPersonID      = 8
	offPersonName    = 16
	offPersonEmail   = 32
	offPersonCard    = 48
	offPersonCity    = 64
	offPersonState   = 80
	offPersonExtra   = 96
	offAuctionID     = 8
	offAuctionItem   = 16
	offAuctionDesc   = 32
	offAuctionInit   = 48
	offAuctionRes    = 56
	offAuctionExp    = 64
	offAuctionSeller = 72
	offAuctionCat    = 80
	offAuctionExtra  = 88
	offBidAuction    = 8
	offBidBidder     = 16
	offBidPrice      = 24
	offBidChannel    = 32
	offBidURL        = 48
	offBidExtra      = 64
)

func timeAttr(name string, off int) query.Attribute {
	return query.Attribute{Name: name, Type: query.Int64, Offset: off, Logical: query.Time}
}

func intAttr(name string, off int) query.Attribute {
	return query.Attribute{Name: name, Type: query.Int64, Offset: off}
}

func strAttr(name string, off int) query.Attribute {
	return query.Attribute{Name: name, Type: query.String, Offset: off}
}

func mustSchema(size int, attrs ...query.Attribute) *query.Schema {
	s, err := query.NewSchema(size, attrs...)
	if err != nil {
		panic(err)
	}
	return s
}

// PersonSchema is the person table: dateTime TIMESTAMP(3), id BIGINT, name,
// emailAddress, creditCard, city, state, extra VARCHAR.
func PersonSchema() *query.Schema {
	return mustSchema(PersonTupleSize,
		timeAttr("dateTime", offTime),
		intAttr("id", offPersonID),
		strAttr("name", offPersonName),
		strAttr("emailAddress", offPersonEmail),
		strAttr("creditCard", offPersonCard),
		strAttr("city", offPersonCity),
		strAttr("state", offPersonState),
		strAttr("extra", offPersonExtra),
	)
}

// AuctionSchema is the auction table: dateTime TIMESTAMP(3), id BIGINT,
// itemName, description VARCHAR, initialBid, reserve BIGINT, expires
// TIMESTAMP(3), seller, category BIGINT, extra VARCHAR.
func AuctionSchema() *query.Schema {
	return mustSchema(AuctionTupleSize,
		timeAttr("dateTime", offTime),
		intAttr("id", offAuctionID),
		strAttr("itemName", offAuctionItem),
		strAttr("description", offAuctionDesc),
		intAttr("initialBid", offAuctionInit),
		intAttr("reserve", offAuctionRes),
		timeAttr("expires", offAuctionExp),
		intAttr("seller", offAuctionSeller),
		intAttr("category", offAuctionCat),
		strAttr("extra", offAuctionExtra),
	)
}

// BidSchema is the bid table: dateTime TIMESTAMP(3), auction, bidder, price
// BIGINT, channel, url, extra VARCHAR.
func BidSchema() *query.Schema {
	return mustSchema(BidTupleSize,
		timeAttr("dateTime", offTime),
		intAttr("auction", offBidAuction),
		intAttr("bidder", offBidBidder),
		intAttr("price", offBidPrice),
		strAttr("channel", offBidChannel),
		strAttr("url", offBidURL),
		strAttr("extra", offBidExtra),
	)
}

// Schema is table t's schema (a new one on every call).
func (t Table) Schema() *query.Schema {
	switch t {
	case PersonTable:
		return PersonSchema()
	case AuctionTable:
		return AuctionSchema()
	}
	return BidSchema()
}

// TupleSize is the size of table t's tuples.
func (t Table) TupleSize() int {
	switch t {
	case PersonTable:
		return PersonTupleSize
	case AuctionTable:
		return AuctionTupleSize
	}
	return BidTupleSize
}

func putInt(dst []byte, off int, v int64) {
	binary.LittleEndian.PutUint64(dst[off:off+8], uint64(v))
}

func getInt(src []byte, off int) int64 {
	return int64(binary.LittleEndian.Uint64(src[off : off+8]))
}

// putString writes the view of s: inline when short; a reference when s
// lies in the generator's shared tables, which live as long as the
// process; else a copy into a.
func putString(dst []byte, s []byte, t *tables, a *strview.Arena) {
	switch {
	case len(s) <= strview.MaxInline || t.holds(s):
		strview.PutRef(dst, s)
	case a == nil:
		panic("nexmark: EncodeTuple needs an arena for a string of " + strconv.Itoa(len(s)) + " bytes that the generator made for one event")
	default:
		strview.Put(dst, s, a)
	}
}

// EncodeTuple writes ev as a tuple of its table into dst[:ev.Table.TupleSize()].
//
// Strings of up to 12 bytes are held in their views. Longer ones are
// referenced where they lie when they are the generator's shared strings
// (names, cities, channels, URLs, extra strings: for the life of the
// process); the strings made for one event (email addresses, credit card
// numbers, item names and descriptions) are copied into a, and the tuple
// is valid until a's Reset or Free. a may be nil only when no such string
// is longer than 12 bytes; EncodeTuple panics otherwise. A string of an
// Event that the caller filled itself is copied into a as well.
func EncodeTuple(dst []byte, ev *Event, a *strview.Arena) {
	t := static()
	switch ev.Table {
	case PersonTable:
		p := &ev.Person
		_ = dst[PersonTupleSize-1]
		putInt(dst, offTime, ev.DateTime)
		putInt(dst, offPersonID, p.ID)
		putString(dst[offPersonName:], p.Name, t, a)
		putString(dst[offPersonEmail:], p.EmailAddress, t, a)
		putString(dst[offPersonCard:], p.CreditCard, t, a)
		putString(dst[offPersonCity:], p.City, t, a)
		putString(dst[offPersonState:], p.State, t, a)
		putString(dst[offPersonExtra:], p.Extra, t, a)
	case AuctionTable:
		x := &ev.Auction
		_ = dst[AuctionTupleSize-1]
		putInt(dst, offTime, ev.DateTime)
		putInt(dst, offAuctionID, x.ID)
		putString(dst[offAuctionItem:], x.ItemName, t, a)
		putString(dst[offAuctionDesc:], x.Description, t, a)
		putInt(dst, offAuctionInit, x.InitialBid)
		putInt(dst, offAuctionRes, x.Reserve)
		putInt(dst, offAuctionExp, x.Expires)
		putInt(dst, offAuctionSeller, x.Seller)
		putInt(dst, offAuctionCat, x.Category)
		putString(dst[offAuctionExtra:], x.Extra, t, a)
	default:
		b := &ev.Bid
		_ = dst[BidTupleSize-1]
		putInt(dst, offTime, ev.DateTime)
		putInt(dst, offBidAuction, b.Auction)
		putInt(dst, offBidBidder, b.Bidder)
		putInt(dst, offBidPrice, b.Price)
		putString(dst[offBidChannel:], b.Channel, t, a)
		putString(dst[offBidURL:], b.URL, t, a)
		putString(dst[offBidExtra:], b.Extra, t, a)
	}
}

// DecodeTuple reads a tuple of table t into ev (Index and ID, which a
// tuple does not hold, become -1). Its strings are strview.Bytes of the
// tuple's views: slices of src itself or of the memory the views
// reference, valid as long as the tuple is.
func DecodeTuple(ev *Event, t Table, src []byte) {
	ev.Table, ev.Index, ev.ID = t, -1, -1
	ev.DateTime = getInt(src, offTime)
	switch t {
	case PersonTable:
		p := &ev.Person
		p.ID = getInt(src, offPersonID)
		p.Name = strview.Bytes(src[offPersonName:])
		p.EmailAddress = strview.Bytes(src[offPersonEmail:])
		p.CreditCard = strview.Bytes(src[offPersonCard:])
		p.City = strview.Bytes(src[offPersonCity:])
		p.State = strview.Bytes(src[offPersonState:])
		p.Extra = strview.Bytes(src[offPersonExtra:])
	case AuctionTable:
		x := &ev.Auction
		x.ID = getInt(src, offAuctionID)
		x.ItemName = strview.Bytes(src[offAuctionItem:])
		x.Description = strview.Bytes(src[offAuctionDesc:])
		x.InitialBid = getInt(src, offAuctionInit)
		x.Reserve = getInt(src, offAuctionRes)
		x.Expires = getInt(src, offAuctionExp)
		x.Seller = getInt(src, offAuctionSeller)
		x.Category = getInt(src, offAuctionCat)
		x.Extra = strview.Bytes(src[offAuctionExtra:])
	default:
		b := &ev.Bid
		b.Auction = getInt(src, offBidAuction)
		b.Bidder = getInt(src, offBidBidder)
		b.Price = getInt(src, offBidPrice)
		b.Channel = strview.Bytes(src[offBidChannel:])
		b.URL = strview.Bytes(src[offBidURL:])
		b.Extra = strview.Bytes(src[offBidExtra:])
	}
}

// FillTuples writes the next events of table t as tuples into dst, as many
// whole tuples as fit or as remain, and returns how many it wrote; the
// other tables' events are skipped (NextOf). Strings go as EncodeTuple
// says, a being the arena of the events' own long strings.
func (g *Generator) FillTuples(dst []byte, t Table, a *strview.Arena) int {
	size := t.TupleSize()
	n := 0
	var ev Event
	for off := 0; off+size <= len(dst); off += size {
		if !g.NextOf(t, &ev) {
			break
		}
		EncodeTuple(dst[off:off+size], &ev, a)
		n++
	}
	return n
}
