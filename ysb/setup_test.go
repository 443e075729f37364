package ysb

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/redistest"
)

func redisClient(t testing.TB) *redis.Client {
	srv := redistest.Start(t)
	cl := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// TestCampaignsRedisRoundTrip: the table written in the original layout
// reads back equal (sorted by ad), next to keys of other kinds.
func TestCampaignsRedisRoundTrip(t *testing.T) {
	cl := redisClient(t)
	ctx := context.Background()
	g, err := NewGenerator(GenConfig{Campaigns: 13, AdsPerCampaign: 7, Seed: 5, TuplesPerMs: 1})
	require.NoError(t, err)
	c := g.Campaigns()
	n, err := WriteCampaignsRedis(ctx, cl, c)
	require.NoError(t, err)
	assert.Equal(t, 13, n)

	// What the original stores, as its checker reads it.
	members, err := cl.SMembers(ctx, "campaigns").Result()
	require.NoError(t, err)
	assert.Len(t, members, 13)
	v, err := cl.Get(ctx, c.AdIDs[8].String()).Result()
	require.NoError(t, err)
	assert.Equal(t, c.CampaignIDs[8].String(), v)

	// Keys that are not ads: a string that is not a UUID, a UUID string
	// whose value is no campaign, a hash, a list.
	require.NoError(t, cl.Set(ctx, "other", c.CampaignIDs[0].String(), 0).Err())
	require.NoError(t, cl.Set(ctx, "00000000-0000-0000-0000-000000000001", "00000000-0000-0000-0000-000000000002", 0).Err())
	require.NoError(t, cl.HSet(ctx, c.CampaignIDs[0].String(), "windows", "x").Err())
	require.NoError(t, cl.LPush(ctx, "00000000-0000-0000-0000-000000000003", "0").Err())

	got, camps, err := LoadCampaignsRedis(ctx, cl)
	require.NoError(t, err)
	assert.Len(t, camps, 13)
	want := map[UUID]UUID{}
	for i, ad := range c.AdIDs {
		want[ad] = c.CampaignIDs[i]
	}
	gotMap := map[UUID]UUID{}
	for i, ad := range got.AdIDs {
		gotMap[ad] = got.CampaignIDs[i]
		if i > 0 {
			assert.Less(t, compareUUID(got.AdIDs[i-1], ad), 0, "sorted")
		}
	}
	assert.Equal(t, want, gotMap)
}
