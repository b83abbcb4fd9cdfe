package groupapi

// JoinGroup.
//
// The classic rebalance protocol of broker/group: the response waits until
// the rebalance ends (answered in request order like every response, from
// its own goroutine), and ends with COORDINATOR_NOT_AVAILABLE when the
// broker shuts down. v0 has no rebalance timeout: the session timeout is
// used. From v4 a new dynamic member first gets MEMBER_ID_REQUIRED with its
// id (KIP-394). Static members (v5+, group.instance.id) are supported: a
// restarted instance replaces its previous member id, which is fenced with
// FENCED_INSTANCE_ID; unlike Kafka this costs a rebalance. v8's reason is
// logged; v9's SkipAssignment is always false (the leader always assigns).

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/group"
	"github.com/tributary-io/tributary/broker/kafkaapi"
)

func init() {
	add(11, 0, 9, func(h *Handlers) kafkaapi.Serve { return kafkaapi.Start(h.joinGroup) })
}

func (h *Handlers) joinGroup(c kafkaapi.Conn, req *kafkaapi.Request, r *kmsg.JoinGroupRequest) *kafkaapi.Pending {
	if !h.authz.MayGroup(req.Who, kmsg.ACLOperationRead, r.Group) {
		resp := r.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode = acl.GroupRefused
		return kafkaapi.Ready(req, resp)
	}
	jr := group.JoinRequest{
		Group:              r.Group,
		MemberID:           r.MemberID,
		InstanceID:         r.InstanceID,
		ClientID:           req.ClientID,
		ClientHost:         clientHost(c.RemoteAddr()),
		SessionTimeout:     time.Duration(r.SessionTimeoutMillis) * time.Millisecond,
		ProtocolType:       r.ProtocolType,
		RequireKnownMember: r.Version >= 4,
	}
	if r.Version >= 1 {
		jr.RebalanceTimeout = time.Duration(r.RebalanceTimeoutMillis) * time.Millisecond
	}
	for _, p := range r.Protocols {
		jr.Protocols = append(jr.Protocols, group.Protocol{Name: p.Name, Metadata: p.Metadata})
	}
	if r.Reason != nil && *r.Reason != "" {
		c.Logger().Debug("join group", "group", r.Group, "member", r.MemberID, "reason", *r.Reason)
	}
	ch := h.groups.Join(jr)
	return kafkaapi.Later(req, func() kmsg.Response {
		var res group.JoinResult
		select {
		case res = <-ch:
		case <-h.closing:
			res = group.JoinResult{Err: kerr.CoordinatorNotAvailable, MemberID: r.MemberID, Generation: -1}
		}
		return joinResponse(res)
	})
}

func joinResponse(res group.JoinResult) *kmsg.JoinGroupResponse {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.ErrorCode = codeOf(res.Err)
	resp.Generation = res.Generation
	resp.MemberID = res.MemberID
	if res.Err != nil {
		return resp
	}
	resp.ProtocolType = &res.ProtocolType
	resp.Protocol = &res.Protocol
	resp.LeaderID = res.Leader
	for _, m := range res.Members {
		rm := kmsg.NewJoinGroupResponseMember()
		rm.MemberID, rm.InstanceID, rm.ProtocolMetadata = m.ID, m.InstanceID, m.Metadata
		resp.Members = append(resp.Members, rm)
	}
	return resp
}
