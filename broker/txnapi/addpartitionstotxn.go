package txnapi

// AddPartitionsToTxn.
//
// v0–3: a transactional producer adds partitions to its open transaction
// before it writes to them (Write on the transactional id and on each
// topic). v4 (KIP-890) batches transactions and carries VerifyOnly, with
// which a partition leader asks the coordinator whether a producer's
// transaction holds a partition before appending its batch; it is for
// brokers only (ClusterAction). Every partition of a transaction gets the
// transaction's one answer, except refused and unknown topics, which fail
// the request for the others with OPERATION_NOT_ATTEMPTED, as in Kafka.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/kafkaapi"
	"github.com/tributary-io/tributary/broker/txn"
)

func init() {
	add(24, 0, 4, func(h *Handlers) kafkaapi.Serve { return kafkaapi.Async(h.addPartitionsToTxn) })
}

func (h *Handlers) addPartitionsToTxn(req *kafkaapi.Request, r *kmsg.AddPartitionsToTxnRequest) *kmsg.AddPartitionsToTxnResponse {
	resp := r.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if r.Version >= 4 {
		if !h.authz.MayCluster(req.Who, kmsg.ACLOperationClusterAction) {
			resp.ErrorCode = acl.ClusterRefused
			return resp
		}
		for _, t := range r.Transactions {
			rt := kmsg.NewAddPartitionsToTxnResponseTransaction()
			rt.TransactionalID = t.TransactionalID
			var topics []kmsg.AddPartitionsToTxnRequestTopic
			for _, tt := range t.Topics {
				topics = append(topics, kmsg.AddPartitionsToTxnRequestTopic{Topic: tt.Topic, Partitions: tt.Partitions})
			}
			codes := h.addTxnPartitions(req, r.Version, t.TransactionalID, t.ProducerID, t.ProducerEpoch, t.VerifyOnly, topics)
			for _, tt := range t.Topics {
				ot := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
				ot.Topic = tt.Topic
				for _, p := range tt.Partitions {
					op := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
					op.Partition, op.ErrorCode = p, codes[txn.TP{Topic: tt.Topic, Partition: p}]
					ot.Partitions = append(ot.Partitions, op)
				}
				rt.Topics = append(rt.Topics, ot)
			}
			resp.Transactions = append(resp.Transactions, rt)
		}
		return resp
	}
	codes := h.addTxnPartitions(req, r.Version, r.TransactionalID, r.ProducerID, r.ProducerEpoch, false, r.Topics)
	for _, t := range r.Topics {
		ot := kmsg.NewAddPartitionsToTxnResponseTopic()
		ot.Topic = t.Topic
		for _, p := range t.Partitions {
			op := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			op.Partition, op.ErrorCode = p, codes[txn.TP{Topic: t.Topic, Partition: p}]
			ot.Partitions = append(ot.Partitions, op)
		}
		resp.Topics = append(resp.Topics, ot)
	}
	return resp
}

// addTxnPartitions adds (or, with verifyOnly, checks) one transaction's
// partitions and returns each partition's code.
func (h *Handlers) addTxnPartitions(req *kafkaapi.Request, version int16, id string, pid int64, epoch int16, verifyOnly bool, topics []kmsg.AddPartitionsToTxnRequestTopic) map[txn.TP]int16 {
	codes := map[txn.TP]int16{}
	all := func(code int16) map[txn.TP]int16 {
		for _, t := range topics {
			for _, p := range t.Partitions {
				codes[txn.TP{Topic: t.Topic, Partition: p}] = code
			}
		}
		return codes
	}
	if !h.authz.MayTxn(req.Who, kmsg.ACLOperationWrite, id) {
		return all(acl.TxnRefused)
	}
	if code := h.refusal(id); code != 0 {
		return all(code)
	}
	var parts []txn.TP
	failed := false
	for _, t := range topics {
		code := int16(0)
		if !h.authz.MayTopic(req.Who, kmsg.ACLOperationWrite, t.Topic) {
			code = acl.TopicRefused
		} else if ct, ok := h.meta.Topic(t.Topic); !ok {
			code = kerr.UnknownTopicOrPartition.Code
		} else {
			for _, p := range t.Partitions {
				if p < 0 || p >= ct.Partitions() {
					code = kerr.UnknownTopicOrPartition.Code
				}
			}
		}
		for _, p := range t.Partitions {
			tp := txn.TP{Topic: t.Topic, Partition: p}
			codes[tp] = code
			parts = append(parts, tp)
		}
		failed = failed || code != 0
	}
	if failed {
		for tp, c := range codes {
			if c == 0 {
				codes[tp] = kerr.OperationNotAttempted.Code
			}
		}
		return codes
	}
	ctx, cancel := h.ctx()
	defer cancel()
	if verifyOnly {
		for _, tp := range parts {
			codes[tp] = Code(h.txns.Verify(ctx, id, pid, epoch, tp), version, 2)
		}
		return codes
	}
	return all(Code(h.txns.AddPartitions(ctx, id, pid, epoch, parts), version, 2))
}
