// Package temporal holds SQL's timestamps and dates as the engine stores
// them, and their text forms, without the time package's allocations.
//
// A TIMESTAMP(3) is an int64 count of milliseconds since 1970-01-01
// 00:00:00 UTC, always UTC: a zone offset in the input is applied when
// parsing and never kept. A DATE is an int32 count of days since
// 1970-01-01. Both use the proleptic Gregorian calendar (Gregorian rules
// extended before 1582, a year 0, negative years before it), as
// java.time and SQL do, and have no leap seconds.
//
// Parsing and printing are hand-written loops over bytes: sources decode
// millions of timestamps a second, and time.Parse allocates and accepts
// many layouts where an event stream has one of a few (RFC 3339, SQL's
// yyyy-MM-dd HH:mm:ss[.SSS], a bare date). The calendar arithmetic is
// Howard Hinnant's days_from_civil and civil_from_days, which are exact
// over the whole range of int64 timestamps and need no table.
//
// Division rounds toward negative infinity throughout (floor), so that an
// instant before 1970 belongs to the day, second and millisecond that
// contain it: -1 ms is 1969-12-31 23:59:59.999. Flink's Java code divides
// with truncation in places (EXTRACT of a pre-1970 timestamp); this
// package does not reproduce that.
//
// EXTRACT's units and DATE_FORMAT's pattern letters follow Flink (Extract,
// CompileFormat).
package temporal
