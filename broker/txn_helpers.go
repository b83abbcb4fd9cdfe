package broker

// The transaction APIs (broker/txnapi): newTxnAPIs gives txnapi the
// coordinator's backend as functions (placement, markers, the
// inter-broker connections).

import (
	"github.com/tributary-io/tributary/broker/txnapi"
	"github.com/tributary-io/tributary/cluster"
)

// newTxnAPIs builds the transaction APIs from what they use of b. New
// calls it (newAPIs) once the coordinators are started.
func (b *Broker) newTxnAPIs() *txnapi.Handlers {
	return txnapi.New(txnapi.Config{
		Txns:             b.txns,
		Authz:            b.authz,
		Refusal:          b.txnCoordinatorRefusal,
		Topics:           b.meta,
		Closing:          b.closing,
		Self:             b.selfID,
		Logger:           b.logger,
		TxnCoordinator:   b.txnCoordinatorFor,
		GroupCoordinator: b.coordinatorFor,
		Groups:           b.groups,
		ProducerIDs:      b.pids,
		Lookup:           func(name string) (cluster.Topic, int16) { return b.lookupTopic(name, false) },
		Replicas:         b.replicas,
		WriteMarker:      b.writeMarker,
		Peers:            b.interBrokerRoundTrip,
		Refuse:           b.refuse,
	})
}
