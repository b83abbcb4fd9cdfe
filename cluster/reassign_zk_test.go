package cluster_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/testenv"
)

// Starting a move records it in the topic node (target first, then the
// replicas being removed, with Kafka's adding/removing fields) and lists
// it; cancelling restores the replicas; targets Tributary cannot use are
// refused.
func TestReassignmentRecordAndCancel(t *testing.T) {
	connect := testenv.StartZooKeeper(t)
	m := join(t, connect, 1)
	join(t, connect, 2)
	join(t, connect, 3)
	testenv.Eventually(t, 5*time.Second, "three brokers", func() bool { return len(m.Brokers()) == 3 })
	ctx := context.Background()
	created, err := m.CreateReplicatedTopic(ctx, "mv", 1, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	orig := created.Replicas[0]
	var third int32
	for id := int32(1); id <= 3; id++ {
		if !slices.Contains(orig, id) {
			third = id
		}
	}
	target := []int32{third, orig[0]}
	if err := m.AlterReassignment(ctx, "mv", 0, target); err != nil {
		t.Fatal(err)
	}
	s := session(t, connect)
	data, _, err := s.Conn.Get(s.Paths.Topic("mv"))
	if err != nil {
		t.Fatal(err)
	}
	n, err := cluster.DecodeTopicNode(data)
	if err != nil {
		t.Fatal(err)
	}
	want := []int32{third, orig[0], orig[1]}
	if !slices.Equal(n.Replicas[0], want) || n.Leaders[0] != third ||
		!slices.Equal(n.AddingReplicas["0"], []int32{third}) || !slices.Equal(n.RemovingReplicas["0"], []int32{orig[1]}) {
		t.Fatalf("topic node during the move: %s, want replicas %v adding [%d] removing [%d]", data, want, third, orig[1])
	}
	if rs := m.Reassignments(); len(rs) != 1 || rs[0].Topic != "mv" || !slices.Equal(rs[0].Replicas, want) {
		t.Fatalf("Reassignments: %+v", rs)
	}
	// A partition being moved has no settled assignment to delete by.
	if got, err := m.AssignedReplicas("mv", 0); !errors.Is(err, cluster.ErrNoAssignment) {
		t.Fatalf("AssignedReplicas during the move: %v, %v; want ErrNoAssignment", got, err)
	}

	if err := m.AlterReassignment(ctx, "mv", 0, nil); err != nil {
		t.Fatal(err)
	}
	tp, _ := m.Topic("mv")
	if !slices.Equal(tp.ReplicasOf(0), orig) || len(tp.Reassigning) != 0 || len(m.Reassignments()) != 0 {
		t.Fatalf("after cancelling: replicas %v, reassigning %v, want %v and none", tp.ReplicasOf(0), tp.Reassigning, orig)
	}
	if got, err := m.AssignedReplicas("mv", 0); err != nil || !slices.Equal(got, orig) {
		t.Fatalf("AssignedReplicas after cancelling: %v, %v; want %v", got, err, orig)
	}
	for topic, want := range map[string]bool{"mv": false, "absent": true} {
		if gone, err := m.TopicDeleted(topic); err != nil || gone != want {
			t.Errorf("TopicDeleted(%s) = %v, %v; want %v", topic, gone, err, want)
		}
	}
	for _, tp := range []struct {
		topic string
		p     int32
		want  error
	}{{"absent", 0, cluster.ErrUnknownTopic}, {"mv", 5, cluster.ErrNoAssignment}} {
		if got, err := m.AssignedReplicas(tp.topic, tp.p); !errors.Is(err, tp.want) {
			t.Errorf("AssignedReplicas(%s, %d): %v, %v; want %v", tp.topic, tp.p, got, err, tp.want)
		}
	}
	for _, tt := range []struct {
		target []int32
		want   error
	}{
		{nil, cluster.ErrNoReassignment},
		{[]int32{1}, cluster.ErrInvalidReplicas},
		{[]int32{1, 1}, cluster.ErrInvalidReplicas},
		{[]int32{1, 9}, cluster.ErrInvalidReplicas},
	} {
		if err := m.AlterReassignment(ctx, "mv", 0, tt.target); !errors.Is(err, tt.want) {
			t.Errorf("target %v: %v, want %v", tt.target, err, tt.want)
		}
	}
	if err := m.AlterReassignment(ctx, "mv", 5, target); !errors.Is(err, cluster.ErrUnknownTopic) {
		t.Errorf("partition 5: %v, want unknown", err)
	}
}
