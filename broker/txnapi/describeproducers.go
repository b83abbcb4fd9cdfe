package txnapi

// DescribeProducers (key 61, version 0): the idempotent producers each
// partition tracks (kafka-transactions describe-producers, kafka-python's
// admin client). Asked of the partition's leader, as in Kafka; another
// broker answers NOT_LEADER_OR_FOLLOWER. A producer's open transaction
// in the partition shows as its first offset (-1: none); coordinator
// epochs are not kept (-1).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/kafkaapi"
	"github.com/tributary-io/tributary/cluster"
)

func init() {
	add(61, 0, 0, func(h *Handlers) kafkaapi.Serve { return kafkaapi.Async(h.describeProducers) })
}

func (h *Handlers) describeProducers(who *kafkaapi.Request, req *kmsg.DescribeProducersRequest) *kmsg.DescribeProducersResponse {
	resp := kmsg.NewPtrDescribeProducersResponse()
	for _, rt := range req.Topics {
		st := kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		var t cluster.Topic
		var code int16
		if !h.authz.MayTopic(who.Who, kmsg.ACLOperationRead, rt.Topic) {
			code = kerr.TopicAuthorizationFailed.Code
		} else {
			t, code = h.lookupTopic(rt.Topic)
		}
		for _, p := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition = p
			if code != 0 {
				sp.ErrorCode = code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			part, pcode := h.replicas.Lookup(t, p)
			if pcode != 0 {
				sp.ErrorCode = pcode
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			l := part.Log()
			for _, ap := range l.ActiveProducers() {
				a := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
				a.ProducerID, a.ProducerEpoch = ap.ID, int32(ap.Epoch)
				a.LastSequence, a.LastTimestamp = ap.LastSequence, ap.LastTimestamp
				a.CoordinatorEpoch, a.CurrentTxnStartOffset = ap.CoordinatorEpoch, -1
				if first, ok := l.OpenTransaction(ap.ID); ok {
					a.CurrentTxnStartOffset = first
				}
				sp.ActiveProducers = append(sp.ActiveProducers, a)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
