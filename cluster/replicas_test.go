package cluster

import (
	"fmt"
	"testing"
)

// Replicas are spread so that each broker leads and follows as many
// partitions as the others, with no broker twice in a partition.
func TestSpreadReplicas(t *testing.T) {
	brokers := []Broker{{ID: 3}, {ID: 1}, {ID: 2}}
	rs, err := SpreadReplicas("events", 6, 3, brokers)
	if err != nil {
		t.Fatal(err)
	}
	lead, hold := map[int32]int{}, map[int32]int{}
	for p, r := range rs {
		if err := checkBrokerList("replicas", r); err != nil || len(r) != 3 {
			t.Fatalf("partition %d: replicas %v: %v", p, r, err)
		}
		lead[r[0]]++
		for _, id := range r {
			hold[id]++
		}
	}
	if fmt.Sprint(lead) != "map[1:2 2:2 3:2]" || fmt.Sprint(hold) != "map[1:6 2:6 3:6]" {
		t.Fatalf("leaders %v, replicas %v: want an even spread", lead, hold)
	}
	if _, err := SpreadReplicas("events", 1, 4, brokers); err == nil {
		t.Fatal("4 replicas over 3 brokers accepted")
	}
}

// A topic node written before replication reads as one replica per
// partition, its leader.
func TestOldTopicNodeReadsAsOneReplica(t *testing.T) {
	n, err := DecodeTopicNode([]byte(`{"version":1,"leaders":[2,1]}`))
	if err != nil {
		t.Fatal(err)
	}
	topic := Topic{Name: "old", Leaders: n.Leaders, Replicas: n.Replicas}
	if topic.Replicated() || fmt.Sprint(topic.ReplicasOf(0), topic.ReplicasOf(1)) != "[2] [1]" {
		t.Fatalf("old topic: replicated %v, replicas %v %v", topic.Replicated(), topic.ReplicasOf(0), topic.ReplicasOf(1))
	}
	if st, ok := topic.StateOf(1); !ok || st.Leader != 1 || fmt.Sprint(st.ISR) != "[1]" {
		t.Fatalf("old topic's partition 1 state: %+v %v", st, ok)
	}
}

// The controller's rule: a dead leader is replaced by the first live ISR
// member in assignment order with the next epoch; dead followers leave
// the ISR; with no live ISR member nobody leads (no unclean election).
func TestControllerNextState(t *testing.T) {
	replicas := []int32{1, 2, 3}
	live := func(ids ...int32) liveBrokers {
		m := liveBrokers{}
		for _, id := range ids {
			m[id] = 7
		}
		return m
	}
	st := PartitionState{Version: 1, Leader: 1, LeaderEpoch: 4, ISR: []int32{1, 3, 2}}
	for _, c := range []struct {
		name    string
		st      PartitionState
		live    liveBrokers
		want    string
		changed bool
	}{
		{"all alive", st, live(1, 2, 3), "leader 1 epoch 4 isr [1 3 2]", false},
		{"leader dies", st, live(2, 3), "leader 2 epoch 5 isr [3 2]", true},
		{"follower dies", st, live(1, 2), "leader 1 epoch 4 isr [1 2]", true},
		{"out of sync replica cannot lead", PartitionState{Version: 1, Leader: 1, LeaderEpoch: 4, ISR: []int32{1, 3}}, live(2, 3), "leader 3 epoch 5 isr [3]", true},
		{"no live isr member", PartitionState{Version: 1, Leader: 1, LeaderEpoch: 4, ISR: []int32{1}}, live(2, 3), "leader -1 epoch 5 isr [1]", true},
		{"still no live isr member", PartitionState{Version: 1, Leader: -1, LeaderEpoch: 5, ISR: []int32{1}}, live(2, 3), "leader -1 epoch 5 isr [1]", false},
		{"isr member returns", PartitionState{Version: 1, Leader: -1, LeaderEpoch: 5, ISR: []int32{1}}, live(1, 2), "leader 1 epoch 6 isr [1]", true},
	} {
		// Every member in broker epoch 7, as recorded.
		c.st = c.st.withISR(c.st.ISR, func(int32) int64 { return 7 })
		if c.st.Leader >= 0 {
			c.st.LeaderBrokerEpoch = 7
		}
		next, changed := nextState(c.st, replicas, c.live, false)
		got := fmt.Sprintf("leader %d epoch %d isr %v", next.Leader, next.LeaderEpoch, next.ISR)
		if got != c.want || changed != c.changed {
			t.Errorf("%s: %s (changed %v), want %s (changed %v)", c.name, got, changed, c.want, c.changed)
		}
	}
}
