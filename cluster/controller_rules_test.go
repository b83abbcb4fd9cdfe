package cluster

import (
	"fmt"
	"testing"
)

// The controller's rules for one partition (controller.go, preferred.go).
func TestControllerRules(t *testing.T) {
	all := map[int32]bool{1: true, 2: true, 3: true}
	no := func(ids ...int32) map[int32]bool {
		m := map[int32]bool{1: true, 2: true, 3: true}
		for _, id := range ids {
			delete(m, id)
		}
		return m
	}
	st := func(leader, epoch int32, isr ...int32) PartitionState {
		return PartitionState{Leader: leader, LeaderEpoch: epoch, ISR: isr}
	}
	clean := func(st PartitionState, replicas []int32, live map[int32]bool) (PartitionState, bool) {
		return nextState(st, replicas, live, false)
	}
	unclean := func(st PartitionState, replicas []int32, live map[int32]bool) (PartitionState, bool) {
		return nextState(st, replicas, live, true)
	}
	tests := []struct {
		name     string
		rule     func(PartitionState, []int32, map[int32]bool) (PartitionState, bool)
		st       PartitionState
		replicas []int32
		live     map[int32]bool
		want     string // "" for no change
	}{
		{"leader alive, all in sync", clean, st(1, 0, 1, 2, 3), []int32{1, 2, 3}, all, ""},
		{"leader dead", clean, st(1, 0, 1, 2, 3), []int32{1, 2, 3}, no(1), "{0 2 1 [2 3] 0}"},
		{"follower dead", clean, st(1, 0, 1, 2, 3), []int32{1, 2, 3}, no(3), "{0 1 0 [1 2] 0}"},
		{"nobody in sync alive", clean, st(1, 0, 1), []int32{1, 2, 3}, no(1), "{0 -1 1 [1] 0}"},
		{"leader removed by a reassignment", clean, st(1, 0, 1, 2, 3), []int32{2, 3}, all, "{0 2 1 [2 3] 0}"},
		{"removed leader, no successor in sync", clean, st(1, 0, 1), []int32{2, 3}, all, ""},
		{"offline stays offline", clean, st(-1, 3, 1), []int32{1, 2, 3}, no(1), ""},
		{"unclean on: leader alive", unclean, st(1, 0, 1), []int32{1, 2, 3}, all, ""},
		{"unclean on: a live isr member still wins", unclean, st(1, 0, 1, 3), []int32{1, 2, 3}, no(1), "{0 3 1 [3] 0}"},
		{"unclean on: leader dies, nobody in sync alive", unclean, st(1, 0, 1), []int32{1, 2, 3}, no(1), "{0 2 1 [2] 0}"},
		{"unclean on: an offline partition", unclean, st(-1, 3, 1), []int32{1, 2, 3}, no(1, 2), "{0 3 4 [3] 0}"},
		{"unclean on: no replica alive", unclean, st(1, 0, 1), []int32{1, 2, 3}, map[int32]bool{}, "{0 -1 1 [1] 0}"},
		{"unclean on: offline, no replica alive", unclean, st(-1, 1, 1), []int32{1, 2, 3}, map[int32]bool{}, ""},
		{"unclean on: removed leader keeps leading", unclean, st(1, 0, 1), []int32{2, 3}, all, ""},
		{"unclean on: dead broker that is no replica", unclean, st(-1, 2, 1), []int32{1, 2}, map[int32]bool{3: true}, ""},
		{"preferred in sync", preferredState, st(2, 4, 2, 1), []int32{1, 2, 3}, all, "{0 1 5 [2 1] 0}"},
		{"preferred leads already", preferredState, st(1, 4, 1, 2), []int32{1, 2, 3}, all, ""},
		{"preferred out of sync", preferredState, st(2, 4, 2, 3), []int32{1, 2, 3}, all, ""},
		{"preferred dead", preferredState, st(2, 4, 2, 1), []int32{1, 2, 3}, no(1), ""},
		{"unclean: a live replica out of sync", uncleanState, st(-1, 3, 1), []int32{1, 2, 3}, no(1), "{0 2 4 [2] 0}"},
		{"unclean: a leader already", uncleanState, st(2, 3, 2), []int32{1, 2, 3}, all, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, changed := tt.rule(tt.st, tt.replicas, tt.live)
			s := ""
			if changed {
				s = fmt.Sprint(got)
			}
			if s != tt.want {
				t.Fatalf("%+v over replicas %v: got %q, want %q", tt.st, tt.replicas, s, tt.want)
			}
		})
	}
}
