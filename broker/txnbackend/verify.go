package txnbackend

// A transactional produce to a partition this broker leads is verified
// with the producer's coordinator (KIP-890): here by the coordinator
// itself (broker/dataapi), on another broker by asking it.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/txn"
)

// VerifyRemote asks id's coordinator, another broker, whether the
// producer's transaction holds tp (dataapi.Txns.VerifyRemote).
func (tb *Backend) VerifyRemote(ctx context.Context, id string, pid int64, epoch int16, tp txn.TP) int16 {
	br, ok := tb.CoordinatorFor(id)
	if !ok {
		return kerr.CoordinatorNotAvailable.Code
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 4
	t := kmsg.NewAddPartitionsToTxnRequestTransaction()
	t.TransactionalID, t.ProducerID, t.ProducerEpoch, t.VerifyOnly = id, pid, epoch, true
	rt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	rt.Topic, rt.Partitions = tp.Topic, []int32{tp.Partition}
	t.Topics = append(t.Topics, rt)
	req.Transactions = append(req.Transactions, t)
	resp := kmsg.NewPtrAddPartitionsToTxnResponse()
	if err := tb.RoundTrip(br.ID, req, resp, timeoutOf(ctx, 10*time.Second)); err != nil {
		tb.cfg.Logger.Warn("asking a transaction coordinator to verify a produce", "coordinator", br.ID, "err", err)
		return kerr.NotEnoughReplicas.Code // retriable: the producer sends again
	}
	if resp.ErrorCode != 0 {
		return resp.ErrorCode
	}
	for _, rt := range resp.Transactions {
		for _, t := range rt.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					return p.ErrorCode
				}
			}
		}
	}
	return 0
}
