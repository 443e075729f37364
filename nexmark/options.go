package nexmark

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// An option of the nexmark connector: the names a SQL source's WITH takes
// (the Flink connector's, and RisingWave's nexmark.table.type and
// nexmark.event.num),
// and the field each sets.
type option struct {
	names []string
	field func(c *Config) *int64
}

var options = []option{
	{[]string{"first-event.rate", "next-event.rate"}, func(c *Config) *int64 { return &c.EventRate }},
	{[]string{"events.num", "nexmark.event.num"}, func(c *Config) *int64 { return &c.Events }},
	{[]string{"person.proportion"}, func(c *Config) *int64 { return &c.PersonProportion }},
	{[]string{"auction.proportion"}, func(c *Config) *int64 { return &c.AuctionProportion }},
	{[]string{"bid.proportion"}, func(c *Config) *int64 { return &c.BidProportion }},
	{[]string{"person.avg-size"}, func(c *Config) *int64 { return &c.AvgPersonByteSize }},
	{[]string{"auction.avg-size"}, func(c *Config) *int64 { return &c.AvgAuctionByteSize }},
	{[]string{"bid.avg-size"}, func(c *Config) *int64 { return &c.AvgBidByteSize }},
	{[]string{"auction.hot-ratio.sellers"}, func(c *Config) *int64 { return &c.HotSellersRatio }},
	{[]string{"bid.hot-ratio.auctions"}, func(c *Config) *int64 { return &c.HotAuctionRatio }},
	{[]string{"bid.hot-ratio.bidders"}, func(c *Config) *int64 { return &c.HotBiddersRatio }},
	{[]string{"auction.in-flight"}, func(c *Config) *int64 { return &c.NumInFlightAuctions }},
	{[]string{"person.active"}, func(c *Config) *int64 { return &c.NumActivePeople }},
	{[]string{"out-of-order.group-size"}, func(c *Config) *int64 { return &c.OutOfOrderGroupSize }},
	{[]string{"base-time"}, func(c *Config) *int64 { return &c.BaseTime }},
	{[]string{"first-event.id"}, func(c *Config) *int64 { return &c.FirstEventID }},
	{[]string{"first-event.number"}, func(c *Config) *int64 { return &c.FirstEventNumber }},
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
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
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
	names = append(names, "seed", "bid.flink-bidder-ids")
	for _, o := range options {
		names = append(names, o.names...)
	}
	return names
}
