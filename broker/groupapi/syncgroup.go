package groupapi

// SyncGroup.
//
// Followers wait for the leader's SyncGroup, whose assignments end the
// rebalance; the response is answered from its own goroutine and ends with
// COORDINATOR_NOT_AVAILABLE at shutdown. From v5 the protocol type and name
// are checked against the group's (INCONSISTENT_GROUP_PROTOCOL) and echoed.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/group"
	"github.com/tributary-io/tributary/broker/kafkaapi"
)

func init() {
	add(14, 0, 5, func(h *Handlers) kafkaapi.Serve { return kafkaapi.Start(h.syncGroup) })
}

func (h *Handlers) syncGroup(_ kafkaapi.Conn, req *kafkaapi.Request, r *kmsg.SyncGroupRequest) *kafkaapi.Pending {
	if !h.authz.MayGroup(req.Who, kmsg.ACLOperationRead, r.Group) {
		resp := r.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = acl.GroupRefused
		return kafkaapi.Ready(req, resp)
	}
	sr := group.SyncRequest{
		Group:        r.Group,
		MemberID:     r.MemberID,
		InstanceID:   r.InstanceID,
		Generation:   r.Generation,
		ProtocolType: r.ProtocolType,
		Protocol:     r.Protocol,
	}
	if len(r.GroupAssignment) > 0 {
		sr.Assignments = make(map[string][]byte, len(r.GroupAssignment))
		for _, a := range r.GroupAssignment {
			sr.Assignments[a.MemberID] = a.MemberAssignment
		}
	}
	ch := h.groups.Sync(sr)
	return kafkaapi.Later(req, func() kmsg.Response {
		var res group.SyncResult
		select {
		case res = <-ch:
		case <-h.closing:
			res = group.SyncResult{Err: kerr.CoordinatorNotAvailable}
		}
		resp := kmsg.NewPtrSyncGroupResponse()
		resp.ErrorCode = codeOf(res.Err)
		if res.Err == nil {
			resp.ProtocolType, resp.Protocol = &res.ProtocolType, &res.Protocol
			resp.MemberAssignment = res.Assignment
		}
		return resp
	})
}
