// Package txnapi serves the transaction APIs that talk only to this
// broker's transaction coordinator (broker/txn): AddOffsetsToTxn and
// EndTxn for a transactional producer, DescribeTransactions and
// ListTransactions for kafka-transactions.
//
// One file per API holds its versions, its handler and its ACL rule (Write
// on the transactional id to change a transaction, Describe to see it).
// Which broker coordinates an id is the root's to say (Config.Refusal: the
// leader of the id's __transaction_state partition); a handler answers
// NOT_COORDINATOR for an id another broker coordinates, so its client asks
// FindCoordinator again. The coordinator's answers become each version's
// codes through Code, which the root's transaction APIs use too.
//
// The transaction APIs that reach into partitions or other brokers
// (AddPartitionsToTxn, WriteTxnMarkers, InitProducerId, TxnOffsetCommit,
// FindCoordinator) are still the root's.
//
// The broker builds Handlers with New from what they use and adds them to
// its registry with Register; nothing here imports the root broker.
package txnapi

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/kafkaapi"
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
	// Topics is the cluster's view of topics: ListTransactions has
	// nothing to list before txn.StateTopic exists.
	Topics Topics
	// Closing is closed when the broker starts shutting down; a request's
	// work stops then.
	Closing <-chan struct{}
}

// Topics is the part of cluster.Metadata the transaction APIs read.
type Topics interface {
	Topic(name string) (cluster.Topic, bool)
}

// Handlers serves the transaction APIs of one broker.
type Handlers struct {
	txns    *txn.Coordinator
	authz   *acl.Authorizer
	refusal func(id string) int16
	meta    Topics
	closing <-chan struct{}
}

// New returns the transaction APIs over cfg. It only keeps cfg: the broker
// may build them before it serves.
func New(cfg Config) *Handlers {
	return &Handlers{txns: cfg.Txns, authz: cfg.Authz, refusal: cfg.Refusal, meta: cfg.Topics, closing: cfg.Closing}
}

// api is one API of this package, declared in its file's init.
type api struct {
	key, min, max int16
	serve         func(*Handlers) kafkaapi.Serve
}

var apis []api

// add declares, from an API file's init, that h serves key in versions
// min..max with serve(h).
func add(key, min, max int16, serve func(*Handlers) kafkaapi.Serve) {
	apis = append(apis, api{key, min, max, serve})
}

// Register adds every transaction API of this package to r.
func (h *Handlers) Register(r *kafkaapi.Registry) {
	for _, x := range apis {
		r.Register(x.key, x.min, x.max, x.serve(h))
	}
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
