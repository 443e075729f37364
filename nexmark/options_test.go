package nexmark

import (
	"testing"

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
	} {
		_, _, err := ParseOptions(c.opts)
		require.Error(t, err, "%v", c.opts)
		assert.Contains(t, err.Error(), c.err)
	}
}
