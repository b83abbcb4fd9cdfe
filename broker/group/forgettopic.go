package group

import (
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// topicForgetter is implemented by stores that can drop a topic's offsets
// of every group more cheaply than loading each group.
type topicForgetter interface {
	ForgetTopic(topic string) (groups int, err error)
}

// ForgetTopic drops every group's committed offsets of a deleted topic, as
// Kafka does: a topic created again under the same name starts from
// offset 0, and a group resuming at its old position would silently skip
// the new topic's first records (or, past its end, reset). It returns the
// number of groups that had offsets of the topic.
func (c *Coordinator) ForgetTopic(topic string) (int, error) {
	if f, ok := c.store.(topicForgetter); ok {
		return f.ForgetTopic(topic)
	}
	return forgetTopicByGroup(c.store, topic)
}

// forgetTopicByGroup is ForgetTopic for any store: each group's offsets
// are loaded and those of the topic forgotten.
func forgetTopicByGroup(s OffsetStore, topic string) (int, error) {
	names, err := s.Groups()
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, g := range names {
		offsets, err := s.Load(g)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var drop []TopicPartition
		for tp := range offsets {
			if tp.Topic == topic {
				drop = append(drop, tp)
			}
		}
		if len(drop) == 0 {
			continue
		}
		if err := s.Forget(g, drop); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// ForgetTopic of the directory store walks the offsets held in memory.
func (s *DirStore) ForgetTopic(topic string) (int, error) {
	return forgetTopicByGroup(s, topic)
}

// ForgetTopic deletes /consumers/<group>/offsets/<topic> of every group,
// the paper's ZooKeeper consumer groups included: their positions in the
// deleted topic mean nothing in a topic created again under its name.
func (z *ZooKeeperStore) ForgetTopic(topic string) (int, error) {
	if checkNames("x", topic) != nil {
		return 0, nil // never stored
	}
	names, err := z.Groups()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, g := range names {
		if checkNames(g) != nil {
			continue
		}
		path := z.s.Paths.Offsets(g, topic)
		ok, _, err := z.s.Conn.Exists(path)
		if err != nil {
			return n, fmt.Errorf("reading %s: %w", path, err)
		}
		if !ok {
			continue
		}
		if err := deleteTree(z.s.Conn, path); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return n, fmt.Errorf("deleting %s: %w", path, err)
		}
		n++
	}
	return n, nil
}
