package groupapi

// ConsumerGroupHeartbeat (key 68, versions 0-1): the KIP-848 consumer
// group protocol, served by the group coordinator (broker/group,
// consumer*.go): members join with epoch 0, leave with -1 (-2 for a static
// member that will come back), and receive their partitions from the
// coordinator's assignor (uniform by default, or range), revocation first.
// v0 members get their id from the coordinator; v1 members bring their own
// and may subscribe by regular expression (RE2 syntax, which is what Java's
// RE2J and librdkafka accept; internal topics never match, as in Kafka).
// Partitions travel by topic id: an owned partition of an unknown id is
// ignored (its topic was deleted).
//
// Requires Read on the group when the authorizer is on.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/group"
	"github.com/tributary-io/tributary/broker/kafkaapi"
)

func init() {
	add(68, 0, 1, func(h *Handlers) kafkaapi.Serve {
		return kafkaapi.Start(func(c kafkaapi.Conn, req *kafkaapi.Request, r *kmsg.ConsumerGroupHeartbeatRequest) *kafkaapi.Pending {
			return kafkaapi.Ready(req, h.consumerGroupHeartbeat(c, req, r))
		})
	})
}

func (h *Handlers) consumerGroupHeartbeat(c kafkaapi.Conn, req *kafkaapi.Request, r *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	if !h.authz.MayGroup(req.Who, kmsg.ACLOperationRead, r.Group) {
		resp.ErrorCode, resp.MemberEpoch = kerr.GroupAuthorizationFailed.Code, -1
		return resp
	}
	hb := group.ConsumerHeartbeat{
		Group: r.Group, MemberID: r.MemberID, MemberEpoch: r.MemberEpoch,
		InstanceID: r.InstanceID, RackID: r.RackID,
		ClientID: req.ClientID, ClientHost: clientHost(c.RemoteAddr()),
		SubscribedTopics: r.SubscribedTopicNames, ServerAssignor: r.ServerAssignor,
	}
	if r.RebalanceTimeoutMillis > 0 {
		hb.RebalanceTimeout = time.Duration(r.RebalanceTimeoutMillis) * time.Millisecond
	}
	if r.Version >= 1 {
		hb.SubscribedRegex = r.SubscribedTopicRegex
	}
	if r.Topics != nil {
		hb.Owned = []group.TopicPartition{}
		names := h.topicNamesByID()
		for _, t := range r.Topics {
			name, ok := names[t.TopicID]
			if !ok {
				continue
			}
			for _, p := range t.Partitions {
				hb.Owned = append(hb.Owned, group.TopicPartition{Topic: name, Partition: p})
			}
		}
	}
	res := h.groups.ConsumerHeartbeat(hb)
	resp.ErrorCode, resp.MemberEpoch = codeOf(res.Err), res.MemberEpoch
	resp.HeartbeatIntervalMillis = int32(res.HeartbeatInterval / time.Millisecond)
	if res.Message != "" {
		msg := res.Message
		resp.ErrorMessage = &msg
	}
	if res.MemberID != "" {
		id := res.MemberID
		resp.MemberID = &id
	}
	if res.Err != nil || res.Assignment == nil {
		return resp
	}
	a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
	a.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
	for _, tps := range group.ByTopic(res.Assignment) {
		t, ok := h.meta.Topic(tps[0].Topic)
		if !ok {
			continue
		}
		at := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
		at.TopicID = t.ID
		for _, tp := range tps {
			at.Partitions = append(at.Partitions, tp.Partition)
		}
		a.Topics = append(a.Topics, at)
	}
	resp.Assignment = &a
	return resp
}

// topicNamesByID maps every topic's id to its name.
func (h *Handlers) topicNamesByID() map[[16]byte]string {
	topics := h.meta.Topics()
	out := make(map[[16]byte]string, len(topics))
	for _, t := range topics {
		out[t.ID] = t.Name
	}
	return out
}
