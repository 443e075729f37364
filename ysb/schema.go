package ysb

// Tuple layout: 128 bytes, little-endian, identical to ysb_cost.c so the same
// files and bundles feed both the C yardstick and the engine. 128 bytes is two
// cache lines' worth of alignment-friendly stride; fields not used by the query
// (user_id, page_id, ad_type, ip) are present so that scans pay the realistic
// memory bandwidth.
const (
	TupleSize = 128

	OffEventTime = 0  // int64, event time in ms
	OffUserID    = 8  // 16 bytes
	OffPageID    = 24 // 16 bytes
	OffAdID      = 40 // 16 bytes, UUID bytes in the order of their text form
	OffAdType    = 56 // int32: 0 banner, 1 modal, 2 sponsored-search, 3 mail, 4 mobile
	OffEventType = 60 // int32: 0 view, 1 click, 2 purchase; any other value is not a view
	OffIP        = 64 // int32; bytes 68..127 are zero padding
)

// Event types stored at OffEventType. Only EventView passes the query's filter.
const (
	EventView     = 0
	EventClick    = 1
	EventPurchase = 2
)

// WindowMs is the benchmark's tumbling event-time window.
const WindowMs = 10000
