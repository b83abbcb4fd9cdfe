package broker

// Helpers the transaction APIs share (addpartitionstotxn.go, endtxn.go,
// ...): the ACL rule on transactional ids and the mapping of the
// coordinator's answers to what each API version knows.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnRefused is the answer to a client without rights on a transactional id.
var txnRefused = kerr.TransactionalIDAuthorizationFailed.Code

// mayTxn reports whether the client of req may op the transactional id.
func (b *Broker) mayTxn(req *request, op kmsg.ACLOperation, id string) bool {
	return b.may(req, op, kmsg.ACLResourceTypeTransactionalId, id)
}

// txnCode turns the coordinator's answer into the request's error code:
// PRODUCER_FENCED exists from the version given (KIP-588); before it
// clients know the same condition as INVALID_PRODUCER_EPOCH.
func txnCode(err *kerr.Error, version, fencedFrom int16) int16 {
	if err == nil {
		return 0
	}
	if err == kerr.ProducerFenced && version < fencedFrom {
		return kerr.InvalidProducerEpoch.Code
	}
	return err.Code
}

// txnCtx bounds one transaction request's work (state writes, markers).
func (b *Broker) txnCtx() (context.Context, context.CancelFunc) {
	ctx, cancel := b.ctx()
	ctx, cancelT := context.WithTimeout(ctx, 30*time.Second)
	return ctx, func() { cancelT(); cancel() }
}
