package dataapi

// DeleteRecords.
//
// Moves a partition's log start offset forward (log.DeleteRecordsBefore):
// records below it can no longer be read, and whole segments below it are
// deleted at once. Offset -1 means the high watermark; an offset above it
// gets OFFSET_OUT_OF_RANGE. The answer's low watermark is the new start.
// For a replicated partition the bound is the replicated high watermark,
// what every in-sync replica holds, as in Kafka: the leader's own flushed
// end may be ahead of its followers, and deleting up to it would delete
// records no consumer could have seen and no follower holds yet (a
// follower would then jump past them to the leader's start).

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/kafkaapi"
	"github.com/tributary-io/tributary/broker/log"
)

func init() {
	add(21, 0, 2, func(h *Handlers) kafkaapi.Serve { return kafkaapi.Async(h.deleteRecords) })
}

func (h *Handlers) deleteRecords(who *kafkaapi.Request, req *kmsg.DeleteRecordsRequest) *kmsg.DeleteRecordsResponse {
	var refused []kmsg.DeleteRecordsResponseTopic
	req.Topics, refused = acl.Filter(req.Topics, func(t kmsg.DeleteRecordsRequestTopic) bool {
		return h.authz.MayTopic(who.Who, kmsg.ACLOperationDelete, t.Topic)
	}, func(it kmsg.DeleteRecordsRequestTopic) kmsg.DeleteRecordsResponseTopic {
		rt := kmsg.NewDeleteRecordsResponseTopic()
		rt.Topic = it.Topic
		for _, p := range it.Partitions {
			rp := kmsg.NewDeleteRecordsResponseTopicPartition()
			rp.Partition, rp.LowWatermark, rp.ErrorCode = p.Partition, -1, acl.TopicRefused
			rt.Partitions = append(rt.Partitions, rp)
		}
		return rt
	})
	resp := kmsg.NewPtrDeleteRecordsResponse()
	for _, rt := range req.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		t, code := h.topics.Lookup(rt.Topic, false)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition, sp.LowWatermark = rp.Partition, -1
			if code != 0 {
				sp.ErrorCode = code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			part, pcode := h.replicas.Lookup(t, rp.Partition)
			if pcode != 0 {
				sp.ErrorCode = pcode
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			hw, pcode := part.HighWatermark()
			if pcode != 0 {
				sp.ErrorCode = pcode
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			offset := rp.Offset
			if offset == -1 {
				offset = hw
			}
			if offset > hw {
				sp.ErrorCode = kerr.OffsetOutOfRange.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			l := part.Log()
			before := l.StartOffset()
			start, err := l.DeleteRecordsBefore(offset)
			switch {
			case errors.Is(err, log.ErrOffsetOutOfRange):
				sp.ErrorCode = kerr.OffsetOutOfRange.Code
			case err != nil:
				h.logger.Error("deleting records", "topic", rt.Topic, "partition", rp.Partition, "err", err)
				sp.ErrorCode = kerr.KafkaStorageError.Code
			default:
				sp.LowWatermark = start
				// Kafka Streams repeats its purge whether or not
				// anything was processed since: only a move is news.
				if start > before {
					h.logger.Info("records deleted", "topic", rt.Topic, "partition", rp.Partition, "start_offset", start)
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	resp.Topics = append(resp.Topics, refused...)
	return resp
}
