package broker

// AlterPartitionReassignments (key 45, versions 0-1) and
// ListPartitionReassignments (key 46, version 0).
//
// Alter starts moving each named partition of a replicated topic to the
// given replicas, or cancels its move when the replicas are null; the
// controller then carries the move out while the partition keeps
// serving (cluster/reassign.go). It answers once the move is recorded,
// not when it is done: List shows the moves still under way. A target
// must name live brokers, no broker twice, at least two
// (INVALID_REPLICA_ASSIGNMENT); cancelling a partition that is not
// moving is NO_REASSIGNMENT_IN_PROGRESS. A standalone broker has one
// replica per partition: INVALID_REQUEST.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/kafkaerr"
	"github.com/tributary-io/tributary/cluster"
)

func init() {
	register(45, 0, 1, async((*Broker).alterReassignments))
	register(46, 0, 0, now((*Broker).listReassignments))
}

// reassigner is cluster metadata that moves partitions
// (cluster.ZooKeeper).
type reassigner interface {
	AlterReassignment(ctx context.Context, topic string, partition int32, replicas []int32) error
	Reassignments() []cluster.PartitionReassignment
}

func (b *Broker) alterReassignments(who *request, req *kmsg.AlterPartitionAssignmentsRequest) *kmsg.AlterPartitionAssignmentsResponse {
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	if !b.mayCluster(who, kmsg.ACLOperationAlter) {
		resp.ErrorCode = clusterRefused
		return resp
	}
	ra, ok := b.meta.(reassigner)
	if !ok {
		msg := "reassignment needs a cluster: a standalone broker stores each partition once"
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, &msg
		return resp
	}
	ctx, cancel := context.WithTimeout(context.Background(), max(time.Duration(req.TimeoutMillis)*time.Millisecond, time.Second))
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

func (b *Broker) listReassignments(who *request, req *kmsg.ListPartitionReassignmentsRequest) *kmsg.ListPartitionReassignmentsResponse {
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	if !b.mayCluster(who, kmsg.ACLOperationDescribe) {
		resp.ErrorCode = clusterRefused
		return resp
	}
	ra, ok := b.meta.(reassigner)
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
