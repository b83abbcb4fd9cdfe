package cluster

// Step-down: a leader that finds a damaged batch in its own log (its
// recovery, scrubber or a read quarantined it) must not serve the gap
// while another in-sync replica holds the batch intact. It asks the
// controller to move the leadership away from it (StepDown: election
// type 2 on /admin/preferred_replica_election, beside 0 preferred and 1
// unclean); the controller elects the first live in-sync replica in
// assignment order other than the current leader, in the next leader
// epoch, and takes the old leader out of the ISR (it lacks the batch until
// it has fetched it again, and rejoins once it has). With no other live
// in-sync replica nothing changes and StepDown says so: the leader then
// serves the gap rather than nothing.

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
)

// electionAway is the election type of a step-down request.
const electionAway = 2

// ErrNotLeading: StepDown was asked by a broker that does not lead the
// partition (any more).
var ErrNotLeading = errors.New("this broker does not lead the partition")

// awayState moves st's leadership to the first live in-sync replica other
// than its leader (alive in the incarnation the ISR records), which leaves
// the ISR; the others keep their recorded broker epochs.
func awayState(st PartitionState, replicas []int32, live liveBrokers) (PartitionState, bool) {
	if st.Leader < 0 {
		return st, false
	}
	for _, id := range replicas {
		e, alive := live[id]
		if id == st.Leader || !alive || !slices.Contains(st.ISR, id) || st.restarted(id, live) {
			continue
		}
		old := st.Leader
		isr := slices.DeleteFunc(slices.Clone(st.ISR), func(m int32) bool { return m == old })
		next := st.withISR(isr, func(m int32) int64 {
			if r := st.recordedEpoch(m); r != 0 {
				return r
			}
			return live[m]
		})
		return next.lead(id, e), true
	}
	return st, false
}

// StepDown asks the controller to move the leadership of topic's partition
// p away from this broker, which leads it, and waits for it. It returns
// ErrEligibleNotAvailable when no other live in-sync replica could lead
// (this broker still leads then), ErrNotLeading when this broker does not
// lead the partition.
func (z *ZooKeeper) StepDown(ctx context.Context, topic string, p int32) error {
	tp := TopicPartition{topic, p}
	t, err := z.electable(tp)
	if err != nil {
		return err
	}
	st, err := z.readState(tp)
	if err != nil {
		return err
	}
	if !st.LedBy(z.self.ID, z.BrokerEpoch()) {
		return ErrNotLeading
	}
	live, err := z.brokerEpochsOf(t.ReplicasOf(p))
	if err != nil {
		return err
	}
	if _, ok := awayState(st, t.ReplicasOf(p), live); !ok {
		return ErrEligibleNotAvailable
	}
	data, _ := json.Marshal(ElectionNode{Version: nodeVersion, Partitions: []TopicPartition{tp}, Type: electionAway})
	if err := z.awaitElection(ctx, data); err != nil {
		return err
	}
	if st, err = z.readState(tp); err != nil {
		return err
	}
	if st.LedBy(z.self.ID, z.BrokerEpoch()) {
		return ErrEligibleNotAvailable
	}
	return nil
}
