package cluster

// Preferred-leader election. A replicated partition's first replica is
// its preferred leader: placement spreads first replicas evenly over the
// brokers, so leadership (and with it produce and fetch load) is even
// only while the preferred leaders lead. After a failover the leadership
// stays with the successor; the controller gives it back
//   - automatically, every rebalance period (WithLeaderRebalance, as
//     Kafka's auto.leader.rebalance.enable), for every partition whose
//     preferred leader is alive and in the ISR and that is not being
//     reassigned;
//   - on demand (ElectLeaders, the ElectLeaders API): a broker writes the
//     partitions to /admin/preferred_replica_election, the controller
//     elects them and deletes the node, and the broker reads the result
//     from the state nodes.
//
// A move is a state write like any other of the controller's: leader
// epoch plus one, fenced by the controller epoch. Unclean election (a
// live replica outside the ISR leads when no in-sync one is alive) may
// lose acknowledged records, so the controller does it by itself only for
// a topic whose unclean.leader.election.enable is true (controller.go).
// Asked for on demand it is done whatever the config says, as Kafka's
// ElectLeaders does (KIP-460): an operator who accepts the loss for one
// partition, once, need not turn the config on and remember to turn it
// off again.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"
)

// DefaultLeaderRebalance is how often the controller moves leaderships
// back to preferred leaders unless WithLeaderRebalance says otherwise
// (Kafka's leader.imbalance.check.interval.seconds).
const DefaultLeaderRebalance = 5 * time.Minute

// WithLeaderRebalance sets how often the controller elects preferred
// leaders by itself (JoinZooKeeper); 0 or less turns it off, leaving
// ElectLeaders.
func WithLeaderRebalance(every time.Duration) ZKOption {
	return func(o *zkOptions) { o.rebalance = &every }
}

const uncleanConfig = "unclean.leader.election.enable"

var (
	// ErrElectionNotNeeded: the preferred replica already leads.
	ErrElectionNotNeeded = errors.New("the preferred replica already leads")
	// ErrPreferredNotAvailable: the preferred replica is dead or not in
	// sync, so it cannot lead without losing records.
	ErrPreferredNotAvailable = errors.New("the preferred replica is not alive and in sync")
	// ErrEligibleNotAvailable: no live replica could lead.
	ErrEligibleNotAvailable = errors.New("no live replica can lead the partition")
	// ErrNotReplicated: the partition has one replica, so there is
	// nothing to elect or move.
	ErrNotReplicated = errors.New("the partition has one replica (the topic was created with replication factor 1)")
)

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

// ElectionNode is the content of /admin/preferred_replica_election:
// Kafka's format, plus the election type (1: unclean; 2: away from the
// current leader, StepDown).
type ElectionNode struct {
	Version    int              `json:"version"`
	Partitions []TopicPartition `json:"partitions"`
	Type       int8             `json:"election_type,omitempty"`
}

// DecodeElectionNode reads /admin/preferred_replica_election, refusing
// what no writer makes: an unknown version or election type (an unknown
// one read as preferred would run elections nobody asked for), an invalid
// topic name, a negative partition, a partition listed twice.
func DecodeElectionNode(data []byte) (ElectionNode, error) {
	var n ElectionNode
	if err := decodeNode("preferred replica election", data, &n); err != nil {
		return ElectionNode{}, err
	}
	if err := checkVersion("preferred replica election", n.Version); err != nil {
		return ElectionNode{}, err
	}
	if n.Type < 0 || n.Type > electionAway {
		return ElectionNode{}, fmt.Errorf("preferred replica election node: election_type %d is none of 0 (preferred), 1 (unclean) and 2 (away from the leader, stepdown.go)", n.Type)
	}
	seen := make(map[TopicPartition]bool, len(n.Partitions))
	for _, tp := range n.Partitions {
		if err := ValidateName("topic", tp.Topic); err != nil {
			return ElectionNode{}, fmt.Errorf("preferred replica election node: %w", err)
		}
		if tp.Partition < 0 {
			return ElectionNode{}, fmt.Errorf("preferred replica election node: %s: partition %d is negative", tp.Topic, tp.Partition)
		}
		if seen[tp] {
			return ElectionNode{}, fmt.Errorf("preferred replica election node: %s-%d is listed twice", tp.Topic, tp.Partition)
		}
		seen[tp] = true
	}
	return n, nil
}

// PreferredElection is the node through which brokers ask the controller
// for elections.
func (p ZKPaths) PreferredElection() string { return p.Root + "/admin/preferred_replica_election" }

// preferredState moves st's leadership to the preferred replica when it
// is alive (in the incarnation the ISR records), in sync and not leading
// yet.
func preferredState(st PartitionState, replicas []int32, live liveBrokers) (PartitionState, bool) {
	pref := replicas[0]
	e, alive := live[pref]
	if st.Leader == pref || !alive || !slices.Contains(st.ISR, pref) || st.restarted(pref, live) {
		return st, false
	}
	return st.lead(pref, e), true
}

// uncleanState lets the first live replica lead a partition that has no
// leader, with itself as the only in-sync replica.
func uncleanState(st PartitionState, replicas []int32, live liveBrokers) (PartitionState, bool) {
	if st.Leader >= 0 {
		return st, false
	}
	for _, id := range replicas {
		if e, alive := live[id]; alive {
			lone := st.withISR([]int32{id}, func(int32) int64 { return e })
			return lone.lead(id, e), true
		}
	}
	return st, false
}

// askedSet is the content of the election node, looked up by partition.
type askedSet struct {
	parts map[TopicPartition]bool
	typ   int8 // the node's election type
}

func (a askedSet) mode(tp TopicPartition) (electMode, bool) {
	if !a.parts[tp] {
		return electNone, false
	}
	switch a.typ {
	case 1:
		return electUnclean, true
	case electionAway:
		return electAway, true
	}
	return electPreferred, true
}

// askedElections reads (and watches) the election node; version -1 when
// there is none.
func (c *controller) askedElections() (askedSet, int32, error) {
	path := c.z.s.Paths.PreferredElection()
	data, version, ok, err := c.watch.Get(path)
	if err != nil || !ok {
		return askedSet{}, -1, err
	}
	n, err := DecodeElectionNode(data)
	if err != nil {
		// Deleted unread like a request that ran, so that the asking
		// broker stops waiting and the next request can be written.
		c.z.log.Warn("controller: ignoring unreadable election request", "node", path, "err", err)
		return askedSet{}, version, nil
	}
	a := askedSet{parts: map[TopicPartition]bool{}, typ: n.Type}
	for _, tp := range n.Partitions {
		a.parts[tp] = true
	}
	return a, version, nil
}

// electionsDone deletes the election node once its elections ran, which
// tells the asking broker to read the results.
func (c *controller) electionsDone(version int32) error {
	err := c.z.s.Conn.Delete(c.z.s.Paths.PreferredElection(), version)
	if errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrBadVersion) {
		return nil // a newer request: the watch brings us back
	}
	return err
}

// ElectLeaders asks the controller to elect the preferred leader (or,
// unclean, any live replica) of each partition, nil meaning every
// partition of every replicated topic, and waits for it. The result
// holds each partition's outcome: nil when its preferred replica (or a
// live one) leads now, else one of the errors above or ErrUnknownTopic.
func (z *ZooKeeper) ElectLeaders(ctx context.Context, unclean bool, parts []TopicPartition) (map[TopicPartition]error, error) {
	all := parts == nil
	if all {
		for _, t := range z.Topics() {
			if t.Replicated() {
				for p := range t.Partitions() {
					parts = append(parts, TopicPartition{t.Name, p})
				}
			}
		}
	}
	live := map[int32]bool{}
	for _, b := range z.Brokers() {
		live[b.ID] = true
	}
	out := make(map[TopicPartition]error, len(parts))
	var ask []TopicPartition
	for _, tp := range parts {
		if _, dup := out[tp]; dup {
			continue // a request may name a partition twice; the node may not
		}
		t, err := z.electable(tp)
		if err == nil {
			// A state this broker has not read yet is left to the
			// controller, which reads it; a dead leader leads nothing
			// (the controller may not have written that yet).
			st, known := t.StateOf(tp.Partition)
			leads := known && st.Leader >= 0 && live[st.Leader]
			if leads && (unclean || st.Leader == t.Replicas[tp.Partition][0]) {
				err = ErrElectionNotNeeded
			}
		}
		if out[tp] = err; err == nil {
			ask = append(ask, tp)
		}
	}
	if len(ask) == 0 {
		return out, nil
	}
	typ := int8(0)
	if unclean {
		typ = 1
	}
	data, _ := json.Marshal(ElectionNode{Version: nodeVersion, Partitions: ask, Type: typ})
	if err := z.awaitElection(ctx, data); err != nil {
		return nil, err
	}
	for _, tp := range ask {
		st, err := z.readState(tp)
		switch {
		case err != nil:
			out[tp] = err
		case !unclean && st.Leader != z.preferredOf(tp):
			out[tp] = ErrPreferredNotAvailable
		case unclean && st.Leader < 0:
			out[tp] = ErrEligibleNotAvailable
		}
	}
	return out, nil
}

// electable checks that tp is a partition of a replicated topic.
func (z *ZooKeeper) electable(tp TopicPartition) (Topic, error) {
	t, ok := z.Topic(tp.Topic)
	switch {
	case !ok || tp.Partition < 0 || tp.Partition >= t.Partitions():
		return t, fmt.Errorf("%s-%d: %w", tp.Topic, tp.Partition, ErrUnknownTopic)
	case !t.Replicated():
		return t, fmt.Errorf("%s-%d: %w", tp.Topic, tp.Partition, ErrNotReplicated)
	}
	return t, nil
}

func (z *ZooKeeper) preferredOf(tp TopicPartition) int32 {
	t, _ := z.Topic(tp.Topic)
	if rs := t.ReplicasOf(tp.Partition); len(rs) > 0 {
		return rs[0]
	}
	return -1
}

// readState reads a partition's state node from ZooKeeper, not the view.
func (z *ZooKeeper) readState(tp TopicPartition) (PartitionState, error) {
	data, _, err := z.s.Conn.Get(z.s.Paths.PartitionState(tp.Topic, tp.Partition))
	if err != nil {
		return PartitionState{}, fmt.Errorf("reading the state of %s-%d: %w", tp.Topic, tp.Partition, err)
	}
	st, err := DecodePartitionStateNode(data)
	if err != nil {
		return PartitionState{}, fmt.Errorf("%s-%d: %w", tp.Topic, tp.Partition, err)
	}
	return st, nil
}

// awaitElection writes the election node (waiting for an earlier
// request to finish first) and waits until the controller deleted it.
func (z *ZooKeeper) awaitElection(ctx context.Context, data []byte) error {
	path := z.s.Paths.PreferredElection()
	if err := z.s.EnsurePath(z.s.Paths.Root + "/admin"); err != nil {
		return err
	}
	created := false
	for {
		if !created {
			_, err := z.s.Conn.Create(path, data, 0, zk.WorldACL(zk.PermAll))
			switch {
			case err == nil:
				created = true
			case !errors.Is(err, zk.ErrNodeExists):
				return fmt.Errorf("asking the controller for elections: %w", err)
			}
		}
		exists, _, ch, err := z.s.Conn.ExistsW(path)
		if err != nil {
			return fmt.Errorf("waiting for the controller's elections: %w", err)
		}
		if !exists && created {
			return nil
		}
		if !exists {
			continue // the earlier request is done: write ours
		}
		select {
		case <-ch:
		case <-ctx.Done():
			if created {
				_ = z.s.Conn.Delete(path, -1)
			}
			return fmt.Errorf("the controller did not run the elections in time (is a controller elected?): %w", ctx.Err())
		}
	}
}
