package group

import (
	"errors"
	"sort"
)

// TopicPartition names one partition of a topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Offset is a committed position: the next offset the group will consume,
// and the free-form metadata the client committed with it.
type Offset struct {
	Offset   int64
	Metadata string
}

// OffsetStore keeps committed offsets where they outlive the broker: the data
// directory of a standalone broker (DirStore), or the paper's offset registry
// in ZooKeeper for a cluster (ZooKeeperStore), which is what lets another
// broker take a group over when its coordinator dies.
//
// Implementations are safe for concurrent use. Commit returns only once the
// offsets are durable; a later Commit of the same partition wins over an
// earlier one that returned first.
type OffsetStore interface {
	// Load returns every committed offset of a group; an unknown group has
	// none (and no error).
	Load(group string) (map[TopicPartition]Offset, error)
	// Commit stores offsets, keeping the group's other partitions as they are.
	Commit(group string, offsets map[TopicPartition]Offset) error
	// Delete forgets a group's offsets. ErrNoGroup when none are stored;
	// ErrGroupInUse when consumers outside this coordinator still use it.
	Delete(group string) error
	// Groups lists the groups that have offsets stored, sorted.
	Groups() ([]string, error)
	// Forget removes some partitions' offsets of a group (OffsetDelete),
	// keeping the others; partitions with nothing stored are skipped.
	Forget(group string, partitions []TopicPartition) error
}

var (
	// ErrNoGroup is returned by Delete for a group with nothing stored.
	ErrNoGroup = errors.New("group has no committed offsets")
	// ErrGroupInUse is returned by Delete while consumers of the paper's
	// ZooKeeper groups are registered under the same name.
	ErrGroupInUse = errors.New("group still has registered consumers")
	// ErrInvalidGroup is returned for a group or topic name the store cannot
	// represent (ZooKeeper path elements are restricted).
	ErrInvalidGroup = errors.New("name cannot be stored")
)

func sortedNames(set map[string]bool) []string {
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
