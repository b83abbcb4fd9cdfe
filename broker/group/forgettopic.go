package group

import (
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// topicForgetter is implemented by stores that can drop a topic's offsets
// of every group more cheaply than loading each group.
type topicForgetter interface {
	ForgetTopic(topic string) (groups []string, err error)
}

// ForgetTopic drops every group's committed offsets of a deleted topic, as
// Kafka does: a topic created again under the same name starts from
// offset 0, and a group resuming at its old position would silently skip
// the new topic's first records (or, past its end, reset). It returns the
// number of groups that had offsets of the topic; those left with none
// stay listed for EmptiedGroupListed.
func (c *Coordinator) ForgetTopic(topic string) (int, error) {
	var groups []string
	var err error
	if f, ok := c.store.(topicForgetter); ok {
		groups, err = f.ForgetTopic(topic)
	} else {
		groups, err = forgetTopicByGroup(c.store, topic)
	}
	for _, g := range groups {
		c.markEmptiedIfGone(g)
	}
	return len(groups), err
}

// forgetTopicByGroup is ForgetTopic for any store: each group's offsets
// are loaded and those of the topic forgotten.
func forgetTopicByGroup(s OffsetStore, topic string) ([]string, error) {
	names, err := s.Groups()
	if err != nil {
		return nil, err
	}
	var forgot []string
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
		forgot = append(forgot, g)
	}
	return forgot, errors.Join(errs...)
}

// ForgetTopic of the directory store walks the offsets held in memory.
func (s *DirStore) ForgetTopic(topic string) ([]string, error) {
	return forgetTopicByGroup(s, topic)
}

// ForgetTopic deletes /consumers/<group>/offsets/<topic> of every group,
// the paper's ZooKeeper consumer groups included: their positions in the
// deleted topic mean nothing in a topic created again under its name.
func (z *ZooKeeperStore) ForgetTopic(topic string) ([]string, error) {
	if checkNames("x", topic) != nil {
		return nil, nil // never stored
	}
	names, err := z.Groups()
	if err != nil {
		return nil, err
	}
	var forgot []string
	for _, g := range names {
		if checkNames(g) != nil {
			continue
		}
		path := z.s.Paths.Offsets(g, topic)
		ok, _, err := z.s.Conn.Exists(path)
		if err != nil {
			return forgot, fmt.Errorf("reading %s: %w", path, err)
		}
		if !ok {
			continue
		}
		if err := deleteTree(z.s.Conn, path); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return forgot, fmt.Errorf("deleting %s: %w", path, err)
		}
		forgot = append(forgot, g)
	}
	return forgot, nil
}
