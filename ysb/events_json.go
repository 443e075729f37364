package ysb

import (
	"encoding/binary"
	"strconv"

	"github.com/saber-hx/saber-hx/source"
)

// AdTypes and EventTypes are the labels of the original benchmark's
// ad_type and event_type, by the int32 value a tuple stores.
var (
	AdTypes    = []string{"banner", "modal", "sponsored-search", "mail", "mobile"}
	EventTypes = []string{"view", "click", "purchase"}
)

// AppendEventJSON appends tuple (one TupleSize-byte YSB tuple) as the
// original benchmark's generator writes an event, keys in its order and
// with its separators:
//
//	{"user_id": "…", "page_id": "…", "ad_id": "…", "ad_type": "banner", "event_type": "view", "event_time": "1700000000000", "ip_address": "1.2.3.4"}
//
// The ids are lowercase UUID text, event_time a quoted decimal of epoch
// ms, ip_address the dotted quad of OffIP's int32, its most significant
// byte first (package source's IPv4). An ad_type or event_type outside
// the labels (AdTypes, EventTypes) is written as its decimal value, which
// JSONLayout's decoder refuses. No allocation when dst has room.
func AppendEventJSON(dst []byte, tuple []byte) []byte {
	p := tuple[:TupleSize:TupleSize]
	le := binary.LittleEndian
	dst = append(dst, `{"user_id": "`...)
	dst = UUID(p[OffUserID : OffUserID+16]).appendText(dst)
	dst = append(dst, `", "page_id": "`...)
	dst = UUID(p[OffPageID : OffPageID+16]).appendText(dst)
	dst = append(dst, `", "ad_id": "`...)
	dst = UUID(p[OffAdID : OffAdID+16]).appendText(dst)
	dst = append(dst, `", "ad_type": "`...)
	dst = appendLabel(dst, AdTypes, int32(le.Uint32(p[OffAdType:])))
	dst = append(dst, `", "event_type": "`...)
	dst = appendLabel(dst, EventTypes, int32(le.Uint32(p[OffEventType:])))
	dst = append(dst, `", "event_time": "`...)
	dst = strconv.AppendInt(dst, int64(le.Uint64(p[OffEventTime:])), 10)
	dst = append(dst, `", "ip_address": "`...)
	ip := le.Uint32(p[OffIP:])
	for i := 3; i >= 0; i-- {
		dst = strconv.AppendUint(dst, uint64(ip>>(8*i)&0xff), 10)
		if i > 0 {
			dst = append(dst, '.')
		}
	}
	return append(dst, `"}`...)
}

func appendLabel(dst []byte, labels []string, v int32) []byte {
	if v >= 0 && int(v) < len(labels) {
		return append(dst, labels[v]...)
	}
	return strconv.AppendInt(dst, int64(v), 10)
}

// EventJSONMaxLen bounds the length of AppendEventJSON's output.
const EventJSONMaxLen = 288

// JSONLayout is the tuple layout of the original benchmark's JSON events
// for package source's JSONDecoder: the inverse of AppendEventJSON (bytes
// 68..127, which no column covers, are zero as in generated tuples).
func JSONLayout() *source.Layout {
	l, err := source.NewLayout(TupleSize,
		source.Column{Name: "user_id", Kind: source.UUID, Offset: OffUserID},
		source.Column{Name: "page_id", Kind: source.UUID, Offset: OffPageID},
		source.Column{Name: "ad_id", Kind: source.UUID, Offset: OffAdID},
		source.Column{Name: "ad_type", Kind: source.Enum, Offset: OffAdType, Labels: AdTypes},
		source.Column{Name: "event_type", Kind: source.Enum, Offset: OffEventType, Labels: EventTypes},
		source.Column{Name: "event_time", Kind: source.Int64, Offset: OffEventTime},
		source.Column{Name: "ip_address", Kind: source.IPv4, Offset: OffIP},
	)
	if err != nil {
		panic(err) // a constant layout: a bug if it does not validate
	}
	return l
}
