package broker

// Starting this broker's group coordinator (package group): which offset
// store it gets and how it learns which groups are its own. Which broker
// coordinates a group is the placement rule (cluster.GroupCoordinator), which
// FindCoordinator (broker/txnapi) answers.

import (
	"path/filepath"

	"github.com/tributary-io/tributary/broker/group"
	"github.com/tributary-io/tributary/cluster"
)

// zkSessioner is implemented by cluster metadata that can lend its
// ZooKeeper session, so the offset registry shares the broker's session.
type zkSessioner interface {
	Session() *cluster.ZKSession
}

// startGroups starts the group coordinator with its offset store: the one
// configured, else the ZooKeeper offset registry in a cluster, else
// DataDir/groups.
func (b *Broker) startGroups() error {
	store := b.cfg.GroupOffsets
	if store == nil {
		switch m := b.meta.(type) {
		case zkSessioner:
			store = group.NewZooKeeperStore(m.Session())
		default:
			if _, standalone := m.(*standaloneMeta); !standalone {
				b.logger.Warn("cluster metadata has no ZooKeeper session to lend; committed offsets stay in this broker's data directory and do not follow a group to another coordinator")
			}
			ds, err := group.OpenDirStore(filepath.Join(b.cfg.DataDir, "groups"))
			if err != nil {
				return err
			}
			store = ds
		}
	}
	cfg := b.cfg.Groups
	cfg.Owns = b.ownsGroup
	cfg.Topics = b.groupTopics
	if cfg.Logger == nil {
		cfg.Logger = b.logger
	}
	b.groups = group.New(cfg, store)
	return nil
}

// groupTopics lists the cluster's topics for the server-side assignors,
// marking internal ones, which a regex never matches (as in Kafka).
func (b *Broker) groupTopics() []group.TopicInfo {
	topics := b.meta.Topics()
	out := make([]group.TopicInfo, 0, len(topics))
	for _, t := range topics {
		out = append(out, group.TopicInfo{Name: t.Name, Partitions: t.Partitions(), Internal: IsInternalTopic(t.Name)})
	}
	return out
}

// coordinatorFor picks a group's coordinator among the live brokers
// (cluster.GroupCoordinator).
func (b *Broker) coordinatorFor(group string) (cluster.Broker, bool) {
	return cluster.GroupCoordinator(group, b.meta.Brokers())
}

// ownsGroup reports whether this broker is the group's coordinator.
func (b *Broker) ownsGroup(group string) bool {
	br, ok := b.coordinatorFor(group)
	return ok && br.ID == b.selfID
}
