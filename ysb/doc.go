// Package ysb holds the data side of the Yahoo Streaming Benchmark (YSB) for
// saber-hx: the 128-byte tuple layout, the campaigns join table, a deterministic
// event generator that reproduces the C COST yardstick (shared/anchors/ysb_cost.c)
// byte for byte, a closed-form oracle of what that generator implies for any
// window (cheap enough to validate runs at 100+ M tuples/s), a plain
// single-threaded reference implementation of the query that defines the
// semantics the engine must reproduce, and file helpers.
//
// The query: keep view events (event_type == 0), join ad_id to campaign_id, and
// per campaign per tumbling event-time window compute COUNT(*) and
// MAX(event_time). See Reference for the exact treatment of late and unmatched
// tuples.
package ysb
