package group

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DeleteOffsets forgets some committed offsets of a group (OffsetDelete),
// so that the group starts those partitions from its reset policy next
// time. The group-level error is GROUP_ID_NOT_FOUND for a group with
// neither members nor offsets and NON_EMPTY_GROUP for a group with members
// that does not use the consumer protocol (its subscriptions cannot be
// read). A partition of a topic a live member subscribes to is refused
// with GROUP_SUBSCRIBED_TO_TOPIC: the group would commit it again at once.
func (c *Coordinator) DeleteOffsets(name string, partitions []TopicPartition) (map[TopicPartition]*kerr.Error, *kerr.Error) {
	c.mu.Lock()
	if err := c.check(name); err != nil {
		c.mu.Unlock()
		return nil, err
	}
	var subscribed map[string]bool
	if g := c.groups[name]; g != nil && len(g.members) > 0 {
		if g.protocolType != "consumer" {
			c.mu.Unlock()
			return nil, kerr.NonEmptyGroup
		}
		subscribed = map[string]bool{}
		for _, m := range g.members {
			var meta kmsg.ConsumerMemberMetadata
			if err := meta.ReadFrom(m.metadata(g.protocol)); err != nil {
				c.mu.Unlock()
				return nil, kerr.NonEmptyGroup
			}
			for _, t := range meta.Topics {
				subscribed[t] = true
			}
		}
	}
	if cg := c.consumers[name]; cg != nil && len(cg.members) > 0 {
		subscribed = map[string]bool{}
		for _, t := range c.cfg.Topics() {
			for _, m := range cg.members {
				if m.subscribesTo(t) {
					subscribed[t.Name] = true
				}
			}
		}
	}
	live := subscribed != nil
	emptied := c.emptiedLocked(name)
	c.mu.Unlock()

	stored, err := c.store.Load(name)
	if err != nil {
		c.log.Error("reading committed offsets", "group", name, "err", err)
		return nil, kerr.CoordinatorNotAvailable
	}
	if len(stored) == 0 && !live && !emptied {
		return nil, kerr.GroupIDNotFound
	}
	out := make(map[TopicPartition]*kerr.Error, len(partitions))
	var forget []TopicPartition
	for _, tp := range partitions {
		if subscribed[tp.Topic] {
			out[tp] = kerr.GroupSubscribedToTopic
			continue
		}
		out[tp] = nil
		forget = append(forget, tp)
	}
	if len(forget) > 0 {
		if err := c.store.Forget(name, forget); err != nil {
			c.log.Error("deleting committed offsets", "group", name, "err", err)
			for _, tp := range forget {
				out[tp] = kerr.CoordinatorNotAvailable
			}
			return out, nil
		}
		c.log.Info("committed offsets deleted", "group", name, "partitions", len(forget))
		if !live {
			c.markEmptiedIfGone(name)
		}
	}
	return out, nil
}

// Forget rewrites the group's file without the partitions; a group left
// with no offsets is removed, as Delete would.
func (s *DirStore) Forget(group string, partitions []TopicPartition) error {
	g := s.group(group, false)
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.deleted {
		return nil
	}
	next := maps.Clone(g.offsets)
	for _, tp := range partitions {
		delete(next, tp)
	}
	if len(next) == len(g.offsets) {
		return nil
	}
	if len(next) == 0 {
		s.mu.Lock()
		if s.groups[group] == g {
			delete(s.groups, group)
		}
		s.mu.Unlock()
		g.deleted = true
		if err := removeFile(s.dir, dirFileName(group)); err != nil {
			return fmt.Errorf("deleting committed offsets of group %q: %w", group, err)
		}
		return nil
	}
	if err := s.writeLocked(group, next); err != nil {
		return err
	}
	g.offsets = next
	return nil
}

// Forget deletes the partitions' offset registry nodes.
func (z *ZooKeeperStore) Forget(group string, partitions []TopicPartition) error {
	for _, tp := range partitions {
		if checkNames(group, tp.Topic) != nil {
			continue // never stored
		}
		err := z.s.Conn.Delete(z.s.Paths.Offset(group, tp.Topic, tp.Partition), -1)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("deleting offset of group %s, %s/%d: %w", group, tp.Topic, tp.Partition, err)
		}
	}
	return nil
}

func removeFile(dir, name string) error {
	err := os.Remove(filepath.Join(dir, name))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}
