package partition

// Tombstones of deleted topics in the partition table.
//
// Two things go wrong when deleting a topic without care, each logged as
// an error. First, a request looks its topic up in the cluster view, then opens the
// partition's log. A request that looked the topic up just before a
// DeleteTopics would, without a tombstone, open the log again after the
// delete closed it: the log recreates the directory the delete is
// removing, and its later close writes its checkpoints into a directory
// that is gone, both logged as errors, and the reopened log is left
// behind holding descriptors of a topic that no longer exists. Second,
// two deletions of the same topic (DeleteTopics and the view watcher) race
// one's directory removal against the other's close.

import (
	"errors"
	"sync"

	"github.com/tributary-io/tributary/cluster"
)

// ErrTopicDeleted is returned by Get for a topic deleted after the caller
// looked it up; clients get UNKNOWN_TOPIC_OR_PARTITION.
var ErrTopicDeleted = errors.New("topic was deleted")

// maxTombstones bounds the tombstones kept; the oldest go first. A
// tombstone matters only for the moment a request takes between its
// lookup and its open, so losing an old one costs nothing.
const maxTombstones = 4096

// tombstones remembers the topics deleted by this process, by name.
type tombstones struct {
	names map[string]bool
	order []string // insertion order, for the bound

	// deleting serializes deleteTopic: DeleteTopics and the broker's view
	// watcher both delete a topic's partitions, and one's RemoveAll of the
	// directory must not run while the other's Close still writes its
	// checkpoints into it.
	deleting sync.Mutex
}

// buryLocked records topic as deleted. Call with ps.mu held.
func (ps *Table) buryLocked(topic string) {
	ts := &ps.dead
	if ts.names == nil {
		ts.names = map[string]bool{}
	}
	if ts.names[topic] {
		return
	}
	ts.names[topic] = true
	ts.order = append(ts.order, topic)
	for len(ts.order) > maxTombstones {
		delete(ts.names, ts.order[0])
		ts.order = ts.order[1:]
	}
}

// refuseDeletedLocked returns ErrTopicDeleted when t is a topic deleted by
// this process and the cluster view no longer holds that very topic (same
// id). A topic created again under the name is in the view with a new id:
// its first open lifts the tombstone. Call with ps.mu held.
func (ps *Table) refuseDeletedLocked(t cluster.Topic) error {
	if !ps.dead.names[t.Name] {
		return nil
	}
	if ps.current != nil {
		if cur, ok := ps.current(t.Name); ok && cur.ID == t.ID {
			delete(ps.dead.names, t.Name) // left in order; harmless
			return nil
		}
	}
	return ErrTopicDeleted
}
