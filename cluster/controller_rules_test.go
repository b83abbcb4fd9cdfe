package cluster

import (
	"fmt"
	"testing"
)

// The controller's rules for one partition (controller.go, preferred.go).
// Broker n runs in broker epoch 100+n; restarted, in 200+n.
func TestControllerRules(t *testing.T) {
	all := liveBrokers{1: 101, 2: 102, 3: 103}
	no := func(ids ...int32) liveBrokers {
		m := liveBrokers{1: 101, 2: 102, 3: 103}
		for _, id := range ids {
			delete(m, id)
		}
		return m
	}
	re := func(ids ...int32) liveBrokers {
		m := liveBrokers{1: 101, 2: 102, 3: 103}
		for _, id := range ids {
			m[id] = 200 + int64(id)
		}
		return m
	}
	only := func(m liveBrokers, ids ...int32) liveBrokers {
		kept := liveBrokers{}
		for _, id := range ids {
			kept[id] = m[id]
		}
		return kept
	}
	// old is a state written before broker epochs; st records each
	// member in its first incarnation.
	old := func(leader, epoch int32, isr ...int32) PartitionState {
		return PartitionState{Leader: leader, LeaderEpoch: epoch, ISR: isr}
	}
	st := func(leader, epoch int32, isr ...int32) PartitionState {
		s := old(leader, epoch, isr...).withISR(isr, func(id int32) int64 { return 100 + int64(id) })
		if leader >= 0 {
			s.LeaderBrokerEpoch = 100 + int64(leader)
		}
		return s
	}
	clean := func(st PartitionState, replicas []int32, live liveBrokers) (PartitionState, bool) {
		return nextState(st, replicas, live, false)
	}
	unclean := func(st PartitionState, replicas []int32, live liveBrokers) (PartitionState, bool) {
		return nextState(st, replicas, live, true)
	}
	tests := []struct {
		name     string
		rule     func(PartitionState, []int32, liveBrokers) (PartitionState, bool)
		st       PartitionState
		replicas []int32
		live     liveBrokers
		want     string // {leader leader_epoch isr leader_broker_epoch isr_broker_epochs}, "" for no change
	}{
		{"leader alive, all in sync", clean, st(1, 0, 1, 2, 3), []int32{1, 2, 3}, all, ""},
		{"leader dead", clean, st(1, 0, 1, 2, 3), []int32{1, 2, 3}, no(1), "{2 1 [2 3] 102 [102 103]}"},
		{"follower dead", clean, st(1, 0, 1, 2, 3), []int32{1, 2, 3}, no(3), "{1 0 [1 2] 101 [101 102]}"},
		{"nobody in sync alive", clean, st(1, 0, 1), []int32{1, 2, 3}, no(1), "{-1 1 [1] 0 [101]}"},
		{"leader removed by a reassignment", clean, st(1, 0, 1, 2, 3), []int32{2, 3}, all, "{2 1 [2 3] 102 [102 103]}"},
		{"removed leader, no successor in sync", clean, st(1, 0, 1), []int32{2, 3}, all, ""},
		{"offline stays offline", clean, st(-1, 3, 1), []int32{1, 2, 3}, no(1), ""},
		{"unclean on: leader alive", unclean, st(1, 0, 1), []int32{1, 2, 3}, all, ""},
		{"unclean on: a live isr member still wins", unclean, st(1, 0, 1, 3), []int32{1, 2, 3}, no(1), "{3 1 [3] 103 [103]}"},
		{"unclean on: leader dies, nobody in sync alive", unclean, st(1, 0, 1), []int32{1, 2, 3}, no(1), "{2 1 [2] 102 [102]}"},
		{"unclean on: an offline partition", unclean, st(-1, 3, 1), []int32{1, 2, 3}, no(1, 2), "{3 4 [3] 103 [103]}"},
		{"unclean on: no replica alive", unclean, st(1, 0, 1), []int32{1, 2, 3}, liveBrokers{}, "{-1 1 [1] 0 [101]}"},
		{"unclean on: offline, no replica alive", unclean, st(-1, 1, 1), []int32{1, 2, 3}, liveBrokers{}, ""},
		{"unclean on: removed leader keeps leading", unclean, st(1, 0, 1), []int32{2, 3}, all, ""},
		{"unclean on: dead broker that is no replica", unclean, st(-1, 2, 1), []int32{1, 2}, liveBrokers{3: 103}, ""},
		{"preferred in sync", preferredState, st(2, 4, 2, 1), []int32{1, 2, 3}, all, "{1 5 [2 1] 101 [102 101]}"},
		{"preferred leads already", preferredState, st(1, 4, 1, 2), []int32{1, 2, 3}, all, ""},
		{"preferred out of sync", preferredState, st(2, 4, 2, 3), []int32{1, 2, 3}, all, ""},
		{"preferred dead", preferredState, st(2, 4, 2, 1), []int32{1, 2, 3}, no(1), ""},
		{"unclean: a live replica out of sync", uncleanState, st(-1, 3, 1), []int32{1, 2, 3}, no(1), "{2 4 [2] 102 [102]}"},
		{"unclean: a leader already", uncleanState, st(2, 3, 2), []int32{1, 2, 3}, all, ""},

		// Broker epochs (brokerepochs.go).
		{"restarted leader: another in-sync replica leads", clean, st(1, 0, 1, 2, 3), []int32{1, 2, 3}, re(1), "{2 1 [2 3] 102 [102 103]}"},
		{"restarted follower leaves the isr", clean, st(1, 0, 1, 2, 3), []int32{1, 2, 3}, re(3), "{1 0 [1 2] 101 [101 102]}"},
		{"restarted leader and follower: the valid one leads", clean, st(1, 0, 1, 2, 3), []int32{1, 2, 3}, re(1, 2), "{3 1 [3] 103 [103]}"},
		{"restarted leader, no other in-sync replica alive: it leads alone, next epoch", clean, st(1, 0, 1, 2, 3), []int32{1, 2, 3}, only(re(1), 1), "{1 1 [1] 201 [201]}"},
		{"every member restarted: the old leader leads alone", clean, st(2, 0, 1, 2, 3), []int32{1, 2, 3}, re(1, 2, 3), "{2 1 [2] 202 [202]}"},
		{"restarted alone in the isr: out-of-sync replicas do not lead", clean, st(1, 0, 1), []int32{1, 2, 3}, re(1), "{1 1 [1] 201 [201]}"},
		{"unclean on: a restarted in-sync replica before an out-of-sync one", unclean, st(1, 0, 1), []int32{1, 2, 3}, re(1), "{1 1 [1] 201 [201]}"},
		{"offline: an isr member returns in a new incarnation", clean, st(-1, 3, 1, 2), []int32{1, 2, 3}, only(re(1), 1), "{1 4 [1] 201 [201]}"},
		{"restarted leader that is no replica leads nothing", clean, st(1, 0, 1), []int32{2, 3}, re(1), "{-1 1 [1] 0 [101]}"},
		{"preferred replica restarted: not elected", preferredState, st(2, 4, 2, 1), []int32{1, 2, 3}, re(1), ""},
		{"node without broker epochs: adopted", clean, old(1, 0, 1, 2, 3), []int32{1, 2, 3}, all, "{1 0 [1 2 3] 101 [101 102 103]}"},
		{"node without broker epochs: leader dead", clean, old(1, 0, 1, 2, 3), []int32{1, 2, 3}, no(1), "{2 1 [2 3] 102 [102 103]}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, changed := tt.rule(tt.st, tt.replicas, tt.live)
			s := ""
			if changed {
				s = fmt.Sprintf("{%d %d %v %d %v}", got.Leader, got.LeaderEpoch, got.ISR, got.LeaderBrokerEpoch, got.ISRBrokerEpochs)
			}
			if s != tt.want {
				t.Fatalf("%+v over replicas %v, live %v: got %q, want %q", tt.st, tt.replicas, tt.live, s, tt.want)
			}
			if changed {
				if _, err := DecodePartitionStateNode(encodeState(got)); err != nil {
					t.Fatalf("the rule wrote a node no reader takes: %v", err)
				}
			}
		})
	}
}
