// Package nexmark generates the events of the Nexmark benchmark as the
// Nexmark project's generator does (github.com/nexmark/nexmark,
// nexmark-flink/.../generator): people, auctions and bids in one event
// sequence, 1:3:46, with its ids, hot sellers, bidders and auctions,
// prices, channels and URLs, strings and their lengths, and event times
// advancing at the event rate; docs/nexmark.md sets out the rules and
// where the project states them.
//
// A Generator fills an Event per call (Next, or NextOf for one table)
// without allocating. Event i of a Config is the same whichever way it is
// reached (each event draws from its own random stream, seeded by
// Config.Seed and its event id), so generators of one Config, one per
// table or one per range of events, produce parts of one sequence on one
// clock: a person and the auctions that name it as their seller fall in
// the same windows.
//
// EncodeTuple writes an event as a tuple of its table (PersonSchema,
// AuctionSchema, BidSchema: the project's DDL with dateTime at offset 0);
// AppendJSON and AppendKafkaJSON write it as a JSON line, flat or in the
// nested form of the project's Kafka table; a Bundle holds a stretch of
// the sequence as tuples, to be replayed pass after pass with later times
// and fresh ids.
//
// The sequence is deterministic by seed but not the Java generator's bit
// for bit: its random numbers are SplitMix64's per event, where Java draws
// from one unseeded SplittableRandom per generator (its runs cannot be
// reproduced at all). The rules, the distributions and the proportions
// are the project's.
package nexmark
