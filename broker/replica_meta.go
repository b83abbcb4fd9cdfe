package broker

// What the broker asks of cluster metadata that replicates
// (cluster.ZooKeeper), beyond the Metadata interface every cluster
// implements: creating topics with several replicas per partition, and the
// elected controller that Metadata reports.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/kafkaerr"
	"github.com/tributary-io/tributary/cluster"
)

// replicatedCreator is cluster metadata that creates replicated topics
// (cluster.ZooKeeper).
type replicatedCreator interface {
	CreateReplicatedTopic(ctx context.Context, name string, partitions int32, rf int, configs map[string]string) (cluster.Topic, error)
}

// replicationFactor checks a requested replication factor (-1: the
// broker's default) against what the cluster can hold.
func (b *Broker) replicationFactor(asked int16) (int, error) {
	rf := int(asked)
	if asked == -1 {
		rf = b.cfg.DefaultReplicationFactor
	}
	if rf == 1 {
		return 1, nil
	}
	if _, ok := b.meta.(replicatedCreator); !ok || rf < 1 {
		return 0, kafkaerr.New(kerr.InvalidReplicationFactor, "replication factor %d: a standalone broker stores each partition once, use 1", asked)
	}
	if live := len(b.meta.Brokers()); rf > live {
		return 0, kafkaerr.New(kerr.InvalidReplicationFactor, "replication factor %d is larger than the %d live brokers", rf, live)
	}
	return rf, nil
}

// createReplicated creates a topic with rf replicas per partition.
func (b *Broker) createReplicated(ctx context.Context, name string, partitions int32, rf int, configs map[string]string) (cluster.Topic, error) {
	if c, ok := b.meta.(replicatedCreator); ok && rf > 1 {
		return c.CreateReplicatedTopic(ctx, name, partitions, rf, configs)
	}
	return b.meta.CreateTopic(ctx, name, partitions, configs)
}

// controllerReader is cluster metadata that knows the elected controller
// (cluster.ZooKeeper), which Metadata reports.
type controllerReader interface {
	Controller() (id int32, ok bool)
}
