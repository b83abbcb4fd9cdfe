package broker

// Helpers the root's transaction APIs share (addpartitionstotxn.go,
// initproducerid.go, txnoffsetcommit.go, writetxnmarkers.go, ...): the ACL
// rule on transactional ids (broker/acl's MayTxn) and the mapping of the
// coordinator's answers to what each API version knows, both written once
// for them and broker/txnapi.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/txnapi"
)

// txnRefused is the answer to a client without rights on a transactional id.
var txnRefused = acl.TxnRefused

// mayTxn reports whether the client of req may op the transactional id.
func (b *Broker) mayTxn(req *request, op kmsg.ACLOperation, id string) bool {
	return b.authz.MayTxn(req.who(), op, id)
}

// txnCode is txnapi.Code: PRODUCER_FENCED from the version given, and
// INVALID_PRODUCER_EPOCH before it.
func txnCode(err *kerr.Error, version, fencedFrom int16) int16 {
	return txnapi.Code(err, version, fencedFrom)
}

// txnCtx bounds one transaction request's work (state writes, markers).
func (b *Broker) txnCtx() (context.Context, context.CancelFunc) {
	return txnapi.Context(b.closing)
}
