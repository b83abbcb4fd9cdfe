package cluster

import (
	"fmt"
	"testing"
)

// The eligible leader replicas' rules (elr.go). Broker n runs in broker
// epoch 100+n; restarted, in 200+n.
func TestELRRules(t *testing.T) {
	st := func(leader int32, isr []int32, elr ...int32) PartitionState {
		s := PartitionState{Leader: leader, LeaderEpoch: 3}.withISR(isr, func(id int32) int64 { return 100 + int64(id) })
		if leader >= 0 {
			s.LeaderBrokerEpoch = 100 + int64(leader)
		}
		for _, id := range elr {
			s.ELR = append(s.ELR, id)
			s.ELRBrokerEpochs = append(s.ELRBrokerEpochs, 100+int64(id))
		}
		return s
	}
	show := func(s PartitionState) string {
		return fmt.Sprintf("{%d %d %v %v %v}", s.Leader, s.LeaderEpoch, s.ISR, s.ELR, s.ELRBrokerEpochs)
	}
	epochs := func(id int32) int64 { return 100 + int64(id) }

	t.Run("leader's isr changes", func(t *testing.T) {
		for _, tt := range []struct {
			name   string
			st     PartitionState
			isr    []int32
			minISR int
			lost   bool
			want   string
		}{
			{"a lagging member leaves, the isr stays at min.insync.replicas", st(1, []int32{1, 2, 3}), []int32{1, 2}, 2, false, "{1 3 [1 2] [] []}"},
			{"a lagging member leaves the isr under min.insync.replicas: eligible", st(1, []int32{1, 2}), []int32{1}, 2, false, "{1 3 [1] [2] [102]}"},
			{"two leave at once under min.insync.replicas: both eligible", st(1, []int32{1, 2, 3}), []int32{1}, 2, false, "{1 3 [1] [2 3] [102 103]}"},
			{"the elr grows while the isr stays under", st(1, []int32{1, 2}, 3), []int32{1}, 3, false, "{1 3 [1] [3 2] [103 102]}"},
			{"a member that lost records is not eligible", st(1, []int32{1, 2}), []int32{1}, 2, true, "{1 3 [1] [] []}"},
			{"one that lost records leaves, the others stay eligible", st(1, []int32{1, 2}, 3), []int32{1}, 3, true, "{1 3 [1] [3] [103]}"},
			{"an eligible member rejoins: it leaves the elr", st(1, []int32{1}, 2, 3), []int32{1, 2}, 3, false, "{1 3 [1 2] [3] [103]}"},
			{"the isr reaches min.insync.replicas: the elr is cleared", st(1, []int32{1}, 2, 3), []int32{1, 3}, 2, false, "{1 3 [1 3] [] []}"},
			{"a member without a recorded broker epoch is not eligible", PartitionState{Leader: 1, ISR: []int32{1, 2}, LeaderEpoch: 3}, []int32{1}, 2, false, "{1 3 [1] [] []}"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				got := tt.st.withLeaderISR(tt.isr, tt.minISR, tt.lost, epochs)
				if s := show(got); s != tt.want {
					t.Fatalf("%s -> isr %v (min %d, lost %v): got %s, want %s", show(tt.st), tt.isr, tt.minISR, tt.lost, s, tt.want)
				}
				if _, err := DecodePartitionStateNode(encodeState(got)); err != nil {
					t.Fatalf("wrote a node no reader takes: %v", err)
				}
			})
		}
	})

	t.Run("controller", func(t *testing.T) {
		live := func(restarted []int32, dead ...int32) liveBrokers {
			m := liveBrokers{1: 101, 2: 102, 3: 103}
			for _, id := range restarted {
				m[id] = 200 + int64(id)
			}
			for _, id := range dead {
				delete(m, id)
			}
			return m
		}
		for _, tt := range []struct {
			name     string
			st       PartitionState
			replicas []int32
			live     liveBrokers
			want     string // "" for no change
		}{
			{"lone leader restarted: the eligible replica leads, not it", st(1, []int32{1}, 2), []int32{1, 2, 3}, live([]int32{1}), "{2 4 [2] [] []}"},
			{"lone leader dead: the eligible replica leads", st(1, []int32{1}, 2), []int32{1, 2, 3}, live(nil, 1), "{2 4 [2] [] []}"},
			{"eligible replicas in assignment order", st(1, []int32{1}, 2, 3), []int32{3, 2, 1}, live([]int32{1}), "{3 4 [3] [2] [102]}"},
			{"a restarted eligible replica is not: the restarted leader leads alone", st(1, []int32{1}, 2), []int32{1, 2, 3}, live([]int32{1, 2}), "{1 4 [1] [] []}"},
			{"a dead eligible replica waits; the restarted leader leads alone", st(1, []int32{1}, 2), []int32{1, 2, 3}, live([]int32{1}, 2), "{1 4 [1] [2] [102]}"},
			{"a valid leader keeps leading; a restarted eligible replica is dropped", st(1, []int32{1}, 2), []int32{1, 2, 3}, live([]int32{2}), "{1 3 [1] [] []}"},
			{"a valid leader with a valid elr: no change", st(1, []int32{1}, 2), []int32{1, 2, 3}, live(nil), ""},
			{"an in-sync replica before an eligible one", st(1, []int32{1, 3}, 2), []int32{1, 2, 3}, live([]int32{1}), "{3 4 [3] [2] [102]}"},
			{"offline: an eligible replica returns first", st(-1, []int32{1}, 2), []int32{1, 2, 3}, live(nil, 1), "{2 4 [2] [] []}"},
			{"an eligible replica that is no longer a replica does not lead", st(1, []int32{1}, 2), []int32{1, 3}, live([]int32{1}), "{1 4 [1] [2] [102]}"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				got, changed := nextState(tt.st, tt.replicas, tt.live, false)
				s := ""
				if changed {
					s = show(got)
				}
				if s != tt.want {
					t.Fatalf("%s over replicas %v, live %v: got %q, want %q", show(tt.st), tt.replicas, tt.live, s, tt.want)
				}
				if changed {
					if _, err := DecodePartitionStateNode(encodeState(got)); err != nil {
						t.Fatalf("wrote a node no reader takes: %v", err)
					}
				}
			})
		}
	})
}
