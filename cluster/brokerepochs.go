package cluster

// Broker epochs tell the incarnations of a broker apart. A broker's epoch
// is the czxid of its /brokers/ids/<id> registration node: ZooKeeper
// gives every node a larger one than any node created before it, so each
// restart, and each registration after a lost session, gives the broker a
// larger epoch, and nobody has to write one.
//
// A broker that restarted may have lost records it held before (a disk
// that lost its last writes, a damaged tail cut by recovery), including
// acknowledged ones. Told apart by id only, it could come back before its
// old registration expired and lead again in the same leader epoch, and
// the followers would truncate to what it kept. With epochs:
//   - the state node records the leader's broker epoch and each in-sync
//     member's (PartitionState.LeaderBrokerEpoch, ISRBrokerEpochs);
//   - the controller reads every live broker's epoch afresh each round,
//     and a member whose epoch differs from the recorded one restarted:
//     it leaves the ISR, and if it led, another in-sync replica leads in
//     a new leader epoch. Only when no other in-sync replica is alive does
//     a restarted one lead (the old leader first), alone in the ISR, in a
//     new leader epoch, with a warning (controller.go);
//   - a broker leads only while the state names it in its own broker
//     epoch (PartitionState.LedBy), so a restarted leader serves nothing,
//     and writes no ISR, before the controller has re-elected.

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/go-zookeeper/zk"
)

// liveBrokers maps each live broker's id to its broker epoch.
type liveBrokers map[int32]int64

// checkBrokerEpochs refuses broker epochs no writer makes (encodeState).
func checkBrokerEpochs(n PartitionState) error {
	switch {
	case n.LeaderBrokerEpoch < 0:
		return fmt.Errorf("leader_broker_epoch %d is negative", n.LeaderBrokerEpoch)
	case n.LeaderBrokerEpoch != 0 && n.Leader < 0:
		return fmt.Errorf("leader_broker_epoch %d for a partition without a leader", n.LeaderBrokerEpoch)
	case len(n.ISRBrokerEpochs) != 0 && len(n.ISRBrokerEpochs) != len(n.ISR):
		return fmt.Errorf("%d isr_broker_epochs for %d isr members", len(n.ISRBrokerEpochs), len(n.ISR))
	}
	for _, e := range n.ISRBrokerEpochs {
		if e < 0 {
			return fmt.Errorf("isr_broker_epochs: %d is negative", e)
		}
	}
	return nil
}

// LedBy reports whether the state names broker id, in broker epoch
// brokerEpoch, as its leader. A state written before broker epochs names
// a leader by id only.
func (s PartitionState) LedBy(id int32, brokerEpoch int64) bool {
	return s.Leader >= 0 && s.Leader == id && (s.LeaderBrokerEpoch == 0 || s.LeaderBrokerEpoch == brokerEpoch)
}

// recordedEpoch is the broker epoch the state records for id: the
// leader's, else its ISR entry's; 0 unknown.
func (s PartitionState) recordedEpoch(id int32) int64 {
	if id == s.Leader && s.LeaderBrokerEpoch != 0 {
		return s.LeaderBrokerEpoch
	}
	if i := slices.Index(s.ISR, id); i >= 0 && i < len(s.ISRBrokerEpochs) {
		return s.ISRBrokerEpochs[i]
	}
	return 0
}

// restarted reports whether id is alive in another incarnation than the
// one the state recorded.
func (s PartitionState) restarted(id int32, live liveBrokers) bool {
	e, ok := live[id]
	rec := s.recordedEpoch(id)
	return ok && rec != 0 && rec != e
}

// withISR returns s with isr as its in-sync replicas, each with the broker
// epoch epochOf gives it.
func (s PartitionState) withISR(isr []int32, epochOf func(int32) int64) PartitionState {
	s.ISR = slices.Clone(isr)
	s.ISRBrokerEpochs = make([]int64, len(isr))
	for i, id := range isr {
		s.ISRBrokerEpochs[i] = epochOf(id)
	}
	return s
}

// lead returns s led by id in broker epoch e, in the next leader epoch.
func (s PartitionState) lead(id int32, e int64) PartitionState {
	s.Leader, s.LeaderBrokerEpoch = id, e
	s.LeaderEpoch++
	return s
}

// BrokerEpoch is this broker's epoch: the czxid of the registration node
// it last created (0 before the first).
func (z *ZooKeeper) BrokerEpoch() int64 { return z.epoch.Load() }

// readBrokerEpochs reads the broker epoch of each broker in ids that is
// registered, from ZooKeeper rather than the watched view: a broker whose
// registration was replaced between two reads of the view (it restarted
// within its session timeout) looks unchanged there.
func (z *ZooKeeper) readBrokerEpochs(ids []string) (liveBrokers, error) {
	live := liveBrokers{}
	for _, id := range ids {
		n, err := strconv.Atoi(id)
		if err != nil || n < 0 {
			continue
		}
		ok, stat, err := z.s.Conn.Exists(z.s.Paths.BrokerIDs() + "/" + id)
		if err != nil {
			return nil, fmt.Errorf("reading the registration of broker %s: %w", id, err)
		}
		if ok {
			live[int32(n)] = stat.Czxid
		}
	}
	return live, nil
}

// brokerEpochsOf reads the broker epochs of the given brokers (a missing
// registration: absent from the result).
func (z *ZooKeeper) brokerEpochsOf(ids []int32) (liveBrokers, error) {
	names := make([]string, len(ids))
	for i, id := range ids {
		names[i] = strconv.Itoa(int(id))
	}
	return z.readBrokerEpochs(names)
}

// registrationEpoch reads the czxid of the registration node at p, which
// must be this session's.
func (s *ZKSession) registrationEpoch(p string) (int64, error) {
	ok, stat, err := s.Conn.Exists(p)
	if err != nil {
		return 0, err
	}
	if !ok || stat.EphemeralOwner != s.Conn.SessionID() {
		return 0, fmt.Errorf("%s: %w (deleted or replaced right after it was created)", p, zk.ErrNoNode)
	}
	return stat.Czxid, nil
}
