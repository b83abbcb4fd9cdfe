// Package cluster is the shared record of a Tributary cluster and the
// ZooKeeper plumbing that keeps it: which brokers are alive, which broker
// owns each topic partition, and, in ZooKeeper, the paper's consumer
// registry, partition owners and committed offsets.
//
// Brokers keep and serve the record (Metadata): a standalone broker in its
// data directory (Standalone), brokers in a cluster through ZooKeeper
// (JoinZooKeeper), the paper's broker registry and topic assignments.
// Clients read the same nodes: the consumer and the mirror watch them to
// balance partitions (ZKSession, ZKWatch, the Decode*Node functions), and
// the producer and tools find brokers to start from (DiscoverBrokers).
//
// Every broker of a cluster reads the same record, so every broker answers
// Metadata the same way, and a broker serves only the partitions it leads.
// A topic has one replica per partition unless it was created replicated
// (ZooKeeper.CreateReplicatedTopic): then each partition's state node
// (leader, leader epoch, ISR) decides who leads, kept by the controller
// (controller.go) and the leader (SetISR), both with version-checked
// writes, so a replaced controller or leader cannot overwrite newer state,
// and broker epochs (brokerepochs.go) that tell a restarted broker from
// the incarnation the state recorded, so it neither leads nor stays in
// sync on what it may have lost.
// The controller also gives partitions back to their preferred leaders
// (preferred.go) and carries partition moves through (reassign.go), only
// ever electing an in-sync replica unless a topic allows unclean
// election; replicas of new partitions go to different racks first
// (racks.go). The ZooKeeper
// paths (ZKPaths) and node formats (Decode*Node, which refuse what no
// writer makes) are defined once here, so every reader agrees on them.
package cluster

import (
	"context"
	"errors"
	"sort"
)

// Broker is one member of the cluster as clients see it in Metadata.
// Host and Port are the broker's first PLAINTEXT endpoint (or its only
// one), kept so that readers written before listeners existed still find
// it; Endpoints lists every listener.
type Broker struct {
	ID        int32      `json:"id"`
	Host      string     `json:"host"`
	Port      int32      `json:"port"`
	Endpoints []Endpoint `json:"endpoints,omitempty"`
	// Rack is where the broker runs (a rack, a zone), "" unknown: the
	// replicas of a partition go to different racks first (racks.go).
	Rack string `json:"rack,omitempty"`
}

// Endpoint is where clients of one listener reach a broker. Listener is the
// listener's name, which is its security protocol (PLAINTEXT, SSL,
// SASL_PLAINTEXT, SASL_SSL).
type Endpoint struct {
	Listener string `json:"listener"`
	Host     string `json:"host"`
	Port     int32  `json:"port"`
}

// Endpoint returns where clients of the named listener reach b. A broker
// registered without endpoints (by an older version) has only its
// PLAINTEXT address; a broker without that listener has none (ok false).
func (b Broker) Endpoint(listener string) (host string, port int32, ok bool) {
	if len(b.Endpoints) == 0 {
		return b.Host, b.Port, listener == "PLAINTEXT"
	}
	for _, e := range b.Endpoints {
		if e.Listener == listener {
			return e.Host, e.Port, true
		}
	}
	return "", 0, false
}

// Topic is a topic's partition assignment: Leaders[p] is the id of the broker
// that leads partition p (-1 while a replicated partition has no leader).
// Replicas[p] lists the brokers storing it (nil for a topic with one
// replica per partition, see ReplicasOf); States[p] is a replicated
// partition's state node as last read (see StateOf), whose leader
// Leaders[p] repeats.
type Topic struct {
	Name     string            `json:"name"`
	ID       TopicID           `json:"id,omitzero"`
	Leaders  []int32           `json:"leaders"`
	Replicas [][]int32         `json:"replicas,omitempty"`
	States   []PartitionState  `json:"-"`
	Configs  map[string]string `json:"configs,omitempty"`
	// Reassigning holds the partitions being moved (reassign.go).
	Reassigning map[int32]Reassignment `json:"-"`
}

// Partitions is the topic's partition count.
func (t Topic) Partitions() int32 { return int32(len(t.Leaders)) }

// Metadata is what the broker needs to know about the cluster. Implementations
// are safe for concurrent use.
type Metadata interface {
	// Self is the broker this process runs.
	Self() Broker
	// ClusterID is the cluster's persistent random id.
	ClusterID() string
	// Brokers lists the live brokers, sorted by id.
	Brokers() []Broker
	// Topic returns one topic's assignment.
	Topic(name string) (Topic, bool)
	// Topics lists every topic, sorted by name.
	Topics() []Topic
	// CreateTopic assigns the partitions of a new topic over the live brokers.
	// It returns ErrTopicExists when the name is taken.
	CreateTopic(ctx context.Context, name string, partitions int32, configs map[string]string) (Topic, error)
	// DeleteTopic removes a topic's assignment. ErrUnknownTopic when absent.
	DeleteTopic(ctx context.Context, name string) error
	// SetTopicConfigs replaces a topic's configs (nil clears them) and
	// returns the topic as changed. ErrUnknownTopic when absent.
	SetTopicConfigs(ctx context.Context, name string, configs map[string]string) (Topic, error)
	// AddPartitions grows a topic to total partitions, placing the new ones
	// over the live brokers. ErrUnknownTopic when absent; an error when
	// total is not larger than the current count.
	AddPartitions(ctx context.Context, name string, total int32) (Topic, error)
	// Changed returns a channel closed at the next change of brokers or topics.
	Changed() <-chan struct{}
	// Close leaves the cluster.
	Close() error
}

var (
	// ErrTopicExists is returned when creating a topic whose name is taken.
	ErrTopicExists = errors.New("topic already exists")
	// ErrUnknownTopic is returned for a topic that does not exist.
	ErrUnknownTopic = errors.New("unknown topic")
	// ErrNoBrokers is returned when a topic cannot be assigned because no
	// broker is alive.
	ErrNoBrokers = errors.New("no live brokers to assign partitions to")
)

// Spread assigns partitions round-robin over brokers sorted by id, starting at
// an offset derived from the topic name so that many small topics do not all
// start on the first broker.
func Spread(name string, partitions int32, brokers []Broker) ([]int32, error) {
	if len(brokers) == 0 {
		return nil, ErrNoBrokers
	}
	ids := make([]int32, len(brokers))
	for i, b := range brokers {
		ids[i] = b.ID
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	start := int(nameHash(name) % uint32(len(ids)))
	leaders := make([]int32, partitions)
	for p := range leaders {
		leaders[p] = ids[(start+p)%len(ids)]
	}
	return leaders, nil
}

// nameHash is FNV-1a of a topic name: where its round-robin starts.
func nameHash(name string) uint32 {
	var h uint32 = 2166136261
	for i := 0; i < len(name); i++ {
		h = (h ^ uint32(name[i])) * 16777619
	}
	return h
}
