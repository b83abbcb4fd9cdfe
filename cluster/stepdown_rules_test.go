package cluster

import (
	"fmt"
	"testing"
)

// The controller's rule for a step-down (election type 2, stepdown.go).
// Broker b's epoch is 10+b; a state records the epochs its members were
// seen in sync with.
func TestAwayStateRules(t *testing.T) {
	all := liveBrokers{1: 11, 2: 12, 3: 13}
	st := func(leader, epoch int32, isr ...int32) PartitionState {
		s := PartitionState{Leader: leader, LeaderEpoch: epoch}
		if leader >= 0 {
			s.LeaderBrokerEpoch = 10 + int64(leader)
		}
		return s.withISR(isr, func(id int32) int64 { return 10 + int64(id) })
	}
	tests := []struct {
		name string
		st   PartitionState
		live liveBrokers
		want string // leader, leader epoch, its broker epoch, isr and theirs; "" for no change
	}{
		{"the next in-sync replica leads, the old leader leaves the isr", st(1, 4, 1, 2, 3), all, "2 5 12 [2 3] [12 13]"},
		{"assignment order, not isr order", st(2, 4, 3, 2, 1), all, "1 5 11 [3 1] [13 11]"},
		{"an out-of-sync replica never leads", st(1, 4, 1, 3), all, "3 5 13 [3] [13]"},
		{"a dead in-sync replica never leads", st(1, 4, 1, 2, 3), liveBrokers{1: 11, 3: 13}, "3 5 13 [2 3] [12 13]"},
		{"a restarted in-sync replica never leads", st(1, 4, 1, 2, 3), liveBrokers{1: 11, 2: 22, 3: 13}, "3 5 13 [2 3] [12 13]"},
		{"no other in-sync replica: nothing changes", st(1, 4, 1), all, ""},
		{"no leader: nothing to move", st(-1, 4, 1, 2), all, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, changed := awayState(tt.st, []int32{1, 2, 3}, tt.live)
			s := ""
			if changed {
				s = fmt.Sprint(got.Leader, got.LeaderEpoch, got.LeaderBrokerEpoch, got.ISR, got.ISRBrokerEpochs)
			}
			if s != tt.want {
				t.Fatalf("%+v: got %q, want %q", tt.st, s, tt.want)
			}
		})
	}
}
