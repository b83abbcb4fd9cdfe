package cluster

// Creating topics of one replica per partition in ZooKeeper (replicated
// ones: zkreplicas.go) and deleting any topic: the assignment node is the
// topic, so creating it is atomic, and its deletion is what every broker
// watches for.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// CreateTopic spreads the partitions over the brokers alive right now (read
// from ZooKeeper, not the possibly older view) and stores the assignment.
// Creating the node is atomic, so of two brokers creating the same topic at
// once exactly one succeeds and the other gets ErrTopicExists.
func (z *ZooKeeper) CreateTopic(ctx context.Context, name string, partitions int32, configs map[string]string) (Topic, error) {
	brokers, err := z.brokersToCreateOn(ctx, name, partitions)
	if err != nil {
		return Topic{}, err
	}
	leaders, err := Spread(name, partitions, brokers)
	if err != nil {
		return Topic{}, fmt.Errorf("creating topic %s: %w", name, err)
	}
	id := NewTopicID()
	data, _ := json.Marshal(TopicNode{Version: 1, ID: id, Leaders: leaders, Configs: configs})
	_, err = z.s.Conn.Create(z.s.Paths.Topic(name), data, 0, zk.WorldACL(zk.PermAll))
	if errors.Is(err, zk.ErrNodeExists) {
		return Topic{}, ErrTopicExists
	}
	if err != nil {
		return Topic{}, fmt.Errorf("creating topic %s in zookeeper: %w", name, err)
	}
	t := Topic{Name: name, ID: id, Leaders: leaders, Configs: configs}
	if err := z.refresh(); err != nil {
		z.log.Warn("topic created but the local view is not refreshed yet", "topic", name, "err", err)
	}
	z.log.Info("created topic", "topic", name, "partitions", partitions, "brokers", len(brokers))
	return t, nil
}

// DeleteTopic removes the assignment. Brokers drop the partitions' data on
// their own when they see the topic gone.
func (z *ZooKeeper) DeleteTopic(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if ValidateName("topic", name) != nil {
		return ErrUnknownTopic
	}
	z.deleteStates(name)
	err := z.s.Conn.Delete(z.s.Paths.Topic(name), -1)
	if errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrInvalidPath) {
		return ErrUnknownTopic
	}
	if err != nil {
		return fmt.Errorf("deleting topic %s in zookeeper: %w", name, err)
	}
	if err := z.s.Conn.Delete(z.s.Paths.TopicConfig(name), -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		z.log.Warn("topic deleted but its configs node remains; a new topic of that name would inherit them", "topic", name, "err", err)
	}
	if err := z.refresh(); err != nil {
		z.log.Warn("topic deleted but the local view is not refreshed yet", "topic", name, "err", err)
	}
	z.log.Info("deleted topic", "topic", name)
	return nil
}

// brokersToCreateOn checks a new topic's name and partition count and
// reads the brokers alive now, from ZooKeeper itself rather than the view
// (which may lag): the brokers its partitions are spread over.
func (z *ZooKeeper) brokersToCreateOn(ctx context.Context, name string, partitions int32) ([]Broker, error) {
	if err := ValidateName("topic", name); err != nil {
		return nil, err
	}
	if partitions < 1 {
		return nil, fmt.Errorf("topic %s: partition count must be at least 1, got %d", name, partitions)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	brokers, err := z.readBrokers(func(p string) ([]string, error) {
		kids, _, err := z.s.Conn.Children(p)
		return kids, err
	})
	if err != nil {
		return nil, fmt.Errorf("creating topic %s: %w", name, err)
	}
	return brokers, nil
}
