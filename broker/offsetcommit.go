package broker

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

	"github.com/tributary-io/tributary/broker/group"
)

func init() {
	register(8, 0, 9, now((*Broker).offsetCommit))
}

// maxCommitMetadata is Kafka's offset.metadata.max.bytes.
const maxCommitMetadata = 4096

// offsetCommit commits the partitions of the topics its client may read
// in a group it may read; the others are answered with the refusal.
func (b *Broker) offsetCommit(req *request, r *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	groupOK := b.mayGroup(req, kmsg.ACLOperationRead, r.Group)
	code := func(t kmsg.OffsetCommitRequestTopic) int16 {
		switch {
		case !groupOK:
			return groupRefused
		case !b.mayTopic(req, kmsg.ACLOperationRead, t.Topic):
			return topicRefused
		}
		return 0
	}
	kept, refused := filterAuthorized(r.Topics, func(t kmsg.OffsetCommitRequestTopic) bool { return code(t) == 0 },
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
		return b.commitOffsets(r)
	}
	var resp *kmsg.OffsetCommitResponse
	if r.Topics = kept; len(kept) > 0 {
		resp = b.commitOffsets(r)
	} else {
		resp = r.ResponseKind().(*kmsg.OffsetCommitResponse)
	}
	resp.Topics = append(resp.Topics, refused...)
	return resp
}

func (b *Broker) commitOffsets(r *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
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
		t, known := b.meta.Topic(rt.Topic)
		codes[i] = make([]int16, len(rt.Partitions))
		for j, rp := range rt.Partitions {
			switch {
			case !known || rp.Partition < 0 || rp.Partition >= t.Partitions():
				codes[i][j] = kerr.UnknownTopicOrPartition.Code
			case rp.Metadata != nil && len(*rp.Metadata) > maxCommitMetadata:
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
	groupCode := codeOf(b.groups.Commit(cr))

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
