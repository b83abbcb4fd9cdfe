package txnapi

// InitProducerId (key 22), versions 0-4.
//
// Hands idempotent producers a producer id (broker/producerid: never
// reused, unguessable); the per-partition sequence checks live in the
// storage engine (broker/log), which sees every batch in order. As Kafka
// does for a producer without a transactional id, a request naming an
// existing id and epoch (v3+, after an error) gets a new id: bumping the
// epoch of a named id would let anyone fence a stranger. Each id remembers
// the principal it was handed to, and the broker refuses a batch with it
// from another principal. An idempotent producer needs IdempotentWrite on
// the cluster or Write on some topic, as in Kafka 3.x.
//
// With a transactional id the request goes to the transaction coordinator
// (broker/txn), which needs Write on the id: the id's producer id is kept,
// its epoch bumped (fencing the previous instance) and what that instance
// left open aborted. Such ids are not tied to a principal: the
// TransactionalId ACL and the coordinator's checks guard them. v5 and
// later (KIP-939's two-phase commit) are not served.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/kafkaapi"
)

func init() {
	add(22, 0, 4, func(h *Handlers) kafkaapi.Serve {
		return kafkaapi.Start(func(_ kafkaapi.Conn, req *kafkaapi.Request, r *kmsg.InitProducerIDRequest) *kafkaapi.Pending {
			if r.TransactionalID != nil {
				return kafkaapi.Later(req, func() kmsg.Response { return h.initTransactionalProducerID(req, r) })
			}
			return kafkaapi.Ready(req, h.initProducerID(req, r))
		})
	})
}

// initProducerID serves a producer without a transactional id, on the
// read goroutine: an id costs a file write only once a thousand ids.
func (h *Handlers) initProducerID(req *kafkaapi.Request, r *kmsg.InitProducerIDRequest) *kmsg.InitProducerIDResponse {
	resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if !h.authz.MayCluster(req.Who, kmsg.ACLOperationIdempotentWrite) && !h.authz.MayWriteSomeTopic(req.Principal, req.Host) {
		resp.ErrorCode = acl.ClusterRefused
		return resp
	}
	id, err := h.pids.Next(req.Principal)
	if err != nil {
		h.logger.Error("allocating a producer id", "err", err)
		resp.ErrorCode = kerr.KafkaStorageError.Code
		return resp
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp
}

// initTransactionalProducerID serves InitProducerId with a transactional
// id: Write on the id, then the coordinator of the id (this broker, or
// NOT_COORDINATOR).
func (h *Handlers) initTransactionalProducerID(req *kafkaapi.Request, r *kmsg.InitProducerIDRequest) *kmsg.InitProducerIDResponse {
	resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	id := *r.TransactionalID
	if !h.authz.MayTxn(req.Who, kmsg.ACLOperationWrite, id) {
		resp.ErrorCode = acl.TxnRefused
		return resp
	}
	if resp.ErrorCode = h.refusal(id); resp.ErrorCode != 0 {
		return resp
	}
	ctx, cancel := h.ctx()
	defer cancel()
	pid, epoch, err := h.txns.InitProducerID(ctx, id, r.TransactionTimeoutMillis, r.ProducerID, r.ProducerEpoch)
	resp.ErrorCode = Code(err, r.Version, 4)
	if err == nil {
		resp.ProducerID, resp.ProducerEpoch = pid, epoch
	}
	return resp
}
