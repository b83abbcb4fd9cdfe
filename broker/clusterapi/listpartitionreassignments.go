package clusterapi

// ListPartitionReassignments (key 46), version 0.
//
// The moves AlterPartitionReassignments started that are still under way,
// of the named partitions or of all; the caller needs Describe on the
// cluster. A standalone broker never moves anything: an empty list.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/kafkaapi"
)

func init() {
	add(46, 0, 0, func(h *Handlers) kafkaapi.Serve { return kafkaapi.Now(h.listReassignments) })
}

func (h *Handlers) listReassignments(who *kafkaapi.Request, req *kmsg.ListPartitionReassignmentsRequest) *kmsg.ListPartitionReassignmentsResponse {
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	if !h.authz.MayCluster(who.Who, kmsg.ACLOperationDescribe) {
		resp.ErrorCode = acl.ClusterRefused
		return resp
	}
	ra, ok := h.meta.(Reassigner)
	if !ok {
		return resp // nothing ever moves
	}
	want := func(topic string, p int32) bool {
		if req.Topics == nil {
			return true
		}
		for _, t := range req.Topics {
			if t.Topic == topic {
				for _, q := range t.Partitions {
					if q == p {
						return true
					}
				}
			}
		}
		return false
	}
	for _, r := range ra.Reassignments() {
		if !want(r.Topic, r.Partition) {
			continue
		}
		if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != r.Topic {
			t := kmsg.NewListPartitionReassignmentsResponseTopic()
			t.Topic = r.Topic
			resp.Topics = append(resp.Topics, t)
		}
		p := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
		p.Partition, p.Replicas, p.AddingReplicas, p.RemovingReplicas = r.Partition, r.Replicas, r.Adding, r.Removing
		last := &resp.Topics[len(resp.Topics)-1]
		last.Partitions = append(last.Partitions, p)
	}
	return resp
}
