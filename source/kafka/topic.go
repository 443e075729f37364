package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/saber-hx/saber-hx/internal/retry"
)

// topicSettle bounds how long WaitTopic waits for a new topic's metadata.
const topicSettle = 10 * time.Second

// errSettling is WaitTopic's attempt that found the topic not yet settled.
var errSettling = errors.New("topic not settled")

// WaitTopic returns the metadata of a topic that was just created (by
// CreateTopics, or by a broker's auto-creation, possibly from another
// client). Creation is asynchronous in Kafka: for a moment after it, a
// broker may still answer UNKNOWN_TOPIC_OR_PARTITION or
// LEADER_NOT_AVAILABLE, or list the topic without partitions. WaitTopic
// asks again, with retry.Do's growing pause, until the topic has
// partitions and no error, or ctx ends, or topicSettle passes; then it
// returns the last answer. ok is false where the topic was never listed.
//
// Each attempt asks the broker (cl is adm's client): kadm answers
// ListTopics from the client's metadata cache for up to MetadataMinAge,
// and an answer cached before the creation would say "unknown" for that
// long. The direct request refreshes the cache that ListTopics reads.
func WaitTopic(ctx context.Context, cl *kgo.Client, adm *kadm.Client, topic string) (td kadm.TopicDetail, ok bool, err error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	policy := retry.Policy{Timeout: topicSettle, Min: 10 * time.Millisecond, Max: 200 * time.Millisecond}
	settling := func(err error) bool { return errors.Is(err, errSettling) }
	err = retry.Do(ctx, policy, nil, settling, func(ctx context.Context) error {
		if _, err := req.RequestWith(ctx, cl); err != nil {
			return fmt.Errorf("topic %q metadata: %w", topic, err)
		}
		tds, err := adm.ListTopics(ctx, topic)
		if err != nil {
			return fmt.Errorf("list topic %q: %w", topic, err)
		}
		td, ok = tds[topic]
		if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) ||
			errors.Is(td.Err, kerr.LeaderNotAvailable) || (td.Err == nil && len(td.Partitions) == 0) {
			return errSettling
		}
		return nil
	})
	if settling(err) {
		return td, ok, nil // still settling at the end: the last answer
	}
	return td, ok, err
}
