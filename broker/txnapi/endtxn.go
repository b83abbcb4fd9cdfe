package txnapi

// EndTxn (key 26), versions 0-4.
//
// Commits or aborts the producer's open transaction (Write on the
// transactional id). The answer comes once the decision is durable and the
// markers are written to every partition of the transaction (and, for a
// commit, its offsets to their groups); if some partition's leader could
// not be reached, the decision stands, the answer is still success, and
// the coordinator completes it in the background, as Kafka's does. v5
// (KIP-890's transaction version 2, an epoch bump per transaction) is not
// served: clients then use version 1's protocol.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/kafkaapi"
)

func init() {
	add(26, 0, 4, func(h *Handlers) kafkaapi.Serve { return kafkaapi.Async(h.endTxn) })
}

func (h *Handlers) endTxn(req *kafkaapi.Request, r *kmsg.EndTxnRequest) *kmsg.EndTxnResponse {
	resp := r.ResponseKind().(*kmsg.EndTxnResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if !h.authz.MayTxn(req.Who, kmsg.ACLOperationWrite, r.TransactionalID) {
		resp.ErrorCode = acl.TxnRefused
		return resp
	}
	if resp.ErrorCode = h.refusal(r.TransactionalID); resp.ErrorCode != 0 {
		return resp
	}
	ctx, cancel := h.ctx()
	defer cancel()
	resp.ErrorCode = Code(h.txns.EndTxn(ctx, r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit), r.Version, 2)
	return resp
}
