// Package txnapi serves the transaction APIs: InitProducerId,
// AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn and
// WriteTxnMarkers for transactional producers and their coordinators;
// DescribeTransactions, ListTransactions and DescribeProducers for
// kafka-transactions; and FindCoordinator, for groups as well as
// transactional ids.
//
// One file per API holds its versions, its handler and its ACL rule (Write
// on the transactional id to change a transaction, Describe to see it,
// ClusterAction for what only brokers send). Which broker coordinates an
// id or a group is said by the broker (Config.TxnCoordinator,
// Config.GroupCoordinator, Config.Refusal); a handler answers
// NOT_COORDINATOR for an id another broker coordinates, so its client asks
// FindCoordinator again. The coordinator's answers become each version's
// codes through Code. What is the coordinator's backend rather than an
// API is broker/txnbackend's, given as functions: writing a marker into a
// partition this broker leads (Config.WriteMarker, also the coordinator's
// way to end its own partitions), and the inter-broker connections
// (Config.Peers) TxnOffsetCommit forwards offsets over. The offsets this
// broker forwarded as a group's coordinator are remembered here
// (forwarded.go) for OffsetFetch's RequireStable (ForwardedPending).
//
// The broker builds Handlers with New from what they use and adds them to
// its registry with Register; nothing here imports the root broker.
package txnapi

import (
	"context"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/group"
	"github.com/tributary-io/tributary/broker/kafkaapi"
	"github.com/tributary-io/tributary/broker/producerid"
	"github.com/tributary-io/tributary/broker/replication"
	"github.com/tributary-io/tributary/broker/txn"
	"github.com/tributary-io/tributary/cluster"
)

// Config is what the transaction APIs use from the broker.
type Config struct {
	Txns *txn.Coordinator
	// Authz decides each request (broker/acl's helper); nil allows
	// everything.
	Authz *acl.Authorizer
	// Refusal is NOT_COORDINATOR's code when this broker does not
	// coordinate the transactional id, 0 when it does.
	Refusal func(id string) int16
	// Topics is the cluster's view: ListTransactions has nothing to list
	// before txn.StateTopic exists; WriteTxnMarkers knows the other
	// brokers' addresses from it.
	Topics Topics
	// Closing is closed when the broker starts shutting down; a request's
	// work stops then.
	Closing <-chan struct{}
	Self    int32 // this broker's id
	Logger  *slog.Logger
	// TxnCoordinator and GroupCoordinator are the broker coordinating a
	// transactional id or a group; false when none is alive.
	TxnCoordinator   func(id string) (cluster.Broker, bool)
	GroupCoordinator func(group string) (cluster.Broker, bool)
	// Groups checks a transactional offset commit's membership (v3).
	Groups *group.Coordinator
	// ProducerIDs hands out idempotent producers' ids.
	ProducerIDs *producerid.IDs
	// Lookup finds a topic, never creating it (DescribeProducers), and
	// Replicas its partitions this broker leads.
	Lookup   func(name string) (cluster.Topic, int16)
	Replicas *replication.Manager
	// WriteMarker writes a transaction marker into partition p of t, which
	// this broker leads, and answers once it is replicated (0) or with the
	// error code.
	WriteMarker func(ctx context.Context, t cluster.Topic, p int32, pid int64, epoch int16, commit bool, coordEpoch int32) int16
	// Peers sends req to broker id over the kept inter-broker connection
	// and reads its answer into resp, within timeout.
	Peers func(id int32, req kmsg.Request, resp kmsg.Response, timeout time.Duration) error
	// Refuse logs a request for a feature not served (once a minute).
	Refuse func(feature, why string, attrs ...any)
}

// Topics is the part of cluster.Metadata the transaction APIs read.
type Topics interface {
	Topic(name string) (cluster.Topic, bool)
	Brokers() []cluster.Broker
}

// Handlers serves the transaction APIs of one broker.
type Handlers struct {
	txns             *txn.Coordinator
	authz            *acl.Authorizer
	refusal          func(id string) int16
	meta             Topics
	closing          <-chan struct{}
	self             int32
	logger           *slog.Logger
	txnCoordinator   func(string) (cluster.Broker, bool)
	groupCoordinator func(string) (cluster.Broker, bool)
	groups           *group.Coordinator
	pids             *producerid.IDs
	lookupTopic      func(string) (cluster.Topic, int16)
	replicas         *replication.Manager
	writeMarker      func(context.Context, cluster.Topic, int32, int64, int16, bool, int32) int16
	peers            func(int32, kmsg.Request, kmsg.Response, time.Duration) error
	refuse           func(string, string, ...any)
	fwd              forwardedTxns // forwarded.go
}

// New returns the transaction APIs over cfg. It only keeps cfg: the broker
// may build them before it serves.
func New(cfg Config) *Handlers {
	return &Handlers{
		txns: cfg.Txns, authz: cfg.Authz, refusal: cfg.Refusal, meta: cfg.Topics, closing: cfg.Closing,
		self: cfg.Self, logger: cfg.Logger, txnCoordinator: cfg.TxnCoordinator, groupCoordinator: cfg.GroupCoordinator,
		groups: cfg.Groups, pids: cfg.ProducerIDs, lookupTopic: cfg.Lookup, replicas: cfg.Replicas,
		writeMarker: cfg.WriteMarker, peers: cfg.Peers, refuse: cfg.Refuse,
	}
}

// ownsGroup reports whether this broker is the group's coordinator.
func (h *Handlers) ownsGroup(group string) bool {
	br, ok := h.groupCoordinator(group)
	return ok && br.ID == h.self
}

// apis are this package's APIs, each declared in its file's init.
var apis kafkaapi.APIs[*Handlers]

// add declares, from an API file's init, that h serves key in versions
// min..max with serve(h).
func add(key, min, max int16, serve func(*Handlers) kafkaapi.Serve) { apis.Add(key, min, max, serve) }

// Register adds every transaction API of this package to r.
func (h *Handlers) Register(r *kafkaapi.Registry) {
	apis.Register(r, h)
}

// Code turns the coordinator's answer into a request's error code:
// PRODUCER_FENCED exists from the version given (KIP-588); before it
// clients know the same condition as INVALID_PRODUCER_EPOCH.
func Code(err *kerr.Error, version, fencedFrom int16) int16 {
	if err == nil {
		return 0
	}
	if err == kerr.ProducerFenced && version < fencedFrom {
		return kerr.InvalidProducerEpoch.Code
	}
	return err.Code
}

// Timeout bounds one transaction request's work (state writes, markers).
const Timeout = 30 * time.Second

// Context bounds one transaction request's work: Timeout, or until closing
// is closed.
func Context(closing <-chan struct{}) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	go func() {
		select {
		case <-closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// ctx is Context for h's broker.
func (h *Handlers) ctx() (context.Context, context.CancelFunc) { return Context(h.closing) }
