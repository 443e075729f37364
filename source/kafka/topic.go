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
)

// topicSettle bounds how long WaitTopic waits for a new topic's metadata.
const topicSettle = 10 * time.Second

// WaitTopic returns the metadata of a topic that was just created (by
// CreateTopics, or by a broker's auto-creation, possibly from another
// client). Creation is asynchronous in Kafka: for a moment after it, a
// broker may still answer UNKNOWN_TOPIC_OR_PARTITION or
// LEADER_NOT_AVAILABLE, or list the topic without partitions. WaitTopic
// asks again, with a short growing pause, until the topic has
// partitions and no error, or ctx ends, or topicSettle passes; then it
// returns the last answer. ok is false where the topic was never listed.
//
// Each attempt asks the broker (cl is adm's client): kadm answers
// ListTopics from the client's metadata cache for up to MetadataMinAge,
// and an answer cached before the creation would say "unknown" for that
// long. The direct request refreshes the cache that ListTopics reads.
func WaitTopic(ctx context.Context, cl *kgo.Client, adm *kadm.Client, topic string) (td kadm.TopicDetail, ok bool, err error) {
	deadline := time.Now().Add(topicSettle)
	pause := 10 * time.Millisecond
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	for {
		if _, err = req.RequestWith(ctx, cl); err != nil {
			return td, false, fmt.Errorf("topic %q metadata: %w", topic, err)
		}
		var tds kadm.TopicDetails
		tds, err = adm.ListTopics(ctx, topic)
		if err != nil {
			return td, false, fmt.Errorf("list topic %q: %w", topic, err)
		}
		td, ok = tds[topic]
		settling := !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) ||
			errors.Is(td.Err, kerr.LeaderNotAvailable) || (td.Err == nil && len(td.Partitions) == 0)
		if !settling || !time.Now().Add(pause).Before(deadline) {
			return td, ok, nil
		}
		select {
		case <-ctx.Done():
			return td, ok, nil
		case <-time.After(pause):
		}
		pause = min(2*pause, 200*time.Millisecond)
	}
}
