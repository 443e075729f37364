package nexmark

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// An option of the nexmark connector: the names a SQL source's WITH takes,
// and the field each sets. The project's Flink connector
// (NexmarkSourceOptions) names first-event.rate, next-event.rate,
// events.num, the proportions, the avg-sizes (a MemorySize: 200b, 1kb)
// and the hot ratios; RisingWave names nexmark.table.type and
// nexmark.event.num; auction.in-flight, person.active,
// out-of-order.group-size, base-time, first-event.id and
// first-event.number are saber-hx's own, for fields of the generator's
// configuration (GeneratorConfig) that the connector does not expose.
type option struct {
	names []string
	field func(c *Config) *int64
	// memory: the value is a MemorySize (a number of bytes, a unit after
	// it or not), as Flink's memoryType options.
	memory bool
}

// runOptions are the project's connector options that say how its source
// runs rather than what it generates, with the one value saber-hx runs as
// (its sources emit as fast as they are read and end with their events):
// a source that names them is accepted as long as it asks for that.
type runOption struct{ name, value, why string }

var runOptions = []runOption{
	{"max-emit-speed", "true", "saber-hx's sources emit as fast as they are read, not at the wall clock's pace"},
	{"rate.limited", "false", "saber-hx's sources emit as fast as they are read, not at the wall clock's pace"},
	{"keep-alive", "false", "a source ends with its events (events.num); it does not stay open after them"},
	{"stop-at", "-1", "a source stops at events.num only"},
}

var options = []option{
	{[]string{"first-event.rate", "next-event.rate"}, func(c *Config) *int64 { return &c.EventRate }, false},
	{[]string{"events.num", "nexmark.event.num"}, func(c *Config) *int64 { return &c.Events }, false},
	{[]string{"person.proportion"}, func(c *Config) *int64 { return &c.PersonProportion }, false},
	{[]string{"auction.proportion"}, func(c *Config) *int64 { return &c.AuctionProportion }, false},
	{[]string{"bid.proportion"}, func(c *Config) *int64 { return &c.BidProportion }, false},
	{[]string{"person.avg-size"}, func(c *Config) *int64 { return &c.AvgPersonByteSize }, true},
	{[]string{"auction.avg-size"}, func(c *Config) *int64 { return &c.AvgAuctionByteSize }, true},
	{[]string{"bid.avg-size"}, func(c *Config) *int64 { return &c.AvgBidByteSize }, true},
	{[]string{"auction.hot-ratio.sellers"}, func(c *Config) *int64 { return &c.HotSellersRatio }, false},
	{[]string{"bid.hot-ratio.auctions"}, func(c *Config) *int64 { return &c.HotAuctionRatio }, false},
	{[]string{"bid.hot-ratio.bidders"}, func(c *Config) *int64 { return &c.HotBiddersRatio }, false},
	{[]string{"auction.in-flight"}, func(c *Config) *int64 { return &c.NumInFlightAuctions }, false},
	{[]string{"person.active"}, func(c *Config) *int64 { return &c.NumActivePeople }, false},
	{[]string{"out-of-order.group-size"}, func(c *Config) *int64 { return &c.OutOfOrderGroupSize }, false},
	{[]string{"base-time"}, func(c *Config) *int64 { return &c.BaseTime }, false},
	{[]string{"first-event.id"}, func(c *Config) *int64 { return &c.FirstEventID }, false},
	{[]string{"first-event.number"}, func(c *Config) *int64 { return &c.FirstEventNumber }, false},
}

// TableOptions are the options that name the table a source generates.
var TableOptions = []string{"nexmark.table.type", "table"}

// ParseOptions reads a nexmark source's options (names in lower case, as
// a SQL source's WITH gives them) into the generator's configuration and
// the table the source generates: DefaultConfig where an option is not
// given. ignore names the options that are not the connector's (the SQL
// compiler's own: connector, format). An unknown option, a value that is
// not a number, or a configuration that Validate refuses is an error that
// names the option.
func ParseOptions(opts map[string]string, ignore ...string) (Config, Table, error) {
	cfg := DefaultConfig()
	table, tableSet := Table(0), false
	seen := map[*int64]string{}
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	slices.Sort(keys) // errors in a stable order
	for _, k := range keys {
		v := opts[k]
		ro := slices.IndexFunc(runOptions, func(o runOption) bool { return o.name == k })
		switch {
		case slices.Contains(ignore, k):
			continue
		case slices.Contains(TableOptions, k):
			t, err := ParseTable(strings.ToLower(v))
			if err != nil {
				return cfg, 0, fmt.Errorf("option '%s': %w", k, err)
			}
			table, tableSet = t, true
			continue
		case k == "seed" || k == "nexmark.seed":
			s, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return cfg, 0, fmt.Errorf("option '%s' = '%s': want an unsigned integer", k, v)
			}
			cfg.Seed = s
			continue
		case k == "rate.shape":
			// The rate's shape between first-event.rate and
			// next-event.rate, which must be one rate here.
			if v := strings.ToUpper(v); v != "SQUARE" && v != "SINE" {
				return cfg, 0, fmt.Errorf("option '%s' = '%s': want SQUARE or SINE", k, opts[k])
			}
			continue
		case k == "rate.period":
			if _, err := parseDuration(v); err != nil {
				return cfg, 0, fmt.Errorf("option '%s' = '%s': %w", k, v, err)
			}
			continue
		case ro >= 0:
			o := runOptions[ro]
			if !strings.EqualFold(strings.TrimSpace(v), o.value) {
				return cfg, 0, fmt.Errorf("option '%s' = '%s' is not supported (only '%s'): %s", k, v, o.value, o.why)
			}
			continue
		case k == "bid.flink-bidder-ids":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return cfg, 0, fmt.Errorf("option '%s' = '%s': want true or false", k, v)
			}
			cfg.FlinkBidderIDs = b
			continue
		}
		i := slices.IndexFunc(options, func(o option) bool { return slices.Contains(o.names, k) })
		if i < 0 {
			return cfg, 0, fmt.Errorf("unknown option '%s' of the nexmark connector (valid: %s)", k, strings.Join(OptionNames(), ", "))
		}
		var n int64
		var err error
		if options[i].memory {
			if n, err = parseMemorySize(v); err != nil {
				return cfg, 0, fmt.Errorf("option '%s' = '%s': %w", k, v, err)
			}
		} else if n, err = strconv.ParseInt(v, 10, 64); err != nil {
			return cfg, 0, fmt.Errorf("option '%s' = '%s': want an integer", k, v)
		}
		p := options[i].field(&cfg)
		if prev, ok := seen[p]; ok && *p != n {
			return cfg, 0, fmt.Errorf("options '%s' and '%s' differ: one rate is all the generator has", prev, k)
		}
		seen[p] = k
		*p = n
	}
	if !tableSet {
		return cfg, 0, fmt.Errorf("a nexmark source names its table: '%s' = 'person', 'auction' or 'bid'", TableOptions[0])
	}
	if err := cfg.Validate(); err != nil {
		return cfg, 0, err
	}
	return cfg, table, nil
}

// OptionNames lists every option ParseOptions takes, for help and errors.
func OptionNames() []string {
	names := append([]string{}, TableOptions...)
	names = append(names, "seed", "bid.flink-bidder-ids", "rate.shape", "rate.period")
	for _, o := range runOptions {
		names = append(names, o.name)
	}
	for _, o := range options {
		names = append(names, o.names...)
	}
	return names
}

// parseMemorySize reads a Flink MemorySize: a number of bytes, or of the
// unit after it (b, k, kb, m, mb, g, gb, t, tb and their long names,
// powers of 1024, any case, blanks between).
func parseMemorySize(v string) (int64, error) {
	n, unit, ok := numberAndUnit(v)
	if !ok {
		return 0, errors.New("want a size: a number of bytes, a unit after it or not (200b, 1kb)")
	}
	var shift uint
	switch unit {
	case "", "b", "bytes":
	case "k", "kb", "kibibytes":
		shift = 10
	case "m", "mb", "mebibytes":
		shift = 20
	case "g", "gb", "gibibytes":
		shift = 30
	case "t", "tb", "tebibytes":
		shift = 40
	default:
		return 0, fmt.Errorf("unit %q: want b, kb, mb, gb or tb", unit)
	}
	if n > math.MaxInt64>>shift {
		return 0, errors.New("too large")
	}
	return n << shift, nil
}

// parseDuration reads a Flink Duration: a number and a unit (ms, s, min,
// h, d and their long names; milliseconds without one), blanks between.
func parseDuration(v string) (time.Duration, error) {
	n, unit, ok := numberAndUnit(v)
	if !ok {
		return 0, errors.New("want a duration: a number and a unit (600 s, 10 min)")
	}
	u, ok := durationUnits[unit]
	if !ok {
		return 0, fmt.Errorf("unit %q: want ms, s, min, h or d", unit)
	}
	return time.Duration(n) * u, nil
}

// durationUnits are a Flink Duration's units, by their names.
var durationUnits = map[string]time.Duration{"": time.Millisecond, "ms": time.Millisecond, "milli": time.Millisecond, "millis": time.Millisecond,
	"millisecond": time.Millisecond, "milliseconds": time.Millisecond, "s": time.Second, "sec": time.Second, "secs": time.Second,
	"second": time.Second, "seconds": time.Second, "min": time.Minute, "m": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"h": time.Hour, "hour": time.Hour, "hours": time.Hour, "d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour}

// numberAndUnit splits a Flink MemorySize's or Duration's text into its
// leading decimal number and the unit after it (lower case, blanks around
// it dropped).
func numberAndUnit(v string) (int64, string, bool) {
	s := strings.TrimSpace(v)
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	return n, strings.ToLower(strings.TrimSpace(s[i:])), err == nil
}
