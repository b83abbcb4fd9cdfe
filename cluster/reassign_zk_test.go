package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
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

// A topic node with a move no controller can complete, written by hand
// ("00" and "0" both naming partition 0), is refused: every broker logs
// it naming the node, leaves the topic out of its view, keeps its data
// (the node is not confirmed deleted, and AssignedReplicas refuses to
// decide from it) and leaves the node as it is, warning once per broker;
// the controller goes on serving the other topics.
func TestRefusedMoveLeavesTopicAndControllerAlone(t *testing.T) {
	connect := testenv.StartZooKeeper(t)
	logs := &logLines{}
	members := map[int32]*cluster.ZooKeeper{}
	for id := int32(1); id <= 3; id++ {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		z, err := cluster.JoinZooKeeper(ctx, connect, cluster.Broker{ID: id, Host: "127.0.0.1", Port: 10000 + id}, logs.logger(t))
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { z.Close() })
		members[id] = z
	}
	m := members[1]
	testenv.Eventually(t, 5*time.Second, "three brokers", func() bool { return len(m.Brokers()) == 3 })
	ctx := context.Background()
	bad, err := m.CreateReplicatedTopic(ctx, "bad", 1, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	good, err := m.CreateReplicatedTopic(ctx, "good", 1, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := session(t, connect)
	r := bad.Replicas[0]
	node := fmt.Sprintf(`{"version":1,"topic_id":%q,"leaders":[%d],"replicas":[[%d,%d]],"adding_replicas":{"0":[%d]},"removing_replicas":{"00":[%d]}}`,
		bad.ID, r[0], r[0], r[1], r[0], r[1])
	path := s.Paths.Topic("bad")
	if _, err := s.Conn.Set(path, []byte(node), -1); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "the refused node logged by its path", func() bool {
		return logs.count("ignoring unreadable topic assignment", "path="+path, `partition key "00"`) > 0
	})
	testenv.Eventually(t, 10*time.Second, "the topic left out of the view", func() bool { _, ok := m.Topic("bad"); return !ok })
	if gone, err := m.TopicDeleted("bad"); err != nil || gone {
		t.Errorf("TopicDeleted: %v, %v; want false: the data must stay", gone, err)
	}
	if got, err := m.AssignedReplicas("bad", 0); err == nil || !strings.Contains(err.Error(), "topic bad") {
		t.Errorf("AssignedReplicas: %v, %v; want an error naming the topic", got, err)
	}
	if err := m.AlterReassignment(ctx, "bad", 0, nil); err == nil || !strings.Contains(err.Error(), "topic bad") {
		t.Errorf("cancelling the refused move: %v; want an error naming the topic", err)
	}

	// The controller still serves "good": its leader leaves, another leads.
	dead := good.Replicas[0][0]
	members[dead].Close()
	var alive *cluster.ZooKeeper
	for id, z := range members {
		if id != dead {
			alive = z
		}
	}
	testenv.Eventually(t, 20*time.Second, "good-0 led by a live broker", func() bool {
		tp, ok := alive.Topic("good")
		st, _ := tp.StateOf(0)
		return ok && st.Leader == good.Replicas[0][1] && st.LeaderEpoch == 1
	})
	if data, _, err := s.Conn.Get(path); err != nil || string(data) != node {
		t.Errorf("the refused node was rewritten: %s, %v", data, err)
	}
	// The failover refreshed every view; each broker warned once of the
	// node as written, not at every refresh.
	if n := logs.count("ignoring unreadable topic assignment", "path="+path); n > len(members) {
		t.Errorf("the refused node was warned of %d times by %d brokers, want once each", n, len(members))
	}
}
