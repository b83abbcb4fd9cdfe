package cluster

// Replicated topics in ZooKeeper: creating one with its state nodes and
// reading the state nodes into the view (the leader's ISR changes are
// isrbatch.go).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/go-zookeeper/zk"
)

// ErrNotLeader is returned to a broker that changes a partition's ISR
// after it stopped leading it (the controller moved the leadership, so
// the state node names another leader or a newer epoch).
var ErrNotLeader = errors.New("this broker no longer leads the partition")

// CreateReplicatedTopic is CreateTopic with rf replicas per partition,
// spread over the brokers alive now. The topic node and every
// partition's state node (leader: the first replica, the ISR: all
// replicas, leader epoch 0) are created in one ZooKeeper multi, so no
// broker ever sees a replicated topic without its states, unless they
// pass what one request may carry (createInMultis). rf 1 is CreateTopic.
func (z *ZooKeeper) CreateReplicatedTopic(ctx context.Context, name string, partitions int32, rf int, configs map[string]string) (Topic, error) {
	if rf <= 1 {
		return z.CreateTopic(ctx, name, partitions, configs)
	}
	brokers, err := z.brokersToCreateOn(ctx, name, partitions)
	if err != nil {
		return Topic{}, err
	}
	replicas, err := SpreadReplicas(name, partitions, rf, brokers)
	if err != nil {
		return Topic{}, fmt.Errorf("creating topic %s: %w", name, err)
	}
	ctrlEpoch, _, err := z.readControllerEpoch()
	if err != nil {
		return Topic{}, fmt.Errorf("creating topic %s: %w", name, err)
	}
	live, err := z.brokerEpochsOf(idsOf(brokers))
	if err != nil {
		return Topic{}, fmt.Errorf("creating topic %s: %w", name, err)
	}
	leaders := make([]int32, partitions)
	for p := range replicas {
		leaders[p] = replicas[p][0]
	}
	id := NewTopicID()
	data, _ := json.Marshal(TopicNode{Version: 1, ID: id, Leaders: leaders, Replicas: replicas, Configs: configs})
	acl := zk.WorldACL(zk.PermAll)
	ops := []any{
		&zk.CreateRequest{Path: z.s.Paths.Topic(name), Data: data, Acl: acl},
		&zk.CreateRequest{Path: z.s.Paths.Topic(name) + "/partitions", Acl: acl},
	}
	for p := range replicas {
		state := z.s.Paths.PartitionState(name, int32(p))
		ops = append(ops,
			&zk.CreateRequest{Path: state[:len(state)-len("/state")], Acl: acl},
			&zk.CreateRequest{Path: state, Acl: acl, Data: encodeState(firstState(replicas[p], ctrlEpoch, live))})
	}
	if err := z.createInMultis(ops); err != nil {
		if errors.Is(err, zk.ErrNodeExists) {
			return Topic{}, ErrTopicExists
		}
		return Topic{}, fmt.Errorf("creating topic %s in zookeeper: %w", name, err)
	}
	if err := z.refresh(); err != nil {
		z.log.Warn("topic created but the local view is not refreshed yet", "topic", name, "err", err)
	}
	z.log.Info("created topic", "topic", name, "partitions", partitions, "replication_factor", rf, "brokers", len(brokers))
	if t, ok := z.Topic(name); ok {
		return t, nil
	}
	return Topic{Name: name, ID: id, Leaders: leaders, Replicas: replicas, Configs: configs}, nil
}

// readStates reads (and watches) the state node of each of t's
// partitions and sets Leaders from them. A partition whose node is
// missing or unreadable has no leader.
func (z *ZooKeeper) readStates(t *Topic) error {
	t.Leaders = slices.Clone(t.Leaders)
	t.States = make([]PartitionState, len(t.Leaders))
	// Pipelined (zkmany.go); each read fills its own partition's slots.
	return inParallel(len(t.Leaders), func(p int) error {
		t.Leaders[p] = -1
		data, _, ok, err := z.watch.Get(z.s.Paths.PartitionState(t.Name, int32(p)))
		if err != nil {
			return fmt.Errorf("reading the state of %s-%d: %w", t.Name, p, err)
		}
		if !ok {
			return nil
		}
		st, err := DecodePartitionStateNode(data)
		if err != nil {
			z.log.Warn("ignoring unreadable partition state", "topic", t.Name, "partition", p, "err", err)
			return nil
		}
		t.States[p], t.Leaders[p] = st, st.Leader
		return nil
	})
}

// deleteStates removes a replicated topic's state nodes, which must go
// before the topic node can.
func (z *ZooKeeper) deleteStates(name string) {
	dir := z.s.Paths.Topic(name) + "/partitions"
	kids, _, err := z.s.Conn.Children(dir)
	if err != nil {
		return // no state nodes: a topic with one replica per partition
	}
	for _, k := range kids {
		ends := dir + "/" + k + "/log_ends" // logends.go
		reports, _, _ := z.s.Conn.Children(ends)
		for _, r := range reports {
			_ = z.s.Conn.Delete(ends+"/"+r, -1)
		}
		_ = z.s.Conn.Delete(ends, -1)
		_ = z.s.Conn.Delete(dir+"/"+k+"/state", -1)
		_ = z.s.Conn.Delete(dir+"/"+k, -1)
	}
	_ = z.s.Conn.Delete(dir, -1)
}

// firstState is the state of a new partition: its first replica leads,
// every replica is in sync, each in its current broker epoch.
func firstState(replicas []int32, ctrlEpoch int32, live liveBrokers) PartitionState {
	st := PartitionState{Leader: replicas[0], LeaderBrokerEpoch: live[replicas[0]], ControllerEpoch: ctrlEpoch}
	return st.withISR(replicas, func(id int32) int64 { return live[id] })
}

// idsOf lists the brokers' ids.
func idsOf(brokers []Broker) []int32 {
	ids := make([]int32, len(brokers))
	for i, b := range brokers {
		ids[i] = b.ID
	}
	return ids
}

// readControllerEpoch reads /controller_epoch: 0 (and version -1) while
// no controller was ever elected.
func (z *ZooKeeper) readControllerEpoch() (epoch int32, version int32, err error) {
	data, stat, err := z.s.Conn.Get(z.s.Paths.ControllerEpoch())
	if errors.Is(err, zk.ErrNoNode) {
		return 0, -1, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("reading the controller epoch: %w", err)
	}
	e, err := strconv.ParseInt(string(data), 10, 32)
	if err != nil || e < 0 {
		return 0, 0, fmt.Errorf("controller epoch node holds %q, not an epoch", truncate(string(data)))
	}
	return int32(e), stat.Version, nil
}

// controllerNodeData is what a broker writes into /controller.
func controllerNodeData(id int32) []byte {
	data, _ := json.Marshal(ControllerNode{Version: nodeVersion, BrokerID: id, Timestamp: time.Now().UnixMilli()})
	return data
}

// addReplicatedPartitions grows a replicated topic: the new partitions'
// replicas are placed as CreateReplicatedTopic would place them, and the
// topic node (conditional on version) and the new state nodes are
// written in one multi.
func (z *ZooKeeper) addReplicatedPartitions(name string, n TopicNode, version int32, total int32, brokers []Broker) (Topic, error) {
	old := int32(len(n.Leaders))
	if total <= old {
		return Topic{}, fmt.Errorf("topic %s has %d partitions; a topic can only grow, asked for %d", name, old, total)
	}
	placed, err := SpreadReplicas(name, total, len(n.Replicas[0]), brokers)
	if err != nil {
		return Topic{}, fmt.Errorf("adding partitions to %s: %w", name, err)
	}
	ctrlEpoch, _, err := z.readControllerEpoch()
	if err != nil {
		return Topic{}, err
	}
	live, err := z.brokerEpochsOf(idsOf(brokers))
	if err != nil {
		return Topic{}, fmt.Errorf("adding partitions to %s: %w", name, err)
	}
	acl := zk.WorldACL(zk.PermAll)
	var ops []any
	for p := old; p < total; p++ {
		n.Replicas = append(n.Replicas, placed[p])
		n.Leaders = append(n.Leaders, placed[p][0])
		state := z.s.Paths.PartitionState(name, p)
		ops = append(ops,
			&zk.CreateRequest{Path: state[:len(state)-len("/state")], Acl: acl},
			&zk.CreateRequest{Path: state, Acl: acl, Data: encodeState(firstState(placed[p], ctrlEpoch, live))})
	}
	data, _ := json.Marshal(n)
	ops = append([]any{&zk.SetDataRequest{Path: z.s.Paths.Topic(name), Data: data, Version: version}}, ops...)
	if _, err := z.s.Conn.Multi(ops...); err != nil {
		if errors.Is(err, zk.ErrBadVersion) {
			return Topic{}, fmt.Errorf("topic %s changed while adding partitions; retry: %w", name, err)
		}
		return Topic{}, fmt.Errorf("adding partitions to %s in zookeeper: %w", name, err)
	}
	z.log.Info("added partitions", "topic", name, "partitions", total, "replication_factor", len(n.Replicas[0]))
	return z.refreshedTopic(name)
}
