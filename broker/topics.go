package broker

// The topic APIs (broker/topicapi) and the root's side of them: which
// topics exist is topicapi's (Lookup, auto-creation, the caps); what a
// topic's configs mean and what a deletion leaves on this broker are the
// root's, given to it as functions.

import (
	"github.com/tributary-io/tributary/broker/topicapi"
	"github.com/tributary-io/tributary/cluster"
)

// newTopics builds the topic APIs from what they use of b. New calls it
// once the partition table and replication exist.
func (b *Broker) newTopics() *topicapi.Handlers {
	_, standalone := b.meta.(*standaloneMeta)
	return topicapi.New(topicapi.Config{
		Metadata: b.meta, Authz: b.authz, Self: b.selfID, ClusterID: b.cfg.ClusterID,
		Limits: topicapi.Limits{
			AutoCreate:               b.cfg.AutoCreateTopics,
			AutoCreateRate:           b.cfg.AutoCreateRate,
			AutoCreateMaxTopics:      b.cfg.AutoCreateMaxTopics,
			DefaultPartitions:        b.cfg.DefaultPartitions,
			DefaultReplicationFactor: b.cfg.DefaultReplicationFactor,
			MaxTopics:                b.cfg.MaxTopics,
			MaxPartitions:            b.cfg.MaxPartitions,
			MaxRequestBytes:          b.cfg.MaxRequestBytes,
			MetadataChecksCaps:       standalone,
		},
		Logger: b.logger, InternalClients: b.cfg.InternalClients,
		DataDir: b.cfg.DataDir, Partitions: b.logs, Replicas: b.replicas,
		CheckConfigs: b.settings.CheckTopicBounds,
		TopicConfigs: b.settings.TopicEntries,
		Deleted:      b.topicDeleted,
	})
}

// lookupTopic is topicapi's Lookup: the one auto-creation entry point,
// which the handler packages (Produce, Fetch, ...) are given.
func (b *Broker) lookupTopic(name string, autoCreate bool) (cluster.Topic, int16) {
	return b.topics.Lookup(name, autoCreate)
}

// topicDeleted drops what this broker keeps of a deleted topic: its
// partitions' files and every group's committed offsets of it (a topic
// created again under the name must not be read from the old positions).
func (b *Broker) topicDeleted(topic string) {
	b.logs.DeleteTopic(topic)
	b.forgetTopicOffsets(topic)
}

// forgetTopicOffsets drops every group's committed offsets of a deleted
// topic. The topic is gone whatever happens here, so a failure is logged
// with what the operator can do rather than answered.
func (b *Broker) forgetTopicOffsets(topic string) {
	n, err := b.groups.ForgetTopic(topic)
	if err != nil {
		b.logger.Error("deleted topic: some groups' committed offsets of it remain; a topic created again under its name would be read from them until they are deleted (kafka-consumer-groups --delete-offsets)",
			"topic", topic, "groups_cleared", n, "err", err)
		return
	}
	if n > 0 {
		b.logger.Info("deleted topic: committed offsets dropped", "topic", topic, "groups", n)
	}
}
