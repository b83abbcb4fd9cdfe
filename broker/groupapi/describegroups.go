package groupapi

// DescribeGroups.
//
// A group's state, protocol and members, with each member's metadata and
// assignment once the group is Stable. A group that does not exist is
// described as Dead (v0-5) or answered with GROUP_ID_NOT_FOUND (v6, as
// Kafka does since KIP-1043). A consumer-protocol group with members gets
// GROUP_ID_NOT_FOUND, as in Kafka: ConsumerGroupDescribe describes it.
// Authorized operations are not computed: there are no ACLs.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/group"
	"github.com/tributary-io/tributary/broker/kafkaapi"
)

func init() {
	add(15, 0, 6, func(h *Handlers) kafkaapi.Serve { return kafkaapi.Async(h.describeGroups) })
}

func (h *Handlers) describeGroups(req *kafkaapi.Request, r *kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse {
	groups, refused := acl.Filter(r.Groups, func(g string) bool {
		return h.authz.MayGroup(req.Who, kmsg.ACLOperationDescribe, g)
	}, func(g string) kmsg.DescribeGroupsResponseGroup {
		rg := kmsg.NewDescribeGroupsResponseGroup()
		rg.Group, rg.ErrorCode = g, acl.GroupRefused
		return rg
	})
	resp := kmsg.NewPtrDescribeGroupsResponse()
	for _, name := range groups {
		sg := kmsg.NewDescribeGroupsResponseGroup()
		sg.Group = name
		d, err := h.groups.Describe(name)
		sg.ErrorCode = codeOf(err)
		switch {
		case err == kerr.GroupIDNotFound && r.Version >= 6:
			msg := "group " + name + " uses the consumer group protocol: describe it with ConsumerGroupDescribe (kafka-consumer-groups does)"
			sg.ErrorMessage = &msg
		case err != nil:
		case d.State == group.Dead && r.Version >= 6:
			msg := "group " + name + " has neither members nor committed offsets"
			sg.ErrorCode, sg.ErrorMessage = kerr.GroupIDNotFound.Code, &msg
		default:
			sg.State, sg.ProtocolType, sg.Protocol = d.State.String(), d.ProtocolType, d.Protocol
			for _, m := range d.Members {
				sm := kmsg.NewDescribeGroupsResponseGroupMember()
				sm.MemberID, sm.InstanceID, sm.ClientID, sm.ClientHost = m.ID, m.InstanceID, m.ClientID, m.ClientHost
				sm.ProtocolMetadata, sm.MemberAssignment = m.Metadata, m.Assignment
				sg.Members = append(sg.Members, sm)
			}
		}
		resp.Groups = append(resp.Groups, sg)
	}
	resp.Groups = append(resp.Groups, refused...)
	return resp
}
