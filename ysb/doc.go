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
//
// The original benchmark's pipeline (Yahoo's: JSON events in Kafka,
// campaigns and results in Redis) is here too: WriteCampaignsRedis and
// LoadCampaignsRedis (its setup's layout), AppendEventJSON and JSONLayout
// (its events), Produce (a paced producer with a log of what it sent)
// and Check (the windows in Redis against ReferenceDelay over the log, in the
// Kafka source's stream order, and the latency per window). The run
// itself is a SQL program's (package pipeline, YSBKafkaProgram).
package ysb
