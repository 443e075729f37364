package nexmark

import (
	"encoding/binary"
	"strconv"
	"unicode/utf8"

	"github.com/saber-hx/saber-hx/temporal"
)

// AppendJSON appends ev as one flat JSON object of its table's columns,
// named and ordered as the Nexmark project's person, auction and bid views
// (queries/ddl_views.sql) and without a newline:
//
//	{"id":1000,"name":"Peter Shultz","emailAddress":"...","creditCard":"...","city":"...","state":"...","dateTime":"2015-07-15 00:00:00.000","extra":"..."}
//	{"id":1000,"itemName":"...","description":"...","initialBid":..,"reserve":..,"dateTime":"...","expires":"...","seller":..,"category":..,"extra":"..."}
//	{"auction":..,"bidder":..,"price":..,"channel":"...","url":"...","dateTime":"...","extra":"..."}
//
// BIGINT columns are JSON numbers; TIMESTAMP(3) columns are strings in
// SQL's form, yyyy-MM-dd HH:mm:ss.SSS, UTC, which Flink's JSON format
// reads (its default timestamp-format.standard, SQL) and temporal's
// ParseTimestamp too. (Flink writes the fraction with as few digits as it
// needs, none at a whole second; three always is the same instant.)
// Strings are escaped as JSON needs: the extra strings hold backslashes.
// It allocates only when dst must grow.
func AppendJSON(dst []byte, ev *Event) []byte {
	switch ev.Table {
	case PersonTable:
		return appendPersonJSON(dst, ev)
	case AuctionTable:
		return appendAuctionJSON(dst, ev)
	}
	return appendBidJSON(dst, ev)
}

// AppendKafkaJSON appends ev as one JSON object of the Nexmark project's
// Kafka table (queries/ddl_kafka.sql, with format json, filled by
// insert_kafka.sql from the nexmark connector): its event_type (0 person,
// 1 auction, 2 bid), then the three rows person, auction and bid, the
// event's own as an object of AppendJSON's fields and the other two null:
//
//	{"event_type":2,"person":null,"auction":null,"bid":{"auction":..,"bidder":..,...}}
//
// Flink's JSON format writes a ROW column so, and null for a null one
// (json.encode.ignore-null-fields is false by default). No newline.
func AppendKafkaJSON(dst []byte, ev *Event) []byte {
	dst = append(dst, `{"event_type":`...)
	dst = strconv.AppendInt(dst, int64(ev.Table), 10)
	switch ev.Table {
	case PersonTable:
		dst = append(dst, `,"person":`...)
		dst = appendPersonJSON(dst, ev)
		dst = append(dst, `,"auction":null,"bid":null}`...)
	case AuctionTable:
		dst = append(dst, `,"person":null,"auction":`...)
		dst = appendAuctionJSON(dst, ev)
		dst = append(dst, `,"bid":null}`...)
	default:
		dst = append(dst, `,"person":null,"auction":null,"bid":`...)
		dst = appendBidJSON(dst, ev)
		dst = append(dst, '}')
	}
	return dst
}

func appendPersonJSON(dst []byte, ev *Event) []byte {
	p := &ev.Person
	dst = append(dst, `{"id":`...)
	dst = strconv.AppendInt(dst, p.ID, 10)
	dst = appendField(dst, `,"name":`, p.Name)
	dst = appendField(dst, `,"emailAddress":`, p.EmailAddress)
	dst = appendField(dst, `,"creditCard":`, p.CreditCard)
	dst = appendField(dst, `,"city":`, p.City)
	dst = appendField(dst, `,"state":`, p.State)
	dst = appendTime(dst, `,"dateTime":`, ev.DateTime)
	dst = appendField(dst, `,"extra":`, p.Extra)
	return append(dst, '}')
}

func appendAuctionJSON(dst []byte, ev *Event) []byte {
	a := &ev.Auction
	dst = append(dst, `{"id":`...)
	dst = strconv.AppendInt(dst, a.ID, 10)
	dst = appendField(dst, `,"itemName":`, a.ItemName)
	dst = appendField(dst, `,"description":`, a.Description)
	dst = append(dst, `,"initialBid":`...)
	dst = strconv.AppendInt(dst, a.InitialBid, 10)
	dst = append(dst, `,"reserve":`...)
	dst = strconv.AppendInt(dst, a.Reserve, 10)
	dst = appendTime(dst, `,"dateTime":`, ev.DateTime)
	dst = appendTime(dst, `,"expires":`, a.Expires)
	dst = append(dst, `,"seller":`...)
	dst = strconv.AppendInt(dst, a.Seller, 10)
	dst = append(dst, `,"category":`...)
	dst = strconv.AppendInt(dst, a.Category, 10)
	dst = appendField(dst, `,"extra":`, a.Extra)
	return append(dst, '}')
}

func appendBidJSON(dst []byte, ev *Event) []byte {
	b := &ev.Bid
	dst = append(dst, `{"auction":`...)
	dst = strconv.AppendInt(dst, b.Auction, 10)
	dst = append(dst, `,"bidder":`...)
	dst = strconv.AppendInt(dst, b.Bidder, 10)
	dst = append(dst, `,"price":`...)
	dst = strconv.AppendInt(dst, b.Price, 10)
	dst = appendField(dst, `,"channel":`, b.Channel)
	dst = appendField(dst, `,"url":`, b.URL)
	dst = appendTime(dst, `,"dateTime":`, ev.DateTime)
	dst = appendField(dst, `,"extra":`, b.Extra)
	return append(dst, '}')
}

func appendTime(dst []byte, name string, ms int64) []byte {
	dst = append(dst, name...)
	dst = append(dst, '"')
	dst = temporal.AppendTimestamp(dst, ms)
	return append(dst, '"')
}

func appendField(dst []byte, name string, s []byte) []byte {
	dst = append(dst, name...)
	return appendJSONString(dst, s)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string: quotes, backslashes and
// control characters escaped, invalid UTF-8 written as U+FFFD (the
// generator's strings are ASCII; an Event filled by its caller may not be).
// Eight bytes at a time are tested for anything to escape (SWAR), and
// copied at once when there is none.
func appendJSONString(dst []byte, s []byte) []byte {
	dst = append(dst, '"')
	start, i := 0, 0
	for i < len(s) {
		if i+8 <= len(s) && !special8(binary.LittleEndian.Uint64(s[i:])) {
			i += 8
			continue
		}
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRune(s[i:])
			if r != utf8.RuneError || n != 1 {
				i += n
				continue
			}
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
		}
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// special8 reports whether any of the 8 bytes of x is below 0x20, a
// quote, a backslash or not ASCII.
func special8(x uint64) bool {
	q := x ^ ('"' * ones)
	b := x ^ ('\\' * ones)
	// The borrow tricks of "Bit Twiddling Hacks": (v - 0x01..) &^ v has a
	// high bit set iff some byte of v is zero (likewise below 0x20);
	// exact as a yes or no, which is all this needs.
	return ((x-0x20*ones)&^x|(q-ones)&^q|(b-ones)&^b|x)&highs != 0
}
