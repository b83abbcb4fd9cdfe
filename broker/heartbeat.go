package broker

// Heartbeat (key 12), v0-4.
//
// Keeps a member's session alive; REBALANCE_IN_PROGRESS tells it to rejoin.
// Answered at once.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) heartbeat(r *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	resp := kmsg.NewPtrHeartbeatResponse()
	resp.ErrorCode = codeOf(b.groups.Heartbeat(r.Group, r.MemberID, r.InstanceID, r.Generation))
	return resp
}
