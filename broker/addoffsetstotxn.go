package broker

// AddOffsetsToTxn.
//
// v0–3: a transactional producer adds a consumer group to its open
// transaction before it commits offsets for it with TxnOffsetCommit
// (Write on the transactional id, Read on the group). Kafka adds the
// group's __consumer_offsets partition; Tributary keeps the group in the
// transaction's state, and its offsets with it, until the commit.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(25, 0, 3, async((*Broker).addOffsetsToTxn))
}

func (b *Broker) addOffsetsToTxn(req *request, r *kmsg.AddOffsetsToTxnRequest) *kmsg.AddOffsetsToTxnResponse {
	resp := r.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	switch {
	case !b.mayTxn(req, kmsg.ACLOperationWrite, r.TransactionalID):
		resp.ErrorCode = txnRefused
	case !b.mayGroup(req, kmsg.ACLOperationRead, r.Group):
		resp.ErrorCode = groupRefused
	default:
		if resp.ErrorCode = b.txnCoordinatorRefusal(r.TransactionalID); resp.ErrorCode != 0 {
			return resp
		}
		ctx, cancel := b.txnCtx()
		defer cancel()
		resp.ErrorCode = txnCode(b.txns.AddOffsets(ctx, r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Group), r.Version, 2)
	}
	return resp
}
