package txnapi

// AddOffsetsToTxn (key 25), versions 0-3.
//
// A transactional producer adds a consumer group to its open transaction
// before it commits offsets for it with TxnOffsetCommit (Write on the
// transactional id, Read on the group). Kafka adds the group's
// __consumer_offsets partition; Tributary keeps the group in the
// transaction's state, and its offsets with it, until the commit.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/kafkaapi"
)

func init() {
	add(25, 0, 3, func(h *Handlers) kafkaapi.Serve { return kafkaapi.Async(h.addOffsetsToTxn) })
}

func (h *Handlers) addOffsetsToTxn(req *kafkaapi.Request, r *kmsg.AddOffsetsToTxnRequest) *kmsg.AddOffsetsToTxnResponse {
	resp := r.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	switch {
	case !h.authz.MayTxn(req.Who, kmsg.ACLOperationWrite, r.TransactionalID):
		resp.ErrorCode = acl.TxnRefused
	case !h.authz.MayGroup(req.Who, kmsg.ACLOperationRead, r.Group):
		resp.ErrorCode = acl.GroupRefused
	default:
		if resp.ErrorCode = h.refusal(r.TransactionalID); resp.ErrorCode != 0 {
			return resp
		}
		ctx, cancel := h.ctx()
		defer cancel()
		resp.ErrorCode = Code(h.txns.AddOffsets(ctx, r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Group), r.Version, 2)
	}
	return resp
}
