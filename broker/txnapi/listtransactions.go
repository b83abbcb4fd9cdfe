package txnapi

// ListTransactions (key 66), versions 0-1.
//
// kafka-transactions list: the transactional ids this broker coordinates
// that the client may describe (Describe on each id), filtered by state
// names, producer ids and (v1) by having been open longer than a duration.
// Unknown state names are echoed back, as Kafka does. v2 (a regular
// expression filter) is not served.

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/kafkaapi"
	"github.com/tributary-io/tributary/broker/txn"
)

func init() {
	add(66, 0, 1, func(h *Handlers) kafkaapi.Serve { return kafkaapi.Async(h.listTransactions) })
}

func (h *Handlers) listTransactions(req *kafkaapi.Request, r *kmsg.ListTransactionsRequest) *kmsg.ListTransactionsResponse {
	resp := r.ResponseKind().(*kmsg.ListTransactionsResponse)
	known := map[string]bool{}
	for s := txn.Empty; s <= txn.Dead; s++ {
		known[s.String()] = true
	}
	for _, s := range r.StateFilters {
		if !known[s] {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, s)
		}
	}
	if _, ok := h.meta.Topic(txn.StateTopic); !ok {
		return resp // nothing was ever transactional here
	}
	ctx, cancel := h.ctx()
	defer cancel()
	all, err := h.txns.List(ctx)
	if err != nil {
		resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
		return resp
	}
	now := time.Now()
	for _, d := range all {
		switch {
		case len(r.StateFilters) > 0 && !slices.Contains(r.StateFilters, d.State.String()):
		case len(r.ProducerIDFilters) > 0 && !slices.Contains(r.ProducerIDFilters, d.ProducerID):
		case r.DurationFilterMillis >= 0 && r.Version >= 1 && (d.Start.IsZero() || now.Sub(d.Start) < time.Duration(r.DurationFilterMillis)*time.Millisecond):
		case h.refusal(d.ID) != 0, !h.authz.MayTxn(req.Who, kmsg.ACLOperationDescribe, d.ID):
		default:
			st := kmsg.NewListTransactionsResponseTransactionState()
			st.TransactionalID, st.ProducerID, st.TransactionState = d.ID, d.ProducerID, d.State.String()
			resp.TransactionStates = append(resp.TransactionStates, st)
		}
	}
	return resp
}
