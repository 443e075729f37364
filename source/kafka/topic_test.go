package kafka

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

// TestWaitTopicAfterCachedUnknown: a client that listed a topic before
// another client created it has "unknown" cached; WaitTopic must still
// see the new topic. The client's metadata cache is kept a minute, longer
// than WaitTopic's patience, so answering from the cache fails the test.
func TestWaitTopicAfterCachedUnknown(t *testing.T) {
	t.Parallel()
	c := kafkatest.Start(t, 3)
	ctx := context.Background()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addr), kgo.MetadataMinAge(time.Minute))
	require.NoError(t, err)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	tds, err := adm.ListTopics(ctx, "late")
	require.NoError(t, err)
	require.ErrorContains(t, tds["late"].Err, "UNKNOWN_TOPIC_OR_PARTITION", "the topic exists before it was created")

	other, err := kgo.NewClient(kgo.SeedBrokers(c.Addr))
	require.NoError(t, err)
	defer other.Close()
	_, err = kadm.NewClient(other).CreateTopic(ctx, 5, -1, nil, "late")
	require.NoError(t, err)

	td, ok, err := WaitTopic(ctx, cl, adm, "late")
	require.NoError(t, err)
	require.True(t, ok)
	assert.NoError(t, td.Err)
	assert.Len(t, td.Partitions, 5)
}
