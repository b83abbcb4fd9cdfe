package broker

// EndTxn.
//
// v0–4: commits or aborts the producer's open transaction (Write on the
// transactional id). The answer comes once the decision is durable and the
// markers are written to every partition of the transaction (and, for a
// commit, its offsets to their groups); if some partition's leader could
// not be reached, the decision stands, the answer is still success, and
// the coordinator completes it in the background, as Kafka's does. v5
// (KIP-890's transaction version 2, an epoch bump per transaction) is not
// served: clients then use version 1's protocol.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(26, 0, 4, async((*Broker).endTxn))
}

func (b *Broker) endTxn(req *request, r *kmsg.EndTxnRequest) *kmsg.EndTxnResponse {
	resp := r.ResponseKind().(*kmsg.EndTxnResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if !b.mayTxn(req, kmsg.ACLOperationWrite, r.TransactionalID) {
		resp.ErrorCode = txnRefused
		return resp
	}
	if resp.ErrorCode = b.txnCoordinatorRefusal(r.TransactionalID); resp.ErrorCode != 0 {
		return resp
	}
	ctx, cancel := b.txnCtx()
	defer cancel()
	resp.ErrorCode = txnCode(b.txns.EndTxn(ctx, r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit), r.Version, 2)
	return resp
}
