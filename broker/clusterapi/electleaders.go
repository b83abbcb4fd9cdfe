package clusterapi

// ElectLeaders (key 43), versions 0-2.
//
// Asks the controller to give each named partition (all partitions of
// replicated topics when none are named) back to its preferred leader,
// the first replica, if it is alive and in sync (type 0), or to let any
// live replica lead a leaderless partition (type 1, unclean), whatever
// the topic's unclean.leader.election.enable says (as in Kafka: the
// operator accepts the loss for these partitions, once). The caller needs
// Alter on the cluster. The answer comes once the controller ran the
// elections, per partition: none, ELECTION_NOT_NEEDED (already led as
// asked), PREFERRED_LEADER_NOT_AVAILABLE, ELIGIBLE_LEADERS_NOT_AVAILABLE or
// UNKNOWN_TOPIC_OR_PARTITION. A standalone broker has nothing to elect:
// INVALID_REQUEST.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/kafkaapi"
	"github.com/tributary-io/tributary/broker/kafkaerr"
	"github.com/tributary-io/tributary/cluster"
)

func init() {
	add(43, 0, 2, func(h *Handlers) kafkaapi.Serve { return kafkaapi.Async(h.electLeaders) })
}

func (h *Handlers) electLeaders(who *kafkaapi.Request, req *kmsg.ElectLeadersRequest) *kmsg.ElectLeadersResponse {
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	if !h.authz.MayCluster(who.Who, kmsg.ACLOperationAlter) {
		resp.ErrorCode = acl.ClusterRefused
		return resp
	}
	var parts []cluster.TopicPartition
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			parts = append(parts, cluster.TopicPartition{Topic: t.Topic, Partition: p})
		}
	}
	el, ok := h.meta.(Elector)
	if !ok || req.ElectionType > 1 {
		code := kerr.InvalidRequest
		msg := "leader election needs a cluster: a standalone broker's partitions have one replica"
		if ok {
			msg = "election type must be 0 (preferred) or 1 (unclean)"
		}
		for _, tp := range parts {
			addElectResult(resp, tp, code.Code, msg)
		}
		resp.ErrorCode = code.Code
		return resp
	}
	ctx, cancel := timeout(req.TimeoutMillis)
	defer cancel()
	results, err := el.ElectLeaders(ctx, req.ElectionType == 1, parts)
	if err != nil {
		h.logger.Warn("leader election failed", "err", err)
		code := kerr.RequestTimedOut.Code
		if !errors.Is(err, context.DeadlineExceeded) {
			code = kerr.UnknownServerError.Code
		}
		for _, tp := range parts {
			addElectResult(resp, tp, code, err.Error())
		}
		resp.ErrorCode = code
		return resp
	}
	for tp, err := range results {
		code, msg := int16(0), ""
		if err != nil {
			code, msg = kafkaerr.OfCluster(err), err.Error()
			if errors.Is(err, cluster.ErrNotReplicated) {
				// A partition with one replica has the only leader it can have.
				code = kerr.ElectionNotNeeded.Code
			}
		}
		addElectResult(resp, tp, code, msg)
	}
	return resp
}

func addElectResult(resp *kmsg.ElectLeadersResponse, tp cluster.TopicPartition, code int16, msg string) {
	i := 0
	for i < len(resp.Topics) && resp.Topics[i].Topic != tp.Topic {
		i++
	}
	if i == len(resp.Topics) {
		t := kmsg.NewElectLeadersResponseTopic()
		t.Topic = tp.Topic
		resp.Topics = append(resp.Topics, t)
	}
	p := kmsg.NewElectLeadersResponseTopicPartition()
	p.Partition, p.ErrorCode = tp.Partition, code
	if msg != "" {
		p.ErrorMessage = &msg
	}
	resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, p)
}
