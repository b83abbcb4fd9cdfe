package dataapi

// ListOffsets.
//
// Earliest (-2) is the log start offset, latest (-1) the high watermark:
// consumers see only flushed data, so the latest offset a consumer can read
// is the flushed one; for a read_committed client (v2+) it is the last
// stable offset, as far as such a client can read (fetch_txn.go). A timestamp finds the first batch whose max timestamp
// is at or after it, from the sparse index; none gives offset -1, as Kafka.
// Max timestamp (-3, v7+) is the flushed record with the largest timestamp
// (log.MaxTimestamp). Without tiered storage, earliest-local (-4, v8+) is
// the log start offset and latest-tiered (-5, v9+) is -1, as Kafka answers
// for a topic that is not tiered.
//
// A new leader of a replicated partition answers the queries that depend
// on the high watermark with OFFSET_NOT_AVAILABLE (retriable) until its
// high watermark reaches where its leader epoch began (the partition
// facade's HighWatermarkPending, KIP-207): before that, its latest offset could hide
// records the previous leader acknowledged.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/kafkaapi"
)

func init() {
	add(2, 1, 9, func(h *Handlers) kafkaapi.Serve { return kafkaapi.Now(h.listOffsets) })
}

func (h *Handlers) listOffsets(who *kafkaapi.Request, req *kmsg.ListOffsetsRequest) *kmsg.ListOffsetsResponse {
	var refused []kmsg.ListOffsetsResponseTopic
	req.Topics, refused = acl.Filter(req.Topics, func(t kmsg.ListOffsetsRequestTopic) bool {
		return h.authz.MayTopic(who.Who, kmsg.ACLOperationDescribe, t.Topic)
	}, func(it kmsg.ListOffsetsRequestTopic) kmsg.ListOffsetsResponseTopic {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = it.Topic
		for _, p := range it.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, acl.TopicRefused
			rt.Partitions = append(rt.Partitions, rp)
		}
		return rt
	})
	resp := kmsg.NewPtrListOffsetsResponse()
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		t, code := h.topics.Lookup(rt.Topic, false)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.Timestamp, sp.Offset = -1, -1
			if code != 0 {
				sp.ErrorCode = code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			part, pcode := h.replicas.Lookup(t, rp.Partition)
			var hw int64
			if pcode == 0 {
				// Replicated partitions: what every in-sync replica holds.
				hw, pcode = part.HighWatermark()
			}
			if pcode != 0 {
				sp.ErrorCode = pcode
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			if (rp.Timestamp == -1 || rp.Timestamp == -3 || rp.Timestamp >= 0) && part.HighWatermarkPending(hw) {
				sp.ErrorCode = kerr.OffsetNotAvailable.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			l := part.Log()
			switch rp.Timestamp {
			case -2, -4:
				sp.Offset = l.StartOffset()
			case -1:
				sp.Offset = hw
				if req.IsolationLevel == 1 {
					sp.Offset = part.LastStable(hw)
				}
			case -3:
				if off, ts, ok := l.MaxTimestamp(); ok {
					sp.Offset, sp.Timestamp = off, ts
				}
			case -5:
			default:
				if rp.Timestamp < 0 {
					sp.ErrorCode = kerr.UnsupportedVersion.Code
					break
				}
				if off, ts, ok := l.OffsetForTime(rp.Timestamp); ok && off < hw {
					sp.Offset, sp.Timestamp = max(off, l.StartOffset()), ts
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	resp.Topics = append(resp.Topics, refused...)
	return resp
}
