package topicapi

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
func (h *Handlers) replicationFactor(asked int16) (int, error) {
	rf := int(asked)
	if asked == -1 {
		rf = h.limits.DefaultReplicationFactor
	}
	if rf == 1 {
		return 1, nil
	}
	if _, ok := h.meta.(replicatedCreator); !ok || rf < 1 {
		return 0, kafkaerr.New(kerr.InvalidReplicationFactor, "replication factor %d: a standalone broker stores each partition once, use 1", asked)
	}
	if live := len(h.meta.Brokers()); rf > live {
		return 0, kafkaerr.New(kerr.InvalidReplicationFactor, "replication factor %d is larger than the %d live brokers", rf, live)
	}
	return rf, nil
}

// CreateReplicated creates a topic with rf replicas per partition (one on
// a cluster that does not replicate). The transaction coordinator creates
// its state topic through it too.
func (h *Handlers) CreateReplicated(ctx context.Context, name string, partitions int32, rf int, configs map[string]string) (cluster.Topic, error) {
	if c, ok := h.meta.(replicatedCreator); ok && rf > 1 {
		return c.CreateReplicatedTopic(ctx, name, partitions, rf, configs)
	}
	return h.meta.CreateTopic(ctx, name, partitions, configs)
}

// ControllerReader is cluster metadata that knows the elected controller
// (cluster.ZooKeeper), which Metadata and the broker's metrics report.
type ControllerReader interface {
	Controller() (id int32, ok bool)
}
