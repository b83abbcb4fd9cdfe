package broker

// The transaction APIs (broker/txnapi) and what the root keeps of them:
// the ACL rule on transactional ids for Produce (broker/acl's MayTxn), and
// newTxnAPIs, which gives txnapi the coordinator's backend as functions
// (placement, markers, the inter-broker connections).

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/txnapi"
	"github.com/tributary-io/tributary/cluster"
)

// txnRefused is the answer to a client without rights on a transactional id.
var txnRefused = acl.TxnRefused

// mayTxn reports whether the client of req may op the transactional id.
func (b *Broker) mayTxn(req *request, op kmsg.ACLOperation, id string) bool {
	return b.authz.MayTxn(req.who(), op, id)
}

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
