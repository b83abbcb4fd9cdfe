package txnapi

// DescribeTransactions (key 65), version 0.
//
// kafka-transactions describe: the state of each transactional id this
// broker coordinates (Describe on the id, or ClusterAction on the cluster:
// a group's coordinator asks as a broker); an id it does not know is
// TRANSACTIONAL_ID_NOT_FOUND, one another broker coordinates
// NOT_COORDINATOR.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/kafkaapi"
)

func init() {
	add(65, 0, 0, func(h *Handlers) kafkaapi.Serve { return kafkaapi.Async(h.describeTransactions) })
}

func (h *Handlers) describeTransactions(req *kafkaapi.Request, r *kmsg.DescribeTransactionsRequest) *kmsg.DescribeTransactionsResponse {
	resp := r.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	ctx, cancel := h.ctx()
	defer cancel()
	for _, id := range r.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.ProducerEpoch, st.StartTimestamp = id, -1, -1, -1
		// A group's coordinator asks as a broker (forwarded.go).
		if !h.authz.MayTxn(req.Who, kmsg.ACLOperationDescribe, id) && !(h.authz != nil && h.authz.MayCluster(req.Who, kmsg.ACLOperationClusterAction)) {
			st.ErrorCode = acl.TxnRefused
		} else if st.ErrorCode = h.refusal(id); st.ErrorCode == 0 {
			d, ok, err := h.txns.Describe(ctx, id)
			switch {
			case err != nil:
				st.ErrorCode = kerr.CoordinatorLoadInProgress.Code
			case !ok:
				st.ErrorCode = kerr.TransactionalIDNotFound.Code
			default:
				st.State, st.TimeoutMillis, st.ProducerID, st.ProducerEpoch = d.State.String(), d.TimeoutMs, d.ProducerID, d.Epoch
				if !d.Start.IsZero() {
					st.StartTimestamp = d.Start.UnixMilli()
				}
				for _, tp := range d.Partitions {
					if n := len(st.Topics); n == 0 || st.Topics[n-1].Topic != tp.Topic {
						t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
						t.Topic = tp.Topic
						st.Topics = append(st.Topics, t)
					}
					t := &st.Topics[len(st.Topics)-1]
					t.Partitions = append(t.Partitions, tp.Partition)
				}
			}
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp
}
