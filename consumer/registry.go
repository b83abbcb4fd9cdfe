package consumer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tributary-io/tributary/cluster"
)

// The ZooKeeper side of a consumer: reading the broker, topic and consumer
// registries, and writing ownership and offsets.

// view is what one rebalance reads: the partitions of each subscribed topic
// that live brokers serve, and the group's subscribers per topic.
type view struct {
	partitions  map[string][]int32
	subscribers map[string][]string
	seeds       []string
}

// register writes this consumer into the consumer registry (ephemeral).
func (g *Group) register(ctx context.Context) error {
	host, _ := os.Hostname()
	data, _ := json.Marshal(cluster.ConsumerNode{
		Version: 1,
		Group:   g.cfg.Group,
		Topics:  g.cfg.Topics,
		Host:    host,
		PID:     os.Getpid(),
		Started: time.Now().UTC().Format(time.RFC3339),
	})
	// A crashed earlier run with the same id holds the node until its
	// session times out; a live one holds it for good, so do not wait long.
	ctx, cancel := context.WithTimeout(ctx, max(3*g.cfg.SessionTimeout, 20*time.Second))
	defer cancel()
	if err := g.s.CreateEphemeral(ctx, g.paths.Consumer(g.cfg.Group, g.id), data); err != nil {
		return fmt.Errorf("registering consumer %s: %w", g.id, err)
	}
	return nil
}

// waitForBrokers returns the addresses of the registered brokers, waiting
// for the first one to register if none has.
func (g *Group) waitForBrokers(ctx context.Context) ([]string, error) {
	warned := false
	for {
		v, err := g.read()
		if err != nil {
			return nil, err
		}
		if len(v.seeds) > 0 {
			return v.seeds, nil
		}
		if !warned {
			g.log.Warn("no broker is registered yet; waiting for one", "path", g.paths.BrokerIDs())
			warned = true
		}
		select {
		case <-g.watch.Fired():
		case <-ctx.Done():
			return nil, fmt.Errorf("no broker registered under %s (is a broker running with --zookeeper %s?): %w",
				g.paths.BrokerIDs(), g.cfg.ZooKeeper, ctx.Err())
		}
	}
}

// read reads the registries and arms watches on the broker registry, the
// topic list and the group's consumer registry: any change there means
// another rebalance.
func (g *Group) read() (view, error) {
	v := view{partitions: map[string][]int32{}, subscribers: map[string][]string{}}
	conn := g.s.Conn

	ids, err := g.watch.Children(g.paths.BrokerIDs())
	if err != nil {
		return v, fmt.Errorf("listing brokers: %w", err)
	}
	live := map[int32]bool{}
	for _, id := range ids {
		b, ok, err := readRegistration(g, g.paths.BrokerIDs()+"/"+id, "broker", id, cluster.DecodeBrokerNode)
		if err != nil {
			return v, err
		}
		if !ok {
			continue
		}
		live[b.ID] = true
		listener := g.cfg.Listener
		if listener == "" {
			listener = "PLAINTEXT"
		}
		if host, port, ok := b.Endpoint(listener); ok {
			v.seeds = append(v.seeds, net.JoinHostPort(host, strconv.Itoa(int(port))))
		}
	}
	slices.Sort(v.seeds)

	if _, err := g.watch.Children(g.paths.Topics()); err != nil {
		return v, fmt.Errorf("listing topics: %w", err)
	}
	for _, topic := range g.cfg.Topics {
		data, _, err := conn.Get(g.paths.Topic(topic))
		if errors.Is(err, zk.ErrNoNode) {
			continue // not created yet: the topics watch tells us when it is
		}
		if err != nil {
			return v, fmt.Errorf("reading topic %s: %w", topic, err)
		}
		t, err := cluster.DecodeTopicNode(data)
		if err != nil {
			return v, fmt.Errorf("topic %s: %w", topic, err)
		}
		// The paper's available partitions: those a live broker serves.
		// A dead broker's partitions come back, with their offsets, when it
		// re-registers and everyone rebalances again.
		for p, leader := range t.Leaders {
			if len(t.Replicas) > p && len(t.Replicas[p]) > 1 {
				// Replicated: Leaders holds the preferred leader, but the
				// state node names the one serving now, which the controller
				// replaces when it dies. Watched, so a new leader means a
				// rebalance that takes the partition back.
				if leader, err = g.currentLeader(topic, int32(p)); err != nil {
					return v, err
				}
			}
			if live[leader] {
				v.partitions[topic] = append(v.partitions[topic], int32(p))
			}
		}
	}

	if err := g.s.EnsurePath(g.paths.ConsumerIDs(g.cfg.Group)); err != nil {
		return v, err
	}
	members, err := g.watch.Children(g.paths.ConsumerIDs(g.cfg.Group))
	if err != nil {
		return v, fmt.Errorf("listing consumers: %w", err)
	}
	for _, id := range members {
		c, ok, err := readRegistration(g, g.paths.Consumer(g.cfg.Group, id), "consumer", id, cluster.DecodeConsumerNode)
		if err != nil {
			return v, err
		}
		if !ok {
			continue
		}
		for _, t := range c.Topics {
			v.subscribers[t] = append(v.subscribers[t], id)
		}
	}
	return v, nil
}

// currentLeader reads (and watches) a replicated partition's state node:
// its leader, or -1 while it has none or the node is unreadable.
func (g *Group) currentLeader(topic string, p int32) (int32, error) {
	data, _, ok, err := g.watch.Get(g.paths.PartitionState(topic, p))
	if err != nil {
		return -1, fmt.Errorf("reading the state of %s-%d: %w", topic, p, err)
	}
	if !ok {
		return -1, nil
	}
	st, err := cluster.DecodePartitionStateNode(data)
	if err != nil {
		g.log.Warn("ignoring unreadable partition state", "topic", topic, "partition", p, "err", err)
		return -1, nil
	}
	return st.Leader, nil
}

// readRegistration reads the registration node of one broker or consumer
// (kind) at name. ok is false for one that left meanwhile, or whose node
// cannot be decoded (logged): the registry is read while members come and
// go, and one bad node must not stop the whole group.
func readRegistration[T any](g *Group, name, kind, id string, decode func([]byte) (T, error)) (node T, ok bool, err error) {
	data, _, err := g.s.Conn.Get(name)
	if errors.Is(err, zk.ErrNoNode) {
		return node, false, nil
	}
	if err != nil {
		return node, false, fmt.Errorf("reading %s %s: %w", kind, id, err)
	}
	if node, err = decode(data); err != nil {
		g.log.Warn("ignoring unreadable "+kind+" registry node", "id", id, "err", err)
		return node, false, nil
	}
	return node, true, nil
}

// conflictError is an ownership conflict: a partition Algorithm 1 gave us is
// still owned by another consumer that has not released it yet.
type conflictError struct {
	topic     string
	partition int32
	owner     string
}

func (e *conflictError) Error() string {
	return fmt.Sprintf("partition %s/%d is still owned by consumer %q", e.topic, e.partition, e.owner)
}

// claim writes this consumer as the owner of every partition in mine, all or
// nothing: one ZooKeeper multi, so a conflict leaves no partial claim behind.
func (g *Group) claim(mine map[string][]int32) error {
	var ops []any
	var tps []topicPartition
	for _, topic := range slices.Sorted(maps.Keys(mine)) {
		if err := g.s.EnsurePath(g.paths.Owners(g.cfg.Group, topic)); err != nil {
			return err
		}
		for _, p := range mine[topic] {
			ops = append(ops, &zk.CreateRequest{
				Path:  g.paths.Owner(g.cfg.Group, topic, p),
				Data:  []byte(g.id),
				Acl:   zk.WorldACL(zk.PermAll),
				Flags: zk.FlagEphemeral,
			})
			tps = append(tps, topicPartition{topic, p})
		}
	}
	if len(ops) == 0 {
		return nil
	}
	resp, err := g.s.Conn.Multi(ops...)
	if err == nil {
		return nil
	}
	for i, r := range resp {
		if errors.Is(r.Error, zk.ErrNodeExists) {
			tp := tps[i]
			path := g.paths.Owner(g.cfg.Group, tp.topic, tp.partition)
			owner, stat, _ := g.s.Conn.Get(path)
			if stat != nil && stat.EphemeralOwner == g.s.Conn.SessionID() {
				// Our own claim that an earlier release failed to delete:
				// delete it now; the retry will succeed.
				g.s.Conn.Delete(path, -1)
			}
			return &conflictError{tp.topic, tp.partition, string(owner)}
		}
	}
	if errors.Is(err, zk.ErrNodeExists) {
		return &conflictError{topic: "?", partition: -1, owner: "?"}
	}
	return fmt.Errorf("claiming partitions: %w", err)
}

// unclaim deletes our owner nodes. It only deletes while the session that
// created them is still ours: after an expiry the nodes are gone already
// and the same paths may belong to someone else now.
func (g *Group) unclaim(owned map[topicPartition]*position) {
	for tp, pos := range owned {
		if pos.session != g.s.Conn.SessionID() {
			continue
		}
		err := g.s.Conn.Delete(g.paths.Owner(g.cfg.Group, tp.topic, tp.partition), -1)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			g.log.Warn("releasing partition", "topic", tp.topic, "partition", tp.partition, "err", err)
		}
	}
}

// readOffset returns the stored next offset of a partition, or -1.
func (g *Group) readOffset(tp topicPartition) (int64, error) {
	path := g.paths.Offset(g.cfg.Group, tp.topic, tp.partition)
	data, _, err := g.s.Conn.Get(path)
	if errors.Is(err, zk.ErrNoNode) {
		return -1, nil
	}
	if err != nil {
		return -1, fmt.Errorf("reading offset of %s/%d: %w", tp.topic, tp.partition, err)
	}
	off, err := cluster.DecodeOffsetNode(data)
	if err != nil {
		g.log.Warn("stored offset is not a number; starting as configured (delete the node to silence this)",
			"path", path, "content", string(data), "start", g.cfg.Start)
		return -1, nil
	}
	return off, nil
}

// writeOffset stores the next offset to consume of a partition, but only
// while we still own it: the multi checks our owner node, so a consumer that
// lost its partition cannot overwrite the new owner's progress.
func (g *Group) writeOffset(tp topicPartition, pos *position, offset int64) error {
	if pos.session != g.s.Conn.SessionID() {
		return fmt.Errorf("partition %s/%d: ownership lost with the ZooKeeper session", tp.topic, tp.partition)
	}
	owner := g.paths.Owner(g.cfg.Group, tp.topic, tp.partition)
	path := g.paths.Offset(g.cfg.Group, tp.topic, tp.partition)
	data := []byte(strconv.FormatInt(offset, 10))
	check := &zk.CheckVersionRequest{Path: owner, Version: 0}
	var write any = &zk.SetDataRequest{Path: path, Data: data, Version: -1}
	if pos.committed < 0 {
		if err := g.s.EnsurePath(g.paths.Offsets(g.cfg.Group, tp.topic)); err != nil {
			return err
		}
		write = &zk.CreateRequest{Path: path, Data: data, Acl: zk.WorldACL(zk.PermAll)}
	}
	_, err := g.s.Conn.Multi(check, write)
	if errors.Is(err, zk.ErrNodeExists) {
		_, err = g.s.Conn.Multi(check, &zk.SetDataRequest{Path: path, Data: data, Version: -1})
	}
	if err != nil {
		return fmt.Errorf("committing offset %d of %s/%d: %w", offset, tp.topic, tp.partition, err)
	}
	return nil
}
