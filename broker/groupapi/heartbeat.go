package groupapi

// Heartbeat.
//
// Keeps a member's session alive; REBALANCE_IN_PROGRESS tells it to rejoin.
// Answered at once.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/kafkaapi"
)

func init() {
	add(12, 0, 4, func(h *Handlers) kafkaapi.Serve { return kafkaapi.Now(h.heartbeat) })
}

func (h *Handlers) heartbeat(req *kafkaapi.Request, r *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	if !h.authz.MayGroup(req.Who, kmsg.ACLOperationRead, r.Group) {
		resp := r.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = acl.GroupRefused
		return resp
	}
	resp := kmsg.NewPtrHeartbeatResponse()
	resp.ErrorCode = codeOf(h.groups.Heartbeat(r.Group, r.MemberID, r.InstanceID, r.Generation))
	return resp
}
