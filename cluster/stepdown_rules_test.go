package cluster

import (
	"fmt"
	"testing"
)

// The controller's rule for a step-down (election type 2, stepdown.go).
func TestAwayStateRules(t *testing.T) {
	all := map[int32]bool{1: true, 2: true, 3: true}
	st := func(leader, epoch int32, isr ...int32) PartitionState {
		return PartitionState{Leader: leader, LeaderEpoch: epoch, ISR: isr}
	}
	tests := []struct {
		name string
		st   PartitionState
		live map[int32]bool
		want string // "" for no change
	}{
		{"the next in-sync replica leads, the old leader leaves the isr", st(1, 4, 1, 2, 3), all, "{0 2 5 [2 3] 0}"},
		{"assignment order, not isr order", st(2, 4, 3, 2, 1), all, "{0 1 5 [3 1] 0}"},
		{"an out-of-sync replica never leads", st(1, 4, 1, 3), all, "{0 3 5 [3] 0}"},
		{"a dead in-sync replica never leads", st(1, 4, 1, 2, 3), map[int32]bool{1: true, 3: true}, "{0 3 5 [2 3] 0}"},
		{"no other in-sync replica: nothing changes", st(1, 4, 1), all, ""},
		{"no leader: nothing to move", st(-1, 4, 1, 2), all, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, changed := awayState(tt.st, []int32{1, 2, 3}, tt.live)
			s := ""
			if changed {
				s = fmt.Sprint(got)
			}
			if s != tt.want {
				t.Fatalf("%+v: got %q, want %q", tt.st, s, tt.want)
			}
		})
	}
}
