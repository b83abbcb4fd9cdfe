package broker

// SyncGroup.
//
// Followers wait for the leader's SyncGroup, whose assignments end the
// rebalance; the response is answered from its own goroutine and ends with
// COORDINATOR_NOT_AVAILABLE at shutdown. From v5 the protocol type and name
// are checked against the group's (INCONSISTENT_GROUP_PROTOCOL) and echoed.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/group"
)

func init() {
	register(14, 0, 5, func(b *Broker, _ *conn, req *request) *pending {
		return b.syncGroup(req, req.Request.(*kmsg.SyncGroupRequest))
	})
}

func (b *Broker) syncGroup(req *request, r *kmsg.SyncGroupRequest) *pending {
	if !b.mayGroup(req, kmsg.ACLOperationRead, r.Group) {
		resp := r.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = groupRefused
		return ready(encode(req, resp))
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
	ch := b.groups.Sync(sr)
	return later(func() response {
		var res group.SyncResult
		select {
		case res = <-ch:
		case <-b.closing:
			res = group.SyncResult{Err: kerr.CoordinatorNotAvailable}
		}
		resp := kmsg.NewPtrSyncGroupResponse()
		resp.ErrorCode = codeOf(res.Err)
		if res.Err == nil {
			resp.ProtocolType, resp.Protocol = &res.ProtocolType, &res.Protocol
			resp.MemberAssignment = res.Assignment
		}
		return encode(req, resp)
	})
}
