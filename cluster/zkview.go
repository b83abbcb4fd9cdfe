package cluster

// The broker's view of a ZooKeeper cluster: the broker and topic
// registries read through the watch (refreshView, after every change
// ZooKeeper reports), published to the broker when they changed, and
// served from memory (Brokers, Topic, Topics, Changed). The view may lag
// ZooKeeper, so what must not act on a stale one goes to ZooKeeper
// itself: CreateTopic reads the live brokers there, the controller reads
// the state nodes, a leader's ISR change is a conditional write.

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"

	"github.com/go-zookeeper/zk"
)

// refreshView reads both registries (through the watch, which answers
// what did not change since its last read), publishes the view if it
// changed, and keeps this broker's own node listing the partitions it
// stores.
func (z *ZooKeeper) refreshView() error {
	z.refreshMu.Lock()
	defer z.refreshMu.Unlock()
	brokers, err := z.readBrokers(z.watch.Children)
	if err != nil {
		return err
	}
	names, err := z.watch.Children(z.s.Paths.Topics())
	if err != nil {
		return fmt.Errorf("listing %s: %w", z.s.Paths.Topics(), err)
	}
	read := make([]Topic, len(names))
	found := make([]bool, len(names))
	// Pipelined (zkmany.go): thousands of topics, each a few nodes.
	if err := inParallel(len(names), func(i int) (err error) {
		read[i], found[i], err = z.readTopic(names[i])
		return err
	}); err != nil {
		return err
	}
	topics := make(map[string]Topic, len(names))
	for i, name := range names {
		if found[i] {
			topics[name] = read[i]
		}
	}

	z.mu.Lock()
	if !reflect.DeepEqual(brokers, z.brokers) || !reflect.DeepEqual(topics, z.topics) {
		z.brokers, z.topics = brokers, topics
		close(z.changed)
		z.changed = make(chan struct{})
	}
	z.mu.Unlock()

	own := map[string][]int32{}
	for name, t := range topics {
		for p, leader := range t.Leaders {
			if leader == z.self.ID {
				own[name] = append(own[name], int32(p))
			}
		}
	}
	if !reflect.DeepEqual(own, z.published) {
		data, _ := json.Marshal(BrokerNode{Broker: z.self, Topics: own})
		_, err := z.s.Conn.Set(z.s.Paths.Broker(z.self.ID), data, -1)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			// Not registered (session expired): register writes it.
		case err != nil:
			return fmt.Errorf("updating this broker's registry node: %w", err)
		}
		z.published = own
	}
	return nil
}

// readBrokers lists the live brokers, sorted by id. A node that vanishes
// between the listing and the read is a broker that just left.
func (z *ZooKeeper) readBrokers(children func(string) ([]string, error)) ([]Broker, error) {
	ids, err := children(z.s.Paths.BrokerIDs())
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", z.s.Paths.BrokerIDs(), err)
	}
	brokers := make([]Broker, 0, len(ids))
	for _, id := range ids {
		data, _, err := z.s.Conn.Get(z.s.Paths.BrokerIDs() + "/" + id)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading broker %s: %w", id, err)
		}
		n, err := DecodeBrokerNode(data)
		if err != nil {
			z.log.Warn("ignoring unreadable broker registry node", "id", id, "err", err)
			continue
		}
		if want, _ := strconv.Atoi(id); int32(want) != n.ID {
			z.log.Warn("ignoring broker registry node whose id does not match its path", "path_id", id, "node_id", n.ID)
			continue
		}
		brokers = append(brokers, n.Broker)
	}
	sort.Slice(brokers, func(i, j int) bool { return brokers[i].ID < brokers[j].ID })
	return brokers, nil
}

// readTopic reads a topic's assignment and its configs (topicconfigs.go),
// watching both so that partition growth and config changes made through
// any broker reach this one.
func (z *ZooKeeper) readTopic(name string) (Topic, bool, error) {
	path := z.s.Paths.Topic(name)
	data, version, ok, err := z.watch.Get(path)
	if err != nil {
		return Topic{}, false, fmt.Errorf("reading topic %s: %w", name, err)
	}
	if !ok {
		return Topic{}, false, nil
	}
	n, err := DecodeTopicNode(data)
	if err != nil {
		// Left out of the view, the topic is neither served nor moved by
		// the controller, and its data stays: brokers delete a copy only
		// when ZooKeeper confirms it (TopicDeleted, AssignedReplicas).
		z.unreadableMu.Lock()
		v, warned := z.unreadable[path]
		if !warned || v != version {
			if z.unreadable == nil {
				z.unreadable = map[string]int32{}
			}
			z.unreadable[path] = version
		}
		z.unreadableMu.Unlock()
		if !warned || v != version {
			z.log.Warn("ignoring unreadable topic assignment", "topic", name, "path", path, "err", err)
		}
		return Topic{}, false, nil
	}
	if n.ID.IsZero() {
		n = z.assignTopicID(name, n, version)
	}
	t := Topic{Name: name, ID: n.ID, Leaders: n.Leaders, Replicas: n.Replicas, Configs: n.Configs, Reassigning: n.reassignments()}
	if t.Replicated() {
		if err := z.readStates(&t); err != nil {
			return Topic{}, false, err
		}
	}
	if configs, ok, err := z.readTopicConfigs(name); err != nil {
		return Topic{}, false, err
	} else if ok {
		t.Configs = configs
	}
	return t, true, nil
}

func (z *ZooKeeper) Brokers() []Broker {
	z.mu.Lock()
	defer z.mu.Unlock()
	return append([]Broker(nil), z.brokers...)
}

func (z *ZooKeeper) Topic(name string) (Topic, bool) {
	z.mu.Lock()
	defer z.mu.Unlock()
	t, ok := z.topics[name]
	return t, ok
}

func (z *ZooKeeper) Topics() []Topic {
	z.mu.Lock()
	defer z.mu.Unlock()
	list := make([]Topic, 0, len(z.topics))
	for _, t := range z.topics {
		list = append(list, t)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	return list
}

func (z *ZooKeeper) Changed() <-chan struct{} {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.changed
}
