package cluster

// The controller's rule for one partition (nextState): which replica
// leads and who stays in the ISR, given the partition's state, its
// replicas and the live brokers with their epochs. A pure function, so
// TestControllerRules checks it case by case without ZooKeeper; the round
// that applies it is controller.go. Whether a replica outside the ISR may
// lead is unclean.leader.election.enable (uncleanAllowed).

import (
	"slices"
	"strings"
)

// nextState is the controller's rule for one partition (see the file
// comment), unclean saying whether a live replica outside the ISR may
// lead; changed false when st stays.
func nextState(st PartitionState, replicas []int32, live liveBrokers, unclean bool) (PartitionState, bool) {
	valid := func(id int32) bool {
		_, alive := live[id]
		return alive && slices.Contains(replicas, id) && !st.restarted(id, live)
	}
	// Dead, removed and restarted members leave the ISR; the others keep
	// (or, on a node written before broker epochs, get) their epochs.
	// Eligible leader replicas that restarted are no longer eligible
	// (elr.go).
	isr := slices.DeleteFunc(slices.Clone(st.ISR), func(id int32) bool { return !valid(id) })
	kept := st.withoutRestartedELR(live)
	next := kept.withISR(isr, func(id int32) int64 { return live[id] })
	if st.Leader >= 0 && valid(st.Leader) {
		next.LeaderBrokerEpoch = live[st.Leader]
		return next, !sameState(next, st)
	}
	for _, id := range replicas {
		if slices.Contains(isr, id) {
			return next.lead(id, live[id]), true
		}
	}
	// No valid in-sync replica is alive: an eligible replica holds every
	// acknowledged record, so it leads before a restarted one.
	if id, ok := next.eligibleLeader(replicas, live); ok {
		return next.leadFromELR(id, live), true
	}
	if _, alive := live[st.Leader]; st.Leader >= 0 && alive && !st.restarted(st.Leader, live) {
		// No successor: a leader that is no longer a replica keeps
		// leading until one of the replicas is in sync.
		return kept, !sameState(kept, st)
	}
	// Nor an eligible one: a restarted in-sync replica leads, the old
	// leader first, alone, since the others may hold less.
	for _, id := range append([]int32{st.Leader}, replicas...) {
		if slices.Contains(st.ISR, id) && slices.Contains(replicas, id) && st.restarted(id, live) {
			lone := kept.withISR([]int32{id}, func(int32) int64 { return live[id] })
			return lone.lead(id, live[id]), true
		}
	}
	if unclean {
		down := st
		down.Leader = -1
		if next, ok := uncleanState(down, replicas, live); ok {
			return next, true
		}
	}
	if st.Leader == -1 {
		return kept, !sameState(kept, st)
	}
	// The ISR stays as it was, with its epochs: its members are the
	// brokers that may lead again without losing acknowledged records.
	next = kept
	next.Leader, next.LeaderBrokerEpoch = -1, 0
	next.LeaderEpoch++
	return next, true
}

// sameState reports whether a and b would be written alike.
func sameState(a, b PartitionState) bool {
	return string(encodeState(a)) == string(encodeState(b))
}

// SetUncleanLeaderElection sets unclean.leader.election.enable for the
// topics that do not set it themselves (the broker's flag and dynamic
// configs decide it; the broker package checks the values). As in Kafka
// the controller's own value is the one that counts. Turning it on elects
// a leader for the partitions that have none at once rather than at the
// next broker change.
func (z *ZooKeeper) SetUncleanLeaderElection(on bool) {
	if z.unclean.Swap(on) != on {
		notify(z.reelect)
	}
}

// uncleanAllowed is t's unclean.leader.election.enable: its own config
// (true or false in any case, as Kafka reads booleans), else the default.
func (z *ZooKeeper) uncleanAllowed(t Topic) bool {
	if v, ok := t.Configs[uncleanConfig]; ok {
		return strings.EqualFold(strings.TrimSpace(v), "true")
	}
	return z.unclean.Load()
}
