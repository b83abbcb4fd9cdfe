package broker

// What broker/dataapi (Produce, Fetch, ListOffsets, DeleteRecords,
// OffsetForLeaderEpoch) uses of the root: the topic lookup (with its
// auto-creation), the topics' settings, producer ids' owners
// (broker/producerid) and the transaction coordinator's verification of a
// transactional produce, here or on another broker (broker/txnbackend).

import (
	"github.com/tributary-io/tributary/broker/dataapi"
	"github.com/tributary-io/tributary/cluster"
)

// newDataAPIs builds the data APIs from what they use of b.
func (b *Broker) newDataAPIs() *dataapi.Handlers {
	return dataapi.New(dataapi.Config{
		Replicas:             b.replicas,
		Authz:                b.authz,
		Topics:               dataTopics{b},
		Producers:            b.pids.Refusal,
		InternalRefusal:      b.internalRefusal,
		Txns:                 dataapi.Txns{Coordinator: b.txns, Refusal: b.txnBackend.Refusal, VerifyRemote: b.txnBackend.VerifyRemote},
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
