package groupapi

// OffsetDelete.
//
// Forgets some committed offsets of a group (group.Coordinator.
// DeleteOffsets): refused per partition with GROUP_SUBSCRIBED_TO_TOPIC while
// a member consumes its topic; GROUP_ID_NOT_FOUND for an unknown group;
// NOT_COORDINATOR when asked of the wrong broker.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/group"
	"github.com/tributary-io/tributary/broker/kafkaapi"
)

func init() {
	add(47, 0, 0, func(h *Handlers) kafkaapi.Serve { return kafkaapi.Async(h.offsetDelete) })
}

func (h *Handlers) offsetDelete(who *kafkaapi.Request, req *kmsg.OffsetDeleteRequest) *kmsg.OffsetDeleteResponse {
	if refused := h.offsetDeleteRefused(who, req); refused != nil {
		return refused
	}
	resp := kmsg.NewPtrOffsetDeleteResponse()
	var tps []group.TopicPartition
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			tps = append(tps, group.TopicPartition{Topic: rt.Topic, Partition: rp.Partition})
		}
	}
	results, gerr := h.groups.DeleteOffsets(req.Group, tps)
	if gerr != nil {
		resp.ErrorCode = gerr.Code
		return resp
	}
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetDeleteResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetDeleteResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.ErrorCode = codeOf(results[group.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}])
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// offsetDeleteRefused answers a request whose client may not delete the
// group's offsets (Delete on the group) or read one of its topics: nothing
// is deleted, since an offset delete is one group operation. nil when the
// request is allowed.
func (h *Handlers) offsetDeleteRefused(who *kafkaapi.Request, r *kmsg.OffsetDeleteRequest) *kmsg.OffsetDeleteResponse {
	resp := r.ResponseKind().(*kmsg.OffsetDeleteResponse)
	if !h.authz.MayGroup(who.Who, kmsg.ACLOperationDelete, r.Group) {
		resp.ErrorCode = acl.GroupRefused
		return resp
	}
	refusedAny := false
	for _, t := range r.Topics {
		ok := h.authz.MayTopic(who.Who, kmsg.ACLOperationRead, t.Topic)
		refusedAny = refusedAny || !ok
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			if !ok {
				rp.ErrorCode = acl.TopicRefused
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if !refusedAny {
		return nil
	}
	return resp
}
