package clusterapi

// AlterPartitionReassignments (key 45), versions 0-1.
//
// Starts moving each named partition of a replicated topic to the given
// replicas, or cancels its move when the replicas are null; the
// controller then carries the move out while the partition keeps serving
// (cluster/reassign.go). The caller needs Alter on the cluster. It answers
// once the move is recorded, not when it is done:
// ListPartitionReassignments shows the moves still under way. A target
// must name live brokers, no broker twice, at least two
// (INVALID_REPLICA_ASSIGNMENT); cancelling a partition that is not moving
// is NO_REASSIGNMENT_IN_PROGRESS. A standalone broker has one replica per
// partition: INVALID_REQUEST.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/kafkaapi"
	"github.com/tributary-io/tributary/broker/kafkaerr"
)

func init() {
	add(45, 0, 1, func(h *Handlers) kafkaapi.Serve { return kafkaapi.Async(h.alterReassignments) })
}

func (h *Handlers) alterReassignments(who *kafkaapi.Request, req *kmsg.AlterPartitionAssignmentsRequest) *kmsg.AlterPartitionAssignmentsResponse {
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	if !h.authz.MayCluster(who.Who, kmsg.ACLOperationAlter) {
		resp.ErrorCode = acl.ClusterRefused
		return resp
	}
	ra, ok := h.meta.(Reassigner)
	if !ok {
		msg := "reassignment needs a cluster: a standalone broker stores each partition once"
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, &msg
		return resp
	}
	ctx, cancel := timeout(req.TimeoutMillis)
	defer cancel()
	for _, rt := range req.Topics {
		st := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			sp.Partition = rp.Partition
			if err := ra.AlterReassignment(ctx, rt.Topic, rp.Partition, rp.Replicas); err != nil {
				msg := err.Error()
				sp.ErrorCode, sp.ErrorMessage = kafkaerr.OfCluster(err), &msg
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
