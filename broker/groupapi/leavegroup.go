package groupapi

// LeaveGroup.
//
// Removes members at once rather than at their session timeout, and
// rebalances the rest. v0-2 name one member; v3+ a batch, by member id or by
// static instance id, with an error per member. v5's reason is not kept.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/group"
	"github.com/tributary-io/tributary/broker/kafkaapi"
)

func init() {
	add(13, 0, 5, func(h *Handlers) kafkaapi.Serve { return kafkaapi.Now(h.leaveGroup) })
}

func (h *Handlers) leaveGroup(req *kafkaapi.Request, r *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	if !h.authz.MayGroup(req.Who, kmsg.ACLOperationRead, r.Group) {
		resp := r.ResponseKind().(*kmsg.LeaveGroupResponse)
		resp.ErrorCode = acl.GroupRefused
		return resp
	}
	resp := kmsg.NewPtrLeaveGroupResponse()
	var leaving []group.LeaveMember
	if r.Version < 3 {
		leaving = []group.LeaveMember{{MemberID: r.MemberID}}
	}
	for _, m := range r.Members {
		leaving = append(leaving, group.LeaveMember{MemberID: m.MemberID, InstanceID: m.InstanceID})
	}
	groupErr, errs := h.groups.Leave(r.Group, leaving)
	resp.ErrorCode = codeOf(groupErr)
	if r.Version < 3 {
		if groupErr == nil && len(errs) == 1 {
			resp.ErrorCode = codeOf(errs[0])
		}
		return resp
	}
	for i, m := range r.Members {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID = m.MemberID, m.InstanceID
		if i < len(errs) {
			rm.ErrorCode = codeOf(errs[i])
		}
		resp.Members = append(resp.Members, rm)
	}
	return resp
}
