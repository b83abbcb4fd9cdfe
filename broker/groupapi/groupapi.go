// Package groupapi serves the consumer group APIs: the classic protocol
// (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), KIP-848's
// (ConsumerGroupHeartbeat, ConsumerGroupDescribe), committed offsets
// (OffsetCommit, OffsetFetch, OffsetDelete) and group administration
// (ListGroups, DescribeGroups, DeleteGroups), over broker/group's
// coordinator.
//
// One file per API holds its versions, its handler and its ACL rule. A
// handler turns its request into a coordinator call and the answer into
// its version's response; what a group is, who coordinates it and where
// its offsets live are broker/group's and the broker's (FindCoordinator
// places groups; a group this broker does not coordinate is answered
// NOT_COORDINATOR by the coordinator). Handlers that wait for a rebalance
// end with COORDINATOR_NOT_AVAILABLE once Config.Closing is closed.
//
// The broker builds Handlers with New from what they use and adds them to
// its registry with Register; nothing here imports the root broker.
package groupapi

import (
	"net"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/group"
	"github.com/tributary-io/tributary/broker/kafkaapi"
	"github.com/tributary-io/tributary/cluster"
)

// Config is what the group APIs use from the broker.
type Config struct {
	Groups *group.Coordinator
	// Authz decides each request (broker/acl's helper); nil allows
	// everything.
	Authz *acl.Authorizer
	// Topics is the cluster's view of topics: which exist, with how many
	// partitions, and their ids (KIP-848 names partitions by topic id).
	Topics Topics
	// Closing is closed when the broker starts shutting down.
	Closing <-chan struct{}
	// PendingTxnOffsets returns the partitions of a group whose offsets
	// an unfinished transaction holds, for OffsetFetch's RequireStable;
	// nil when none does.
	PendingTxnOffsets func(group string) map[group.TopicPartition]bool
}

// Topics is the part of cluster.Metadata the group APIs read.
type Topics interface {
	Topic(name string) (cluster.Topic, bool)
	Topics() []cluster.Topic
}

// Handlers serves the group APIs of one broker.
type Handlers struct {
	groups  *group.Coordinator
	authz   *acl.Authorizer
	meta    Topics
	closing <-chan struct{}
	pending func(group string) map[group.TopicPartition]bool
}

// New returns the group APIs over cfg. It only keeps cfg: the broker may
// build them before it serves.
func New(cfg Config) *Handlers {
	return &Handlers{groups: cfg.Groups, authz: cfg.Authz, meta: cfg.Topics, closing: cfg.Closing, pending: cfg.PendingTxnOffsets}
}

// apis are this package's APIs, each declared in its file's init.
var apis kafkaapi.APIs[*Handlers]

// add declares, from an API file's init, that h serves key in versions
// min..max with serve(h).
func add(key, min, max int16, serve func(*Handlers) kafkaapi.Serve) { apis.Add(key, min, max, serve) }

// Register adds every group API to r.
func (h *Handlers) Register(r *kafkaapi.Registry) {
	apis.Register(r, h)
}

// codeOf is the wire code of a coordinator error (nil: none).
func codeOf(err *kerr.Error) int16 {
	if err == nil {
		return 0
	}
	return err.Code
}

// clientHost is how Kafka shows a member's address in DescribeGroups.
func clientHost(addr net.Addr) string {
	if host, _, err := net.SplitHostPort(addr.String()); err == nil {
		return "/" + host
	}
	return "/" + addr.String()
}
