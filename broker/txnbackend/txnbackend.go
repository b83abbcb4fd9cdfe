// Package txnbackend is what the transaction coordinator (broker/txn)
// stands on in a broker: its txn.Backend, and the coordinator's reach
// into the cluster.
//
// A transactional id's coordinator is the leader of its
// __transaction_state partition (Kafka's placement: the Java hash of the
// id modulo the partition count, CoordinatorFor), so its state fails over
// with that partition's leadership, and the state is as durable as any
// acks=all write. A standalone broker leads every partition.
//
// What a caller may rely on:
//   - State records are appended only in the leader epoch the coordinator
//     read them in, and AppendState returns once they are replicated: a
//     coordinator that lost its partition cannot overwrite its successor.
//   - The state topic is created on first use, compacted, with the shape
//     broker/internaltopic requires.
//   - WriteMarkers writes each partition's marker into its leader's log:
//     this broker's own directly (WriteMarker, acks=all), others' with
//     WriteTxnMarkers over one kept inter-broker connection per peer
//     (RoundTrip, also used by broker/txnapi and VerifyRemote). It names
//     the partitions that failed, so the coordinator retries only those.
//
// The broker builds a Backend with New from the few parts it uses; nothing
// here imports the root broker.
package txnbackend

import (
	"context"
	"log/slog"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/group"
	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/netserver"
	"github.com/tributary-io/tributary/broker/replication"
	"github.com/tributary-io/tributary/broker/txn"
	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/clientsec"
)

// Config is what the backend uses of the broker.
type Config struct {
	Self int32 // this broker's id
	// Meta is the cluster's view: the state topic's leaders, the other
	// brokers' addresses.
	Meta Metadata
	// Replicas are the partitions this broker leads (broker/replication).
	Replicas Replicas
	// StorageError is the code a client gets for a failed append, which
	// it also logs (partition.Table.StorageError).
	StorageError func(l *log.Log, err error) int16
	// CreateTopic creates the state topic with rf replicas
	// (topicapi.Handlers.CreateReplicated).
	CreateTopic       func(ctx context.Context, name string, partitions int32, rf int, configs map[string]string) (cluster.Topic, error)
	ReplicationFactor int
	// Partitions of the state topic (StatePartitions).
	Partitions int32
	// NewProducerID hands out a producer id (producerid.IDs.Next).
	NewProducerID func() (int64, error)
	// Offsets is the group offset store a committed transaction's
	// offsets go to (group.Coordinator.Store).
	Offsets group.OffsetStore
	// Listener and InterBroker are how peers are reached: their
	// inter-broker listener, logged in as this broker.
	Listener    netserver.SecurityProtocol
	InterBroker clientsec.Kafka
	Logger      *slog.Logger
}

// Metadata is the part of the cluster view the backend reads.
type Metadata interface {
	Topic(name string) (cluster.Topic, bool)
	Brokers() []cluster.Broker
	Self() cluster.Broker
}

// Replicas is the part of broker/replication the backend writes through.
type Replicas interface {
	Lookup(t cluster.Topic, p int32) (replication.Partition, int16)
	Lead(t cluster.Topic, p int32, l *log.Log) (cluster.PartitionState, error)
	WaitReplicated(ctx context.Context, t cluster.Topic, p int32, l *log.Log, last int64) error
}

// Backend is the coordinator's view of the broker (txn.Backend), and the
// coordinator's placement and peers for the transaction APIs.
type Backend struct {
	cfg   Config
	peers peers // peers.go
	// markers counts the markers written here: abort, commit.
	markers [2]atomic.Int64
}

var _ txn.Backend = (*Backend)(nil)

// New returns a backend over cfg's parts.
func New(cfg Config) *Backend { return &Backend{cfg: cfg} }

// DefaultStatePartitions is Kafka's transaction.state.log.num.partitions.
const DefaultStatePartitions = 50

// StatePartitions is the state topic's partition count: the existing
// topic's (fixed when it was made: placement depends on it), else
// configured, else the default.
func StatePartitions(meta Metadata, configured int32) int32 {
	if t, ok := meta.Topic(txn.StateTopic); ok {
		return t.Partitions()
	}
	if configured <= 0 {
		return DefaultStatePartitions
	}
	return configured
}

// Close closes the kept peer connections.
func (tb *Backend) Close() { tb.peers.close() }

// CoordinatorFor is the broker coordinating id: the leader of its state
// partition, or (before the topic exists) this broker, which creates it
// on the first request.
func (tb *Backend) CoordinatorFor(id string) (cluster.Broker, bool) {
	t, ok := tb.cfg.Meta.Topic(txn.StateTopic)
	if !ok {
		return tb.cfg.Meta.Self(), true
	}
	p := txn.PartitionFor(id, t.Partitions())
	if p >= t.Partitions() || t.Leaders[p] < 0 {
		return cluster.Broker{}, false
	}
	for _, br := range tb.cfg.Meta.Brokers() {
		if br.ID == t.Leaders[p] {
			return br, true
		}
	}
	return cluster.Broker{}, false
}

// Refusal is NOT_COORDINATOR when this broker does not coordinate id (its
// client asks FindCoordinator again), 0 when it does.
func (tb *Backend) Refusal(id string) int16 {
	if br, ok := tb.CoordinatorFor(id); !ok || br.ID != tb.cfg.Self {
		return kerr.NotCoordinator.Code
	}
	return 0
}

// Markers counts the markers written into partitions this broker leads.
func (tb *Backend) Markers() (commits, aborts int64) {
	return tb.markers[1].Load(), tb.markers[0].Load()
}

// LedStatePartitions counts the state partitions this broker leads, once
// the topic exists (it is made at the first transactional request).
func (tb *Backend) LedStatePartitions() int {
	t, ok := tb.cfg.Meta.Topic(txn.StateTopic)
	if !ok {
		return 0
	}
	n := 0
	for p := range t.Partitions() {
		if st, ok := t.StateOf(p); ok && st.Leader == tb.cfg.Self {
			n++
		}
	}
	return n
}
