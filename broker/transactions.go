package broker

// The transaction coordinator as the root wires it: broker/txn is the
// coordinator, broker/txnbackend what it stands on here (its state
// partitions, markers, placement, the inter-broker connections) and
// broker/txnapi the APIs that reach it.

import (
	"github.com/tributary-io/tributary/broker/txn"
	"github.com/tributary-io/tributary/broker/txnapi"
	"github.com/tributary-io/tributary/broker/txnbackend"
	"github.com/tributary-io/tributary/cluster"
)

// startTxns starts the transaction coordinator on its backend. New calls
// it once the group coordinator (whose offsets a commit writes) is started.
func (b *Broker) startTxns() {
	cfg := b.cfg.Transactions
	if cfg.Logger == nil {
		cfg.Logger = b.logger
	}
	cfg.Partitions = txnbackend.StatePartitions(b.meta, cfg.Partitions)
	b.txnBackend = txnbackend.New(txnbackend.Config{
		Self: b.selfID, Meta: b.meta, Replicas: b.replicas, StorageError: b.logs.StorageError,
		CreateTopic: b.topics.CreateReplicated, ReplicationFactor: b.cfg.DefaultReplicationFactor,
		Partitions:    cfg.Partitions,
		NewProducerID: func() (int64, error) { return b.pids.Next("") },
		Offsets:       b.groups.Store(),
		Listener:      b.interBrokerListener(), InterBroker: b.cfg.InterBroker,
		Logger: b.logger,
	})
	b.txns = txn.New(b.txnBackend, cfg)
}

func (b *Broker) closeTxns() {
	if b.txns != nil {
		b.txns.Close()
	}
	if b.txnBackend != nil {
		b.txnBackend.Close()
	}
}

// newTxnAPIs builds the transaction APIs from what they use of b: the
// coordinator, its backend's placement, markers and peers.
func (b *Broker) newTxnAPIs() *txnapi.Handlers {
	return txnapi.New(txnapi.Config{
		Txns:             b.txns,
		Authz:            b.authz,
		Refusal:          b.txnBackend.Refusal,
		Topics:           b.meta,
		Closing:          b.closing,
		Self:             b.selfID,
		Logger:           b.logger,
		TxnCoordinator:   b.txnBackend.CoordinatorFor,
		GroupCoordinator: b.coordinatorFor,
		Groups:           b.groups,
		ProducerIDs:      b.pids,
		Lookup:           func(name string) (cluster.Topic, int16) { return b.lookupTopic(name, false) },
		Replicas:         b.replicas,
		WriteMarker:      b.txnBackend.WriteMarker,
		Peers:            b.txnBackend.RoundTrip,
		Refuse:           b.refuse,
	})
}
