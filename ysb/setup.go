package ysb

import (
	"context"
	"fmt"
	"slices"

	"github.com/redis/go-redis/v9"

	"github.com/saber-hx/saber-hx/internal/security"
	"github.com/saber-hx/saber-hx/sink"
)

// CampaignsKey is the set of campaign ids in the original benchmark's
// Redis layout; each ad is a string key, its id, holding its campaign's id.
const CampaignsKey = "campaigns"

// redisBatch bounds the commands of one pipeline (setup, lookups).
const redisBatch = 4096

// WriteCampaignsRedis stores c as the original benchmark's setup does:
// SADD campaigns <campaign_id> for each campaign and SET <ad_id>
// <campaign_id> for each ad, lowercase UUID text, pipelined. It returns
// the number of distinct campaigns.
func WriteCampaignsRedis(ctx context.Context, cl *redis.Client, c *Campaigns) (int, error) {
	if _, err := c.check(); err != nil {
		return 0, err
	}
	addr := cl.Options().Addr
	seen := make(map[UUID]bool)
	var camps []any
	for _, id := range c.CampaignIDs {
		if !seen[id] {
			seen[id] = true
			camps = append(camps, id.String())
		}
	}
	for i := 0; i < len(camps); i += redisBatch {
		if err := cl.SAdd(ctx, CampaignsKey, camps[i:min(i+redisBatch, len(camps))]...).Err(); err != nil {
			return 0, fmt.Errorf("redis %s: SADD %s: %w", addr, CampaignsKey, err)
		}
	}
	for i := 0; i < len(c.AdIDs); i += redisBatch {
		pipe := cl.Pipeline()
		for j := i; j < min(i+redisBatch, len(c.AdIDs)); j++ {
			pipe.Set(ctx, c.AdIDs[j].String(), c.CampaignIDs[j].String(), 0)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return 0, fmt.Errorf("redis %s: SET ads %d..%d: %w", addr, i, min(i+redisBatch, len(c.AdIDs))-1, err)
		}
	}
	return len(camps), nil
}

// SetupConfig is the original benchmark's setup (saber-hx ysb setup):
// the campaigns of Gen into Redis, and into a CSV file where
// CampaignsCSV names one.
type SetupConfig struct {
	// Server is the Redis server, and how its connection is secured.
	Server security.Redis
	Gen    GenConfig
	// CampaignsCSV, where set, is a file that receives the campaigns
	// table (ad_id,campaign_id; WriteCSV), replaced only once complete.
	CampaignsCSV string
}

// SetupResult is what Setup wrote: Campaigns (distinct) and Ads into
// Redis where InRedis, which is so even where the CSV then failed.
type SetupResult struct {
	Campaigns, Ads int
	InRedis        bool
}

// Setup writes the campaigns as the original benchmark's setup does
// (WriteCampaignsRedis), through a connection that Server.Connect makes
// (a refused password or certificate: a *security.Error), then the
// campaigns CSV. The CSV file is created first, so that a path that
// cannot be written fails before Redis is touched.
func Setup(ctx context.Context, c SetupConfig) (SetupResult, error) {
	var res SetupResult
	g, err := NewGenerator(c.Gen)
	if err != nil {
		return res, err
	}
	camps := g.Campaigns()
	var out *sink.File
	if c.CampaignsCSV != "" {
		if out, err = sink.Create(c.CampaignsCSV); err != nil {
			return res, err
		}
		defer out.Abort()
	}
	cl, err := c.Server.Connect(ctx)
	if err != nil {
		return res, err
	}
	defer cl.Close()
	n, err := WriteCampaignsRedis(ctx, cl, camps)
	if err != nil {
		return res, err
	}
	res = SetupResult{Campaigns: n, Ads: len(camps.AdIDs), InRedis: true}
	if out == nil {
		return res, nil
	}
	if err := camps.WriteCSV(out); err != nil {
		return res, fmt.Errorf("%s: %w", c.CampaignsCSV, err)
	}
	return res, out.Commit()
}

// LoadCampaignsRedis reads the join table back from the original layout:
// the campaigns set, then every string key (SCAN ... TYPE string) whose
// name is a UUID and whose value is one of the campaigns, sorted by ad id.
// Other keys (the windows the run writes are hashes and lists) are
// passed over. It returns the campaign ids too, sorted.
//
// The whole table is read up front, not looked up on first sight of an
// ad: the query's join (query.StaticJoin) is a table built before the
// run, which keeps the join of the hot path a lookup in memory.
func LoadCampaignsRedis(ctx context.Context, cl *redis.Client) (*Campaigns, []UUID, error) {
	addr := cl.Options().Addr
	members, err := cl.SMembers(ctx, CampaignsKey).Result()
	if err != nil {
		return nil, nil, fmt.Errorf("redis %s: SMEMBERS %s: %w", addr, CampaignsKey, err)
	}
	camps := make(map[UUID]bool, len(members))
	var ids []UUID
	for _, m := range members {
		u, err := ParseUUID(m)
		if err != nil {
			return nil, nil, fmt.Errorf("redis %s: set %s: %w", addr, CampaignsKey, err)
		}
		camps[u] = true
		ids = append(ids, u)
	}
	slices.SortFunc(ids, func(a, b UUID) int { return compareUUID(a, b) })
	var keys []string
	iter := cl.ScanType(ctx, 0, "", redisBatch, "string").Iterator()
	for iter.Next(ctx) {
		if len(iter.Val()) == uuidTextLen {
			keys = append(keys, iter.Val())
		}
	}
	if err := iter.Err(); err != nil {
		return nil, nil, fmt.Errorf("redis %s: SCAN string keys: %w", addr, err)
	}
	slices.Sort(keys)
	c := &Campaigns{}
	for i := 0; i < len(keys); i += redisBatch {
		batch := keys[i:min(i+redisBatch, len(keys))]
		vals, err := cl.MGet(ctx, batch...).Result()
		if err != nil {
			return nil, nil, fmt.Errorf("redis %s: MGET ads: %w", addr, err)
		}
		for j, v := range vals {
			s, ok := v.(string)
			if !ok {
				continue // deleted since the scan
			}
			ad, err1 := parseUUID(batch[j])
			camp, err2 := parseUUID(s)
			if err1 != nil || err2 != nil || !camps[camp] {
				continue
			}
			c.AdIDs = append(c.AdIDs, ad)
			c.CampaignIDs = append(c.CampaignIDs, camp)
		}
	}
	return c, ids, nil
}

func compareUUID(a, b UUID) int {
	for i := range a {
		if a[i] != b[i] {
			return int(a[i]) - int(b[i])
		}
	}
	return 0
}
