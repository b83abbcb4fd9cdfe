package cluster

// Eligible leader replicas (as Kafka's KIP-966). With min.insync.replicas
// m, an acks=all record is acknowledged only while the ISR has at least m
// members, and the high watermark does not move while it has fewer
// (broker/replication/leader.go). So a member that the leader takes out of an ISR
// because it lags, leaving fewer than m, still holds every acknowledged
// record and everything under the high watermark: it becomes an eligible
// leader replica, recorded in the state node with its broker epoch.
//
//   - While the ISR is under m, the ELR grows by such removals; a member
//     that returns to the ISR leaves it; an ISR of m or more clears it.
//   - A member removed because it lost records (it fetches below the high
//     watermark) is not eligible, and leaves the ELR.
//   - The controller elects from the ISR first. When no in-sync replica is
//     alive in its recorded incarnation, an eligible replica that is leads,
//     alone in the ISR, before a restarted in-sync replica: a broker that
//     restarted may have lost the tail of its log (a disk that lost its
//     last writes), acknowledged records included, while the eligible
//     replica cannot have.
//   - An eligible replica that restarted is no longer eligible: the
//     controller drops it.
//
// Without this, a leader left alone in the ISR by lagging followers, killed
// and restarted with a lost tail, led again on what it kept, and the
// followers truncated to it (the Jepsen test found it under load).

import (
	"fmt"
	"slices"
)

// checkELR refuses an ELR no writer makes: listed twice, overlapping the
// ISR, or without a positive broker epoch for each member.
func checkELR(n PartitionState) error {
	if len(n.ELR) == 0 {
		if len(n.ELRBrokerEpochs) != 0 {
			return fmt.Errorf("%d elr_broker_epochs without an elr", len(n.ELRBrokerEpochs))
		}
		return nil
	}
	if err := checkBrokerList("elr", n.ELR); err != nil {
		return err
	}
	if len(n.ELRBrokerEpochs) != len(n.ELR) {
		return fmt.Errorf("%d elr_broker_epochs for %d elr members", len(n.ELRBrokerEpochs), len(n.ELR))
	}
	for i, id := range n.ELR {
		if slices.Contains(n.ISR, id) {
			return fmt.Errorf("broker %d is both in the isr and in the elr", id)
		}
		if n.ELRBrokerEpochs[i] <= 0 {
			return fmt.Errorf("elr_broker_epochs: %d is not a broker epoch", n.ELRBrokerEpochs[i])
		}
	}
	return nil
}

// withLeaderISR is the leader's ISR change: s with isr as its in-sync
// replicas (epochOf giving each its broker epoch) and its ELR kept by the
// rules above for min.insync.replicas minISR. Members taken out become
// eligible when the new ISR is under minISR and lostRecords is false.
func (s PartitionState) withLeaderISR(isr []int32, minISR int, lostRecords bool, epochOf func(int32) int64) PartitionState {
	next := s.withISR(isr, epochOf)
	next.ELR, next.ELRBrokerEpochs = nil, nil
	if len(isr) >= minISR {
		return next
	}
	add := func(id int32, e int64) {
		if e > 0 && !slices.Contains(isr, id) && !slices.Contains(next.ELR, id) {
			next.ELR = append(next.ELR, id)
			next.ELRBrokerEpochs = append(next.ELRBrokerEpochs, e)
		}
	}
	removed := func(id int32) bool { return !slices.Contains(isr, id) && slices.Contains(s.ISR, id) }
	for i, id := range s.ELR {
		if !(lostRecords && removed(id)) {
			add(id, s.ELRBrokerEpochs[i])
		}
	}
	if !lostRecords {
		for _, id := range s.ISR {
			if removed(id) {
				add(id, s.recordedEpoch(id))
			}
		}
	}
	return next
}

// withoutRestartedELR drops the eligible replicas that are alive in
// another incarnation than the one recorded: they may have lost records.
func (s PartitionState) withoutRestartedELR(live liveBrokers) PartitionState {
	var elr []int32
	var epochs []int64
	for i, id := range s.ELR {
		if e, ok := live[id]; ok && e != s.ELRBrokerEpochs[i] {
			continue
		}
		elr = append(elr, id)
		epochs = append(epochs, s.ELRBrokerEpochs[i])
	}
	s.ELR, s.ELRBrokerEpochs = elr, epochs
	return s
}

// eligibleLeader is the first replica, in assignment order, that is an
// eligible leader replica alive in its recorded incarnation.
func (s PartitionState) eligibleLeader(replicas []int32, live liveBrokers) (int32, bool) {
	for _, id := range replicas {
		i := slices.Index(s.ELR, id)
		if i < 0 {
			continue
		}
		if e, ok := live[id]; ok && e == s.ELRBrokerEpochs[i] {
			return id, true
		}
	}
	return -1, false
}

// leadFromELR is s led by the eligible replica id, alone in the ISR, in
// the next leader epoch; it leaves the ELR.
func (s PartitionState) leadFromELR(id int32, live liveBrokers) PartitionState {
	i := slices.Index(s.ELR, id)
	s.ELR = slices.Delete(slices.Clone(s.ELR), i, i+1)
	s.ELRBrokerEpochs = slices.Delete(slices.Clone(s.ELRBrokerEpochs), i, i+1)
	lone := s.withISR([]int32{id}, func(int32) int64 { return live[id] })
	return lone.lead(id, live[id])
}
