package cluster

// The replicated part of the cluster record: which brokers store each
// partition (TopicNode.Replicas), and, for a partition with more than one
// replica, its state node (leader, leader epoch, in-sync replicas), which
// the controller (controller.go) and the partition's leader keep current.
//
// A partition with one replica has no state node and no election: its
// leader is its only replica, as before replication existed.

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
)

// PartitionState is the content of a replicated partition's state node,
// /brokers/topics/<t>/partitions/<p>/state. Leader is -1 while no in-sync
// replica is alive; ISR then keeps the last in-sync replicas, so the
// partition's leadership returns to one of them and to no other
// (unclean election is off). LeaderEpoch grows by one at every leader
// change; ControllerEpoch is the epoch of the controller that wrote the
// node last (the leader's own ISR changes keep it).
//
// LeaderBrokerEpoch and ISRBrokerEpochs tell incarnations of a broker
// apart (brokerepochs.go): the leader's broker epoch when it was given
// this leader epoch, and each ISR member's (in ISR order) when it was
// found in sync; 0 is unknown (a node written before broker epochs, whose
// members are trusted as before). Both are absent from such nodes.
//
// ELR and ELRBrokerEpochs are the eligible leader replicas (elr.go):
// members that left an ISR under min.insync.replicas while holding every
// acknowledged record, each with its broker epoch; absent when empty.
type PartitionState struct {
	Version           int     `json:"version"`
	Leader            int32   `json:"leader"`
	LeaderEpoch       int32   `json:"leader_epoch"`
	ISR               []int32 `json:"isr"`
	ControllerEpoch   int32   `json:"controller_epoch"`
	LeaderBrokerEpoch int64   `json:"leader_broker_epoch,omitempty"`
	ISRBrokerEpochs   []int64 `json:"isr_broker_epochs,omitempty"`
	ELR               []int32 `json:"elr,omitempty"`
	ELRBrokerEpochs   []int64 `json:"elr_broker_epochs,omitempty"`
}

// ZooKeeper paths of the replication nodes.

// PartitionState is the state node of a replicated topic's partition p.
func (p ZKPaths) PartitionState(topic string, partition int32) string {
	return p.Topic(topic) + "/partitions/" + strconv.Itoa(int(partition)) + "/state"
}

// Controller is the ephemeral node of the elected controller.
func (p ZKPaths) Controller() string { return p.Root + "/controller" }

// ControllerEpoch is the persistent count of controller elections.
func (p ZKPaths) ControllerEpoch() string { return p.Root + "/controller_epoch" }

// ControllerNode is the content of /controller.
type ControllerNode struct {
	Version   int   `json:"version"`
	BrokerID  int32 `json:"brokerid"`
	Timestamp int64 `json:"timestamp,string"`
}

// DecodePartitionStateNode reads a state node, refusing what no writer
// makes: an unknown version, an empty, duplicated or negative ISR, a
// leader outside the ISR, negative epochs, broker epochs for a partition
// without a leader or not one per ISR member.
func DecodePartitionStateNode(data []byte) (PartitionState, error) {
	var n PartitionState
	if err := decodeNode("partition state", data, &n); err != nil {
		return PartitionState{}, err
	}
	switch {
	case n.Version != nodeVersion:
		return PartitionState{}, fmt.Errorf("partition state node: version %d is not one this process understands (%d)", n.Version, nodeVersion)
	case n.LeaderEpoch < 0 || n.ControllerEpoch < 0:
		return PartitionState{}, fmt.Errorf("partition state node: negative epoch (leader_epoch %d, controller_epoch %d)", n.LeaderEpoch, n.ControllerEpoch)
	case n.Leader < -1:
		return PartitionState{}, fmt.Errorf("partition state node: leader %d is not a broker id (or -1 for none)", n.Leader)
	}
	if err := checkBrokerList("isr", n.ISR); err != nil {
		return PartitionState{}, fmt.Errorf("partition state node: %w", err)
	}
	if n.Leader >= 0 && !slices.Contains(n.ISR, n.Leader) {
		return PartitionState{}, fmt.Errorf("partition state node: leader %d is not in the isr %v", n.Leader, n.ISR)
	}
	if err := checkBrokerEpochs(n); err != nil {
		return PartitionState{}, fmt.Errorf("partition state node: %w", err)
	}
	if err := checkELR(n); err != nil {
		return PartitionState{}, fmt.Errorf("partition state node: %w", err)
	}
	if len(n.ISRBrokerEpochs) == 0 {
		n.ISRBrokerEpochs = nil // written as absent
	}
	if len(n.ELR) == 0 {
		n.ELR, n.ELRBrokerEpochs = nil, nil
	}
	return n, nil
}

// DecodeControllerNode reads /controller, refusing a version other than
// the one brokers write and a negative broker id (which would read as
// "no controller").
func DecodeControllerNode(data []byte) (ControllerNode, error) {
	var n ControllerNode
	if err := decodeNode("controller", data, &n); err != nil {
		return ControllerNode{}, err
	}
	if n.Version != nodeVersion || n.BrokerID < 0 {
		return ControllerNode{}, fmt.Errorf("controller node: version %d, broker id %d: not a node a broker writes", n.Version, n.BrokerID)
	}
	return n, nil
}

// checkReplicas checks a topic node's replica lists: one per partition,
// no broker twice, the preferred leader first. Lengths may differ: a
// reassignment (reassign.go) changes one partition's replicas.
func checkReplicas(leaders []int32, replicas [][]int32) error {
	if len(replicas) != len(leaders) {
		return fmt.Errorf("%d replica lists for %d partitions", len(replicas), len(leaders))
	}
	for p, rs := range replicas {
		if err := checkBrokerList("replicas", rs); err != nil {
			return fmt.Errorf("partition %d: %w", p, err)
		}
		if rs[0] != leaders[p] {
			return fmt.Errorf("partition %d: leader %d is not its first replica %d", p, leaders[p], rs[0])
		}
	}
	return nil
}

// checkBrokerList refuses an empty list, a negative id and an id listed
// twice. It takes time linear in the list, because a node of up to
// MaxNodeSize holds some 150,000 ids and every broker decodes it: looking
// each id up in the ones before it took seconds of every broker's CPU per
// write of such a node.
func checkBrokerList(what string, ids []int32) error {
	if len(ids) == 0 {
		return fmt.Errorf("%s is empty", what)
	}
	seen := make(map[int32]struct{}, len(ids))
	for _, id := range ids {
		if id < 0 {
			return fmt.Errorf("%s: broker id %d is negative", what, id)
		}
		if _, dup := seen[id]; dup {
			return fmt.Errorf("%s: broker %d is listed twice", what, id)
		}
		seen[id] = struct{}{}
	}
	return nil
}

// ErrReplicationFactor is returned when a topic asks for more replicas
// than there are live brokers.
var ErrReplicationFactor = errors.New("replication factor larger than the number of live brokers")

// SpreadReplicas assigns rf replicas to each partition: the leaders as
// Spread places them, and the followers on the next brokers by id, so
// every broker leads and follows about as many partitions as the others.
// When brokers name their racks, replicas go to different racks first
// (racks.go).
func SpreadReplicas(name string, partitions int32, rf int, brokers []Broker) ([][]int32, error) {
	if rf < 1 {
		return nil, fmt.Errorf("replication factor %d: must be at least 1", rf)
	}
	if rf > len(brokers) {
		return nil, fmt.Errorf("%w: %d replicas, %d brokers alive", ErrReplicationFactor, rf, len(brokers))
	}
	if hasRacks(brokers) {
		return spreadOverRacks(name, partitions, rf, brokers), nil
	}
	leaders, err := Spread(name, partitions, brokers)
	if err != nil {
		return nil, err
	}
	ids := make([]int32, len(brokers))
	for i, b := range brokers {
		ids[i] = b.ID
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	replicas := make([][]int32, partitions)
	for p, leader := range leaders {
		at := slices.Index(ids, leader)
		for r := range rf {
			replicas[p] = append(replicas[p], ids[(at+r)%len(ids)])
		}
	}
	return replicas, nil
}

// Replicated reports whether t's partitions have more than one replica.
func (t Topic) Replicated() bool { return len(t.Replicas) > 0 && len(t.Replicas[0]) > 1 }

// ReplicasOf lists the brokers that store partition p: its one broker for
// a topic without replicas.
func (t Topic) ReplicasOf(p int32) []int32 {
	if int(p) < len(t.Replicas) {
		return t.Replicas[p]
	}
	if int(p) < len(t.Leaders) {
		return []int32{t.Leaders[p]}
	}
	return nil
}

// StateOf returns partition p's state: from its state node for a
// replicated topic (ok false while none was read), else the one replica
// as leader and ISR.
func (t Topic) StateOf(p int32) (PartitionState, bool) {
	if !t.Replicated() {
		if int(p) >= len(t.Leaders) {
			return PartitionState{}, false
		}
		return PartitionState{Version: nodeVersion, Leader: t.Leaders[p], ISR: []int32{t.Leaders[p]}}, true
	}
	if int(p) >= len(t.States) || t.States[p].Version == 0 {
		return PartitionState{}, false
	}
	return t.States[p], true
}

// encodeState is the one way a state node is written: a partition
// without a leader has no leader broker epoch, and broker epochs that are
// all unknown are left out.
func encodeState(s PartitionState) []byte {
	s.Version = nodeVersion
	if s.Leader < 0 {
		s.LeaderBrokerEpoch = 0
	}
	if len(s.ISRBrokerEpochs) != len(s.ISR) || !slices.ContainsFunc(s.ISRBrokerEpochs, func(e int64) bool { return e != 0 }) {
		s.ISRBrokerEpochs = nil
	}
	if len(s.ELR) == 0 {
		s.ELR, s.ELRBrokerEpochs = nil, nil
	}
	data, _ := json.Marshal(s)
	return data
}
