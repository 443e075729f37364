package ysb

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/saber-hx/saber-hx/internal/kafkatest"
)

// TestEnsureTopicCreatedMeanwhile: the topic is created by another client
// (a consumer's auto-creation) after the producer's client cached it as
// unknown: CreateTopic then answers "already exists", and ensureTopic
// must read the topic's partitions from the broker, not the stale cache.
// TestRunKafkaTrickle failed this way in CI.
func TestEnsureTopicCreatedMeanwhile(t *testing.T) {
	k := kafkatest.Start(t, 1)
	ctx := context.Background()
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Addr), kgo.MetadataMinAge(time.Minute))
	require.NoError(t, err)
	defer cl.Close()
	_, err = kadm.NewClient(cl).ListTopics(ctx, "t")
	require.NoError(t, err)
	other, err := kgo.NewClient(kgo.SeedBrokers(k.Addr))
	require.NoError(t, err)
	defer other.Close()
	_, err = kadm.NewClient(other).CreateTopic(ctx, 4, -1, nil, "t")
	require.NoError(t, err)

	n, err := ensureTopic(ctx, cl, "t", 0)
	require.NoError(t, err)
	assert.Equal(t, 4, n)
	n, err = ensureTopic(ctx, cl, "t", 2)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
}
