package broker

// OffsetFetch with RequireStable (v7+, KIP-447), the transactions' side: a
// partition of the group whose offsets an unfinished transaction holds gets
// UNSTABLE_OFFSET_COMMIT (broker/groupapi), which clients retry, instead of
// the offset the commit is about to replace. Transactions this broker
// coordinates are seen directly (all of them on a standalone broker);
// those of other brokers through the offsets this broker, the group's
// coordinator, forwarded to them (broker/txnapi's forwarded.go).

import (
	"context"
	"time"

	"github.com/tributary-io/tributary/broker/group"
)

// pendingTxnOffsets returns the partitions of the group name whose offsets
// an unfinished transaction holds (groupapi.Config.PendingTxnOffsets).
func (b *Broker) pendingTxnOffsets(name string) map[group.TopicPartition]bool {
	if _, ok := b.meta.Topic(txnStateTopic); !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var pending map[group.TopicPartition]bool
	mark := func(topic string, partition int32) {
		if pending == nil {
			pending = map[group.TopicPartition]bool{}
		}
		pending[group.TopicPartition{Topic: topic, Partition: partition}] = true
	}
	for tp := range b.txns.PendingOffsets(ctx, name) {
		mark(tp.Topic, tp.Partition)
	}
	for tp := range b.txnAPIs.ForwardedPending(ctx, name) {
		mark(tp.Topic, tp.Partition)
	}
	return pending
}
