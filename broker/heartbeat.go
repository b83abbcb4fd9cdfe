package broker

// Heartbeat.
//
// Keeps a member's session alive; REBALANCE_IN_PROGRESS tells it to rejoin.
// Answered at once.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(12, 0, 4, now((*Broker).heartbeat))
}

func (b *Broker) heartbeat(req *request, r *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	if !b.mayGroup(req, kmsg.ACLOperationRead, r.Group) {
		resp := r.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = groupRefused
		return resp
	}
	resp := kmsg.NewPtrHeartbeatResponse()
	resp.ErrorCode = codeOf(b.groups.Heartbeat(r.Group, r.MemberID, r.InstanceID, r.Generation))
	return resp
}
