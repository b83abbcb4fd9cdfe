package groupapi

// ConsumerGroupDescribe (key 69, versions 0-1): a consumer-protocol
// group's state, epochs, assignor and members, each with what it owns and
// what the target assignment gives it, so that kafka-consumer-groups
// --describe works for such groups. A group that is not one (classic, or
// only committed offsets) gets GROUP_ID_NOT_FOUND, on which admin clients
// describe it with DescribeGroups. Requires Describe on the group when the
// authorizer is on; authorized operations are not computed.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/group"
	"github.com/tributary-io/tributary/broker/kafkaapi"
)

func init() {
	add(69, 0, 1, func(h *Handlers) kafkaapi.Serve { return kafkaapi.Now(h.consumerGroupDescribe) })
}

func (h *Handlers) consumerGroupDescribe(req *kafkaapi.Request, r *kmsg.ConsumerGroupDescribeRequest) *kmsg.ConsumerGroupDescribeResponse {
	resp := kmsg.NewPtrConsumerGroupDescribeResponse()
	for _, name := range r.Groups {
		sg := kmsg.NewConsumerGroupDescribeResponseGroup()
		sg.Group = name
		if !h.authz.MayGroup(req.Who, kmsg.ACLOperationDescribe, name) {
			sg.ErrorCode = kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, sg)
			continue
		}
		d, err, msg := h.groups.DescribeConsumer(name)
		sg.ErrorCode = codeOf(err)
		if msg != "" {
			sg.ErrorMessage = &msg
		}
		if err == nil {
			sg.State, sg.Epoch, sg.AssignmentEpoch, sg.AssignorName = d.State, d.Epoch, d.TargetEpoch, d.Assignor
			for _, m := range d.Members {
				sm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
				sm.MemberID, sm.InstanceID, sm.RackID, sm.MemberEpoch = m.ID, m.InstanceID, m.RackID, m.Epoch
				sm.ClientID, sm.ClientHost, sm.SubscribedTopics = m.ClientID, m.ClientHost, m.Topics
				if sm.SubscribedTopics == nil {
					sm.SubscribedTopics = []string{}
				}
				if m.Regex != "" {
					re := m.Regex
					sm.SubscribedTopicRegex = &re
				}
				sm.Assignment.TopicPartitions = h.assignmentOf(m.Assigned)
				sm.TargetAssignment.TopicPartitions = h.assignmentOf(m.Target)
				sm.MemberType = 1 // consumer protocol (KIP-1099: 0 classic, 1 consumer)
				if m.Classic {
					sm.MemberType = 0 // a classic member of a group being migrated
				}
				sg.Members = append(sg.Members, sm)
			}
		}
		resp.Groups = append(resp.Groups, sg)
	}
	return resp
}

// assignmentOf gives partitions (sorted by topic) their topic ids.
func (h *Handlers) assignmentOf(tps []group.TopicPartition) []kmsg.AssignmentTopicPartition {
	out := []kmsg.AssignmentTopicPartition{}
	for _, run := range group.ByTopic(tps) {
		at := kmsg.AssignmentTopicPartition{Topic: run[0].Topic}
		if t, ok := h.meta.Topic(at.Topic); ok {
			at.TopicID = t.ID
		}
		for _, tp := range run {
			at.Partitions = append(at.Partitions, tp.Partition)
		}
		out = append(out, at)
	}
	return out
}
