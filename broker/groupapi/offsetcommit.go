package groupapi

// OffsetCommit.
//
// Offsets of a partition that does not exist get UNKNOWN_TOPIC_OR_PARTITION;
// metadata over 4 KiB (offset.metadata.max.bytes) gets
// OFFSET_METADATA_TOO_LARGE; the rest are checked against the group's
// membership and generation (broker/group) and acknowledged once durable.
// v0 commits without a generation, like every commit from outside group
// management: only into a group without members. Retention times (v1's
// per-partition timestamp, v2-4's retention) are ignored: committed offsets
// are kept until the group is deleted. Leader epochs are not kept. v10
// (topic ids) is not served.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/group"
	"github.com/tributary-io/tributary/broker/kafkaapi"
)

func init() {
	add(8, 0, 9, func(h *Handlers) kafkaapi.Serve { return kafkaapi.Now(h.offsetCommit) })
}

// MaxCommitMetadata is Kafka's offset.metadata.max.bytes, for
// OffsetCommit and TxnOffsetCommit alike.
const MaxCommitMetadata = 4096

// offsetCommit commits the partitions of the topics its client may read
// in a group it may read; the others are answered with the refusal.
func (h *Handlers) offsetCommit(req *kafkaapi.Request, r *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	groupOK := h.authz.MayGroup(req.Who, kmsg.ACLOperationRead, r.Group)
	code := func(t kmsg.OffsetCommitRequestTopic) int16 {
		switch {
		case !groupOK:
			return acl.GroupRefused
		case !h.authz.MayTopic(req.Who, kmsg.ACLOperationRead, t.Topic):
			return acl.TopicRefused
		}
		return 0
	}
	kept, refused := acl.Filter(r.Topics, func(t kmsg.OffsetCommitRequestTopic) bool { return code(t) == 0 },
		func(t kmsg.OffsetCommitRequestTopic) kmsg.OffsetCommitResponseTopic {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code(t)
				rt.Partitions = append(rt.Partitions, rp)
			}
			return rt
		})
	if len(refused) == 0 {
		return h.commitOffsets(r)
	}
	var resp *kmsg.OffsetCommitResponse
	if r.Topics = kept; len(kept) > 0 {
		resp = h.commitOffsets(r)
	} else {
		resp = r.ResponseKind().(*kmsg.OffsetCommitResponse)
	}
	resp.Topics = append(resp.Topics, refused...)
	return resp
}

func (h *Handlers) commitOffsets(r *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	cr := group.CommitRequest{
		Group:      r.Group,
		MemberID:   r.MemberID,
		InstanceID: r.InstanceID,
		Generation: r.Generation,
		Offsets:    map[group.TopicPartition]group.Offset{},
	}
	if r.Version == 0 {
		cr.Generation, cr.MemberID = -1, ""
	}
	// Per-partition errors found before the group is asked; 0 means the
	// partition goes to the coordinator.
	codes := make([][]int16, len(r.Topics))
	for i, rt := range r.Topics {
		t, known := h.meta.Topic(rt.Topic)
		codes[i] = make([]int16, len(rt.Partitions))
		for j, rp := range rt.Partitions {
			switch {
			case !known || rp.Partition < 0 || rp.Partition >= t.Partitions():
				codes[i][j] = kerr.UnknownTopicOrPartition.Code
			case rp.Metadata != nil && len(*rp.Metadata) > MaxCommitMetadata:
				codes[i][j] = kerr.OffsetMetadataTooLarge.Code
			default:
				o := group.Offset{Offset: rp.Offset}
				if rp.Metadata != nil {
					o.Metadata = *rp.Metadata
				}
				cr.Offsets[group.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}] = o
			}
		}
	}
	groupCode := codeOf(h.groups.Commit(cr))

	resp := kmsg.NewPtrOffsetCommitResponse()
	for i, rt := range r.Topics {
		st := kmsg.NewOffsetCommitResponseTopic()
		st.Topic = rt.Topic
		for j, rp := range rt.Partitions {
			sp := kmsg.NewOffsetCommitResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.ErrorCode = codes[i][j]
			if sp.ErrorCode == 0 {
				sp.ErrorCode = groupCode
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
