package cluster_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/testenv"
)

// A replicated topic is created with its state nodes; when the broker
// leading a partition leaves, the controller gives the leadership to the
// next in-sync replica with the next leader epoch and takes the dead
// broker out of every ISR, and every member's view shows it.
func TestControllerMovesLeadershipOffADeadBroker(t *testing.T) {
	connect := testenv.StartZooKeeper(t)
	members := map[int32]*cluster.ZooKeeper{1: join(t, connect, 1), 2: join(t, connect, 2), 3: join(t, connect, 3)}
	for _, m := range members {
		testenv.Eventually(t, 5*time.Second, "three brokers", func() bool { return len(m.Brokers()) == 3 })
	}
	created, err := members[1].CreateReplicatedTopic(context.Background(), "replicated", 3, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := session(t, connect)
	for p := int32(0); p < 3; p++ {
		data, _, err := s.Conn.Get(s.Paths.PartitionState("replicated", p))
		if err != nil {
			t.Fatal(err)
		}
		st, err := cluster.DecodePartitionStateNode(data)
		if err != nil {
			t.Fatal(err)
		}
		if st.Leader != created.Replicas[p][0] || st.LeaderEpoch != 0 || !slices.Equal(st.ISR, created.Replicas[p]) {
			t.Fatalf("partition %d: state %+v, replicas %v", p, st, created.Replicas[p])
		}
	}
	// Growing the topic places the new partitions' replicas and states.
	grown, err := members[1].AddPartitions(context.Background(), "replicated", 5)
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(3); p < 5; p++ {
		st, ok := grown.StateOf(p)
		if !ok || len(grown.ReplicasOf(p)) != 3 || st.Leader != grown.ReplicasOf(p)[0] || !slices.Equal(st.ISR, grown.ReplicasOf(p)) {
			t.Fatalf("new partition %d: replicas %v, state %+v %v", p, grown.ReplicasOf(p), st, ok)
		}
	}
	dead := created.Replicas[0][0]
	members[dead].Close()
	delete(members, dead)
	for id, m := range members {
		testenv.Eventually(t, 20*time.Second, fmt.Sprintf("broker %d sees partition 0 led by a live broker", id), func() bool {
			tp, ok := m.Topic("replicated")
			if !ok {
				return false
			}
			st, ok := tp.StateOf(0)
			return ok && st.Leader == created.Replicas[0][1] && st.LeaderEpoch == 1 && tp.Leaders[0] == st.Leader
		})
	}
	tp, _ := members[created.Replicas[0][1]].Topic("replicated")
	for p := int32(0); p < 3; p++ {
		st, _ := tp.StateOf(p)
		if slices.Contains(st.ISR, dead) || st.Leader == dead {
			t.Errorf("partition %d still has the dead broker %d: %+v", p, dead, st)
		}
	}
	if data, _, err := s.Conn.Get(s.Paths.ControllerEpoch()); err != nil || string(data) == "0" {
		t.Fatalf("controller epoch %q, %v", data, err)
	}
	// Deleting the topic removes its state nodes with it.
	for _, m := range members {
		if err := m.DeleteTopic(context.Background(), "replicated"); err != nil {
			t.Fatal(err)
		}
		break
	}
	for _, path := range []string{s.Paths.Topic("replicated"), s.Paths.PartitionState("replicated", 0)} {
		if ok, _, err := s.Conn.Exists(path); ok || err != nil {
			t.Fatalf("%s after deleting the topic: exists %v, %v", path, ok, err)
		}
	}
}

// A controller whose epoch was overtaken writes nothing: its state
// writes check the epoch node's version. Here the epoch is raised behind
// the controller's back; when a leader then dies, the partition's new
// state carries a later epoch than the raised one, never the stale one.
func TestStaleControllerIsFenced(t *testing.T) {
	connect := testenv.StartZooKeeper(t)
	members := map[int32]*cluster.ZooKeeper{1: join(t, connect, 1), 2: join(t, connect, 2), 3: join(t, connect, 3)}
	for _, m := range members {
		testenv.Eventually(t, 5*time.Second, "three brokers", func() bool { return len(m.Brokers()) == 3 })
	}
	created, err := members[1].CreateReplicatedTopic(context.Background(), "fenced", 3, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := session(t, connect)
	var ctrl cluster.ControllerNode
	testenv.Eventually(t, 10*time.Second, "a controller is elected", func() bool {
		data, _, err := s.Conn.Get(s.Paths.Controller())
		if err != nil {
			return false
		}
		ctrl, err = cluster.DecodeControllerNode(data)
		return err == nil
	})
	// Kill a partition's leader that is not the controller.
	part := int32(0)
	for created.Replicas[part][0] == ctrl.BrokerID {
		part++
	}
	dead := created.Replicas[part][0]
	data, stat, err := s.Conn.Get(s.Paths.ControllerEpoch())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Conn.Set(s.Paths.ControllerEpoch(), []byte("100"), stat.Version); err != nil {
		t.Fatal(err)
	}
	stale := string(data)
	members[dead].Close()
	var st cluster.PartitionState
	testenv.Eventually(t, 20*time.Second, "a new leader is elected under a newer epoch", func() bool {
		data, _, err := s.Conn.Get(s.Paths.PartitionState("fenced", part))
		if err != nil {
			return false
		}
		st, err = cluster.DecodePartitionStateNode(data)
		return err == nil && st.Leader != dead && st.Leader >= 0
	})
	if st.ControllerEpoch <= 100 {
		t.Fatalf("new state written under controller epoch %d (stale %s, raised to 100): %+v", st.ControllerEpoch, stale, st)
	}
}

// With no live in-sync replica a partition stays offline until the
// broker default of unclean.leader.election.enable turns on: then the
// controller lets the live replica outside the ISR lead at once, with a
// higher epoch and alone in the ISR, except for a topic whose own config
// says false.
func TestControllerUncleanElectionByDefault(t *testing.T) {
	connect := testenv.StartZooKeeper(t)
	members := map[int32]*cluster.ZooKeeper{1: join(t, connect, 1), 2: join(t, connect, 2)}
	for _, m := range members {
		testenv.Eventually(t, 5*time.Second, "two brokers", func() bool { return len(m.Brokers()) == 2 })
	}
	ctx := context.Background()
	byDefault, err := members[1].CreateReplicatedTopic(ctx, "by-default", 1, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := members[1].CreateReplicatedTopic(ctx, "own-false", 1, 2, map[string]string{"unclean.leader.election.enable": "false"}); err != nil {
		t.Fatal(err)
	}
	s := session(t, connect)
	state := func(topic string) cluster.PartitionState {
		data, _, err := s.Conn.Get(s.Paths.PartitionState(topic, 0))
		if err != nil {
			t.Fatal(err)
		}
		st, err := cluster.DecodePartitionStateNode(data)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	// Both topics place their replicas alike on two brokers: [x y] or
	// [y x]. The follower of by-default leaves, then its leader.
	leader := byDefault.Replicas[0][0]
	follower := 3 - leader
	members[follower].Close()
	testenv.Eventually(t, 20*time.Second, "the follower leaves the isr", func() bool {
		return slices.Equal(state("by-default").ISR, []int32{leader}) && len(state("own-false").ISR) == 1
	})
	members[leader].Close()
	back := join(t, connect, follower)
	var offline cluster.PartitionState
	testenv.Eventually(t, 20*time.Second, "by-default goes offline", func() bool {
		offline = state("by-default")
		return offline.Leader == -1
	})
	if !slices.Equal(offline.ISR, []int32{leader}) {
		t.Fatalf("offline state %+v: the isr should stay the dead leader", offline)
	}

	back.SetUncleanLeaderElection(true)
	testenv.Eventuallyf(t, 20*time.Second, func() (bool, string) {
		st := state("by-default")
		return st.Leader == follower && st.LeaderEpoch > offline.LeaderEpoch && slices.Equal(st.ISR, []int32{follower}), fmt.Sprintf("%+v", st)
	})
	if st := state("own-false"); st.Leader != -1 {
		t.Fatalf("own-false (unclean.leader.election.enable=false) got an unclean leader: %+v", st)
	}
}

// An undecodable /controller node counts as no controller, and the
// operator learns of it: one warning naming the node per content, not one
// per controller round.
func TestUnreadableControllerNodeWarnedOnce(t *testing.T) {
	connect := testenv.StartZooKeeper(t)
	s := session(t, connect)
	bad := []byte(`{"version":1,"brokerid":"two"}`)
	if _, err := s.Conn.Create(s.Paths.Controller(), bad, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	logs := &logLines{}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	m, err := cluster.JoinZooKeeper(ctx, connect, cluster.Broker{ID: 1, Host: "127.0.0.1", Port: 10001}, logs.logger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	warned := func() int { return logs.count("ignoring unreadable controller node", "path="+s.Paths.Controller()) }
	testenv.Eventually(t, 10*time.Second, "a warning naming the node", func() bool { return warned() == 1 })
	// Each Controller change below proves a round read the node: the bad
	// content again must not warn again.
	for _, content := range [][]byte{[]byte(`{"version":1,"brokerid":7,"timestamp":"1"}`), bad} {
		if _, err := s.Conn.Set(s.Paths.Controller(), content, -1); err != nil {
			t.Fatal(err)
		}
		want := int32(-1)
		if string(content) != string(bad) {
			want = 7
		}
		testenv.Eventually(t, 10*time.Second, fmt.Sprintf("controller %d", want), func() bool { id, _ := m.Controller(); return id == want })
	}
	if n := warned(); n != 1 {
		t.Errorf("%d warnings for one unreadable node, want 1", n)
	}
}
