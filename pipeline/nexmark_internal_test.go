package pipeline

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/nexmark"
)

// TestNexmarkFeedWide: with a stride wider than the generator's tuples
// (a processing-time column after them) each tuple holds the generator's
// bytes at its start, inline and replayed.
func TestNexmarkFeedWide(t *testing.T) {
	cfg := nexmark.DefaultConfig()
	b, err := nexmark.NewBundle(cfg, 5000)
	require.NoError(t, err)
	defer b.Free()
	for _, bundle := range []*nexmark.Bundle{nil, b} {
		narrow, err := newNexmarkFeed(cfg, nexmark.BidTable, 80, bundle)
		require.NoError(t, err)
		wide, err := newNexmarkFeed(cfg, nexmark.BidTable, 88, bundle)
		require.NoError(t, err)
		want := make([]byte, 80*1000)
		got := make([]byte, 88*1000+40) // a partial tuple's room is left alone
		for round := range 3 {
			n, err := narrow.fill(want)
			require.NoError(t, err)
			m, err := wide.fill(got)
			require.NoError(t, err)
			require.Equal(t, n/80*88, m, "round %d", round)
			for i := range n / 80 {
				assert.Equal(t, want[i*80:(i+1)*80], got[i*88:i*88+80], "round %d tuple %d", round, i)
			}
			narrow.committed()
			wide.committed()
		}
		assert.Equal(t, narrow.events(), wide.events())
		narrow.close()
		wide.close()
	}
	_, err = newNexmarkFeed(cfg, nexmark.BidTable, 72, nil)
	assert.ErrorContains(t, err, "a 72-byte tuple is smaller than the bid table's 80 bytes")
}
