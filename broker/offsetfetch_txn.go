package broker

// OffsetFetch with RequireStable (v7+, KIP-447): a partition of the group
// whose offsets an unfinished transaction holds gets
// UNSTABLE_OFFSET_COMMIT, which clients retry, instead of the offset the
// commit is about to replace. Only transactions this broker coordinates
// are seen (all of them on a standalone broker).

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/txn"
)

// markUnstable sets UNSTABLE_OFFSET_COMMIT on the partitions of topics
// that group's unfinished transactions hold.
func (b *Broker) markUnstable(group string, topics []fetchedTopic) {
	if _, ok := b.meta.Topic(txnStateTopic); !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pending := b.txns.PendingOffsets(ctx, group)
	if len(pending) == 0 {
		return
	}
	for i := range topics {
		for j := range topics[i].partitions {
			p := &topics[i].partitions[j]
			if p.code == 0 && pending[txn.TP{Topic: topics[i].topic, Partition: p.partition}] {
				p.code = kerr.UnstableOffsetCommit.Code
			}
		}
	}
}
