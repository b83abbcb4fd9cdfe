package broker

// What broker/dataapi (Produce, Fetch, ListOffsets, DeleteRecords,
// OffsetForLeaderEpoch) uses of the root: the topic lookup (with its
// auto-creation), the topics' settings, and the transaction coordinator's
// verification of a transactional produce, here or on another broker.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/dataapi"
	"github.com/tributary-io/tributary/broker/txn"
	"github.com/tributary-io/tributary/cluster"
)

// newDataAPIs builds the data APIs from what they use of b.
func (b *Broker) newDataAPIs() *dataapi.Handlers {
	return dataapi.New(dataapi.Config{
		Replicas:             b.replicas,
		Authz:                b.authz,
		Topics:               dataTopics{b},
		Producers:            b.producerIDRefusal,
		InternalRefusal:      b.internalRefusal,
		Txns:                 dataapi.Txns{Coordinator: b.txns, Refusal: b.txnCoordinatorRefusal, VerifyRemote: b.verifyRemote},
		Quotas:               b.quotas,
		Metrics:              b.metrics,
		MaxDecompressedBytes: b.staticLog.WithDefaults().MaxDecompressedBytes,
		Life:                 b.life,
		Closing:              b.closing,
		Logger:               b.logger,
	})
}

// dataTopics is dataapi.Topics over b.
type dataTopics struct{ b *Broker }

func (t dataTopics) Lookup(name string, autoCreate bool) (cluster.Topic, int16) {
	return t.b.lookupTopic(name, autoCreate)
}

func (t dataTopics) ProduceLimits(topic cluster.Topic) dataapi.Limits {
	l := t.b.produceLimitsFor(topic)
	return dataapi.Limits{MaxMessageBytes: l.maxMessageBytes, LogAppendTime: l.logAppendTime, Recompress: l.recompress, Codec: l.codec}
}

func (t dataTopics) FetchCodecCheck(topic cluster.Topic) int16 { return t.b.fetchCodecCheck(topic) }

// verifyRemote asks id's coordinator, another broker, whether the
// producer's transaction holds tp.
func (b *Broker) verifyRemote(ctx context.Context, id string, pid int64, epoch int16, tp txn.TP) int16 {
	br, ok := b.txnCoordinatorFor(id)
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
	timeout := 10 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	if err := b.interBrokerRoundTrip(br.ID, req, resp, timeout); err != nil {
		b.logger.Warn("asking a transaction coordinator to verify a produce", "coordinator", br.ID, "err", err)
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
