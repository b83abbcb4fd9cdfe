package cluster

// Partition reassignment: moving a replicated partition to another set
// of brokers while it keeps serving.
//
//  1. AlterReassignment writes the topic node (version-checked): the
//     partition's replicas become the target followed by the replicas
//     being removed, and adding_replicas / removing_replicas record the
//     difference. Every broker sees the new replica list: the added
//     brokers start fetching from the leader, which takes them into the
//     ISR once they have caught up, as any follower.
//  2. The controller (reassignStep) waits until every target replica is
//     in the ISR. If the leader is to be removed, it elects the first
//     in-sync target replica (leader epoch plus one).
//  3. It then writes, in one multi fenced by the controller epoch, the
//     topic node with the target replicas and without the partition's
//     adding/removing entries, and the state node with the removed
//     replicas out of the ISR. The removed brokers stop fetching.
//
// Records move by replication, so producers and consumers go on
// throughout; acks=all keeps counting the ISR, which holds the target
// replicas only once they have every acknowledged record. Cancelling
// (AlterReassignment with no replicas) restores the original replicas;
// the controller moves the leadership back if an added replica led.
// A removed broker then deletes its copy of the partition, once
// AssignedReplicas, read from ZooKeeper itself, confirms it is no longer
// a replica (broker/replication/stray.go).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/go-zookeeper/zk"
)

// Reassignment is a partition's move under way: Replicas is the target
// followed by Removing.
type Reassignment struct {
	Adding, Removing []int32
}

var (
	// ErrNoReassignment: cancelling a partition that is not moving.
	ErrNoReassignment = errors.New("no reassignment in progress")
	// ErrInvalidReplicas: a target replica list Tributary cannot use.
	ErrInvalidReplicas = errors.New("invalid replica assignment")
)

// reassignments reads the node's adding/removing fields, which
// checkReassignments has found well formed.
func (n TopicNode) reassignments() map[int32]Reassignment {
	if len(n.AddingReplicas) == 0 && len(n.RemovingReplicas) == 0 {
		return nil
	}
	out := map[int32]Reassignment{}
	for _, m := range []map[string][]int32{n.AddingReplicas, n.RemovingReplicas} {
		for k := range m {
			p, _ := strconv.Atoi(k)
			out[int32(p)] = Reassignment{Adding: n.AddingReplicas[k], Removing: n.RemovingReplicas[k]}
		}
	}
	return out
}

// checkReassignments refuses adding/removing entries the controller could
// never carry out, which only a hand edit or a foreign writer makes: a
// partition spelt otherwise than in decimal ("00" and "0" would both name
// partition 0, and which one counts would depend on map order), a
// partition the topic lacks, a negative or repeated id, an added broker
// that is not a replica, a removed broker that is not a replica or is
// also being added, and a move that would leave no replica. The
// controller would wait forever for such a move to complete; refused, the
// node is reported and left alone.
func checkReassignments(n TopicNode) error {
	for _, f := range []struct {
		name string
		m    map[string][]int32
	}{{"adding_replicas", n.AddingReplicas}, {"removing_replicas", n.RemovingReplicas}} {
		for k, ids := range f.m {
			p, err := strconv.Atoi(k)
			if err != nil || strconv.Itoa(p) != k {
				return fmt.Errorf("%s: partition key %q is not a partition number in decimal", f.name, k)
			}
			if p < 0 || p >= len(n.Leaders) {
				return fmt.Errorf("%s: partition %d: the topic has %d partitions", f.name, p, len(n.Leaders))
			}
			if len(ids) == 0 {
				continue
			}
			if err := checkBrokerList(f.name, ids); err != nil {
				return fmt.Errorf("partition %d: %w", p, err)
			}
			replicas := []int32{n.Leaders[p]}
			if n.Replicas != nil {
				replicas = n.Replicas[p]
			}
			for _, id := range ids {
				if !slices.Contains(replicas, id) {
					return fmt.Errorf("partition %d: %s: broker %d is not one of its replicas %v", p, f.name, id, replicas)
				}
			}
			if f.name == "removing_replicas" {
				if id, both := firstCommon(ids, n.AddingReplicas[k]); both {
					return fmt.Errorf("partition %d: broker %d is both being added and removed", p, id)
				}
				if len(ids) >= len(replicas) {
					return fmt.Errorf("partition %d: removing_replicas %v removes every replica", p, ids)
				}
			}
		}
	}
	return nil
}

// firstCommon returns an id listed in both a and b.
func firstCommon(a, b []int32) (int32, bool) {
	for _, id := range a {
		if slices.Contains(b, id) {
			return id, true
		}
	}
	return 0, false
}

// PartitionReassignment is one partition's move as ListReassignments
// reports it.
type PartitionReassignment struct {
	TopicPartition
	Replicas []int32
	Reassignment
}

// Reassignments lists the moves under way, by topic and partition.
func (z *ZooKeeper) Reassignments() []PartitionReassignment {
	var out []PartitionReassignment
	for _, t := range z.Topics() {
		for p, r := range t.Reassigning {
			out = append(out, PartitionReassignment{TopicPartition{t.Name, p}, slices.Clone(t.ReplicasOf(p)), r})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

// AlterReassignment starts moving a replicated partition to target (the
// first replica becomes its preferred leader), or with target nil
// cancels its move. A new target replaces a move under way, counted from
// the replicas before it. Every target broker must be alive, and a
// partition keeps at least two replicas.
func (z *ZooKeeper) AlterReassignment(ctx context.Context, topic string, partition int32, target []int32) error {
	if target != nil {
		if err := z.checkTarget(target); err != nil {
			return fmt.Errorf("%s-%d: %w", topic, partition, err)
		}
	}
	path := z.s.Paths.Topic(topic)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		data, stat, err := z.s.Conn.Get(path)
		if errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("%s-%d: %w", topic, partition, ErrUnknownTopic)
		}
		if err != nil {
			return fmt.Errorf("reading topic %s: %w", topic, err)
		}
		n, err := DecodeTopicNode(data)
		if err != nil {
			return fmt.Errorf("topic %s: %w", topic, err)
		}
		if partition < 0 || int(partition) >= len(n.Leaders) {
			return fmt.Errorf("%s-%d: %w", topic, partition, ErrUnknownTopic)
		}
		if len(n.Replicas) == 0 || len(n.Replicas[partition]) < 2 {
			return fmt.Errorf("%s-%d: %w", topic, partition, ErrNotReplicated)
		}
		key := strconv.Itoa(int(partition))
		current := n.Replicas[partition]
		adding := n.AddingReplicas[key]
		original := slices.DeleteFunc(slices.Clone(current), func(id int32) bool { return slices.Contains(adding, id) })
		moving := len(adding) > 0 || len(n.RemovingReplicas[key]) > 0
		if target == nil && !moving {
			return fmt.Errorf("%s-%d: %w", topic, partition, ErrNoReassignment)
		}
		delete(n.AddingReplicas, key)
		delete(n.RemovingReplicas, key)
		replicas := original
		if target != nil {
			add := slices.DeleteFunc(slices.Clone(target), func(id int32) bool { return slices.Contains(original, id) })
			remove := slices.DeleteFunc(slices.Clone(original), func(id int32) bool { return slices.Contains(target, id) })
			replicas = append(slices.Clone(target), remove...)
			if len(add) > 0 || len(remove) > 0 {
				if n.AddingReplicas == nil {
					n.AddingReplicas = map[string][]int32{}
				}
				if n.RemovingReplicas == nil {
					n.RemovingReplicas = map[string][]int32{}
				}
				n.AddingReplicas[key], n.RemovingReplicas[key] = add, remove
			}
		}
		n.Replicas[partition], n.Leaders[partition] = replicas, replicas[0]
		data, _ = json.Marshal(n)
		_, err = z.s.Conn.Set(path, data, stat.Version)
		if errors.Is(err, zk.ErrBadVersion) {
			continue
		}
		if err != nil {
			return fmt.Errorf("writing topic %s: %w", topic, err)
		}
		z.log.Info("partition reassignment written", "topic", topic, "partition", partition, "target", target, "replicas", replicas)
		if err := z.refresh(); err != nil {
			z.log.Warn("reassignment written but the local view is not refreshed yet", "topic", topic, "err", err)
		}
		return nil
	}
}

func (z *ZooKeeper) checkTarget(target []int32) error {
	if len(target) < 2 {
		return fmt.Errorf("%w: %v: a replicated partition keeps at least two replicas", ErrInvalidReplicas, target)
	}
	if err := checkBrokerList("replicas", target); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidReplicas, err)
	}
	live := z.Brokers()
	for _, id := range target {
		if !slices.ContainsFunc(live, func(b Broker) bool { return b.ID == id }) {
			return fmt.Errorf("%w: broker %d is not alive", ErrInvalidReplicas, id)
		}
	}
	return nil
}

// reassignStep carries partition p of t one step further (see the file
// comment); it does nothing until the target replicas are in sync.
func (c *controller) reassignStep(t Topic, p int32, live liveBrokers) error {
	z := c.z
	r := t.Reassigning[p]
	target := slices.DeleteFunc(slices.Clone(t.ReplicasOf(p)), func(id int32) bool { return slices.Contains(r.Removing, id) })
	statePath := z.s.Paths.PartitionState(t.Name, p)
	data, stateVersion, ok, err := c.watch.Get(statePath)
	if err != nil || !ok {
		return err
	}
	st, err := DecodePartitionStateNode(data)
	if err != nil {
		return nil // electPartition logged it
	}
	for _, id := range target {
		if !slices.Contains(st.ISR, id) {
			return nil // not caught up yet: the leader's ISR write brings us back
		}
	}
	if !slices.Contains(target, st.Leader) {
		next := st
		for _, id := range target {
			if e, alive := live[id]; alive && !st.restarted(id, live) {
				next = st.lead(id, e)
				break
			}
		}
		if next.Leader == st.Leader {
			return nil
		}
		if err := c.write(&zk.SetDataRequest{Path: statePath, Data: encodeState(c.stamp(next)), Version: stateVersion}); err != nil || !c.active {
			return err
		}
		z.log.Info("reassignment moved the leadership", "topic", t.Name, "partition", p, "leader", next.Leader, "leader_epoch", next.LeaderEpoch)
		return nil
	}
	topicPath := z.s.Paths.Topic(t.Name)
	data, stat, err := z.s.Conn.Get(topicPath)
	if err != nil {
		return err
	}
	n, err := DecodeTopicNode(data)
	if err != nil {
		return fmt.Errorf("topic %s: %w", t.Name, err)
	}
	key := strconv.Itoa(int(p))
	if int(p) >= len(n.Replicas) || !slices.Equal(n.Replicas[p], t.ReplicasOf(p)) || !slices.Equal(n.RemovingReplicas[key], r.Removing) {
		return nil // changed meanwhile: the watch brings the new one
	}
	n.Replicas[p], n.Leaders[p] = target, target[0]
	delete(n.AddingReplicas, key)
	delete(n.RemovingReplicas, key)
	topicData, _ := json.Marshal(n)
	next := st.withISR(slices.DeleteFunc(slices.Clone(st.ISR), func(id int32) bool { return !slices.Contains(target, id) }), st.recordedEpoch)
	if err := c.write(
		&zk.SetDataRequest{Path: topicPath, Data: topicData, Version: stat.Version},
		&zk.SetDataRequest{Path: statePath, Data: encodeState(c.stamp(next)), Version: stateVersion}); err != nil || !c.active {
		return err
	}
	z.log.Info("partition reassignment completed", "topic", t.Name, "partition", p, "replicas", target, "isr", next.ISR)
	return nil
}

// ErrNoAssignment: a partition whose topic node holds no explicit,
// settled replica list to decide from.
var ErrNoAssignment = errors.New("no settled replica assignment")

// AssignedReplicas reads partition p's replicas from its topic node in
// ZooKeeper, not from the view, for decisions that must not rest on a
// stale or partial view: a broker deletes its copy of a partition only
// when this names replicas without it. Any doubt is an error, never an
// empty list: the node unreadable (connection trouble, ACLs), missing
// (ErrUnknownTopic), not decodable, without replicas for p, or p being
// moved (ErrNoAssignment).
func (z *ZooKeeper) AssignedReplicas(topic string, p int32) ([]int32, error) {
	data, _, err := z.s.Conn.Get(z.s.Paths.Topic(topic))
	if errors.Is(err, zk.ErrNoNode) {
		return nil, fmt.Errorf("%s-%d: %w", topic, p, ErrUnknownTopic)
	}
	if err != nil {
		return nil, fmt.Errorf("reading topic %s: %w", topic, err)
	}
	n, err := DecodeTopicNode(data)
	if err != nil {
		return nil, fmt.Errorf("topic %s: %w", topic, err)
	}
	key := strconv.Itoa(int(p))
	switch {
	case p < 0 || int(p) >= len(n.Replicas) || len(n.Replicas[p]) == 0:
		return nil, fmt.Errorf("%s-%d: %w: the topic node lists no replicas for it", topic, p, ErrNoAssignment)
	case len(n.AddingReplicas[key]) > 0 || len(n.RemovingReplicas[key]) > 0:
		return nil, fmt.Errorf("%s-%d: %w: it is being reassigned", topic, p, ErrNoAssignment)
	}
	return slices.Clone(n.Replicas[p]), nil
}

// TopicDeleted reports whether topic's node is gone from ZooKeeper, read
// now rather than from the view: a broker removes its copy of a topic
// missing from its view only when this confirms the topic was deleted,
// not merely left out of the view (a node that could not be decoded).
func (z *ZooKeeper) TopicDeleted(topic string) (bool, error) {
	ok, _, err := z.s.Conn.Exists(z.s.Paths.Topic(topic))
	if err != nil {
		return false, fmt.Errorf("reading topic %s: %w", topic, err)
	}
	return !ok, nil
}
