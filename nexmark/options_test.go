package nexmark

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseOptions(t *testing.T) {
	cfg, table, err := ParseOptions(map[string]string{"connector": "nexmark", "nexmark.table.type": "Bid",
		"first-event.rate": "1000000", "next-event.rate": "1000000", "events.num": "5000", "seed": "7", "bid.hot-ratio.bidders": "3"}, "connector")
	require.NoError(t, err)
	want := DefaultConfig()
	want.EventRate, want.Events, want.Seed, want.HotBiddersRatio = 1000000, 5000, 7, 3
	assert.Equal(t, want, cfg)
	assert.Equal(t, BidTable, table)

	_, table, err = ParseOptions(map[string]string{"table": "person", "nexmark.event.num": "10"})
	require.NoError(t, err)
	assert.Equal(t, PersonTable, table)

	for _, c := range []struct {
		opts map[string]string
		err  string
	}{
		{map[string]string{"events.num": "1"}, "'nexmark.table.type' = 'person', 'auction' or 'bid'"},
		{map[string]string{"table": "bids"}, `option 'table': nexmark: no table "bids"`},
		{map[string]string{"table": "bid", "rate": "5"}, "unknown option 'rate' of the nexmark connector (valid: nexmark.table.type, table, seed"},
		{map[string]string{"table": "bid", "events.num": "ten"}, "option 'events.num' = 'ten': want an integer"},
		{map[string]string{"table": "bid", "first-event.rate": "10", "next-event.rate": "20"}, "options 'first-event.rate' and 'next-event.rate' differ"},
		{map[string]string{"table": "bid", "first-event.rate": "0"}, "the event rate is 0; it must be positive"},
		{map[string]string{"table": "bid", "seed": "-1"}, "option 'seed' = '-1': want an unsigned integer"},
		{map[string]string{"table": "bid", "keep-alive": "true"}, "option 'keep-alive' = 'true' is not supported (only 'false'): a source ends with its events"},
		{map[string]string{"table": "bid", "max-emit-speed": "false"}, "option 'max-emit-speed' = 'false' is not supported (only 'true')"},
		{map[string]string{"table": "bid", "rate.limited": "true"}, "option 'rate.limited' = 'true' is not supported (only 'false')"},
		{map[string]string{"table": "bid", "stop-at": "1000"}, "option 'stop-at' = '1000' is not supported (only '-1')"},
		{map[string]string{"table": "bid", "rate.shape": "CUBE"}, "option 'rate.shape' = 'CUBE': want SQUARE or SINE"},
		{map[string]string{"table": "bid", "rate.period": "10 fortnights"}, `option 'rate.period' = '10 fortnights': unit "fortnights"`},
		{map[string]string{"table": "bid", "bid.avg-size": "100 parsecs"}, `option 'bid.avg-size' = '100 parsecs': unit "parsecs"`},
		{map[string]string{"table": "bid", "bid.avg-size": "kb"}, "option 'bid.avg-size' = 'kb': want a size"},
	} {
		_, _, err := ParseOptions(c.opts)
		require.Error(t, err, "%v", c.opts)
		assert.Contains(t, err.Error(), c.err)
	}
}

// TestParseProjectOptions: the options of the project's ddl_gen_v2.sql and
// NexmarkSourceOptions, as it writes them: the avg-sizes as MemorySizes,
// the run options at the values saber-hx runs as, the rate's shape and
// period (one rate: they change nothing).
func TestParseProjectOptions(t *testing.T) {
	cfg, table, err := ParseOptions(map[string]string{"connector": "nexmark", "first-event.rate": "100000", "next-event.rate": "100000",
		"events.num": "200000000", "person.proportion": "1", "auction.proportion": "3", "bid.proportion": "46",
		"keep-alive": "false", "stop-at": "-1", "max-emit-speed": "true", "rate.shape": "square", "rate.period": "600 s", "rate.limited": "false",
		"person.avg-size": "200b", "auction.avg-size": "1 KB", "bid.avg-size": "100", "nexmark.table.type": "bid"}, "connector")
	require.NoError(t, err)
	want := DefaultConfig()
	want.EventRate, want.Events, want.AvgAuctionByteSize = 100000, 200000000, 1024
	assert.Equal(t, want, cfg)
	assert.Equal(t, BidTable, table)
	for v, d := range map[string]time.Duration{"600 s": 10 * time.Minute, "10min": 10 * time.Minute, "250": 250 * time.Millisecond, "2 h": 2 * time.Hour} {
		got, err := parseDuration(v)
		require.NoError(t, err, v)
		assert.Equal(t, d, got, v)
	}
}

// FuzzParseSizes: a MemorySize or a Duration parses, or is an error:
// never a panic, never a negative size.
func FuzzParseSizes(f *testing.F) {
	for _, s := range []string{"200b", "1 KB", "100", "9223372036854775807 tb", "600 s", "10min", "", "kb", "-5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n, err := parseMemorySize(s); err == nil {
			assert.GreaterOrEqual(t, n, int64(0), "%q", s)
		}
		_, _ = parseDuration(s)
	})
}
