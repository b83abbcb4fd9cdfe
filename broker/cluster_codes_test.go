package broker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// ElectLeaders and AlterPartitionReassignments answer the cluster
// metadata's refusals with the codes Kafka's tools act on, through the one
// mapping in broker/kafkaerr: an election nobody needs (the preferred
// replica leads, or the partition has one replica), an unknown topic, a
// move of a one-replica partition, a cancel of a partition not moving.
func TestClusterRefusalsKeepTheirKafkaCodes(t *testing.T) {
	const topic, single = "codes", "codes-single"
	_, _, admin := twoReplicas(t, topic)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if resp, err := admin.CreateTopic(ctx, 1, 1, nil, single); err != nil || resp.Err != nil {
		t.Fatalf("creating %s: %v %v", single, err, resp.Err)
	}

	elect := func(topic string) error {
		t.Helper()
		res, err := admin.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{topic: {0: {}}})
		if err != nil {
			t.Fatalf("ElectLeaders %s: %v", topic, err)
		}
		return res[topic][0].Err
	}
	for topic, want := range map[string]error{
		topic:    kerr.ElectionNotNeeded,
		single:   kerr.ElectionNotNeeded,
		"nope-x": kerr.UnknownTopicOrPartition,
	} {
		if err := elect(topic); !errors.Is(err, want) {
			t.Errorf("ElectLeaders %s: %v, want %v", topic, err, want)
		}
	}

	move := func(req kadm.AlterPartitionAssignmentsReq, topic string) error {
		t.Helper()
		res, err := admin.AlterPartitionAssignments(ctx, req)
		if err != nil {
			t.Fatalf("AlterPartitionAssignments %s: %v", topic, err)
		}
		return res[topic][0].Err
	}
	var moveSingle, cancelIdle kadm.AlterPartitionAssignmentsReq
	moveSingle.Assign(single, 0, []int32{1, 2})
	cancelIdle.CancelAssign(topic, 0)
	if err := move(moveSingle, single); !errors.Is(err, kerr.InvalidReplicaAssignment) {
		t.Errorf("moving a one-replica partition: %v, want %v", err, kerr.InvalidReplicaAssignment)
	}
	if err := move(cancelIdle, topic); !errors.Is(err, kerr.NoReassignmentInProgress) {
		t.Errorf("cancelling a move of a partition not moving: %v, want %v", err, kerr.NoReassignmentInProgress)
	}
}
