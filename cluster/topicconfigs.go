package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"github.com/go-zookeeper/zk"
)

// ZooKeeper keeps a topic's dynamic configs in /config/topics/<t>, where
// Kafka 0.8 kept them, as {"version":1,"config":{...}}; when the node exists
// it replaces the configs the topic was created with. The cluster id lives
// in /cluster/id, and a topic's id in its assignment node, as in Kafka.

// ErrPartitionCount is returned by AddPartitions for a count that does not
// grow the topic.
var ErrPartitionCount = errors.New("invalid partition count")

type topicConfigNode struct {
	Version int               `json:"version"`
	Config  map[string]string `json:"config"`
}

type clusterIDNode struct {
	Version string `json:"version"`
	ID      string `json:"id"`
}

func (z *ZooKeeper) ClusterID() string { return z.clusterID }

// ensureClusterID reads /cluster/id, or creates it with a new random id;
// of brokers starting together the first create wins and all read its id.
func (z *ZooKeeper) ensureClusterID() (string, error) {
	p := z.s.Paths.ClusterID()
	for range 3 {
		data, _, err := z.s.Conn.Get(p)
		if err == nil {
			var n clusterIDNode
			if err := json.Unmarshal(data, &n); err != nil || n.ID == "" {
				return "", fmt.Errorf("%s holds %q, not {\"version\":\"1\",\"id\":...}; restore it (clients key on the cluster id)", p, data)
			}
			return n.ID, nil
		}
		if !errors.Is(err, zk.ErrNoNode) {
			return "", fmt.Errorf("reading the cluster id %s: %w", p, err)
		}
		if err := z.s.EnsurePath(p[:len(p)-len("/id")]); err != nil {
			return "", fmt.Errorf("creating %s: %w", p, err)
		}
		data, _ = json.Marshal(clusterIDNode{Version: "1", ID: NewClusterID()})
		if _, err := z.s.Conn.Create(p, data, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return "", fmt.Errorf("creating the cluster id %s: %w", p, err)
		}
	}
	return "", fmt.Errorf("the cluster id %s keeps vanishing", p)
}

// assignTopicID gives a topic created before topics had ids a new one. The
// write is conditional on the node's version, so when brokers race the
// first id wins and the others read it at their next refresh.
func (z *ZooKeeper) assignTopicID(name string, n TopicNode, version int32) TopicNode {
	n.ID = NewTopicID()
	data, _ := json.Marshal(n)
	if _, err := z.s.Conn.Set(z.s.Paths.Topic(name), data, version); err != nil {
		if !errors.Is(err, zk.ErrBadVersion) {
			z.log.Warn("could not store an id for a topic created without one; retrying at the next refresh", "topic", name, "err", err)
		}
		n.ID = TopicID{}
	}
	return n
}

// readTopicConfigs reads /config/topics/<t>, watching it.
func (z *ZooKeeper) readTopicConfigs(name string) (map[string]string, bool, error) {
	data, _, ok, err := z.watch.Get(z.s.Paths.TopicConfig(name))
	if err != nil {
		return nil, false, fmt.Errorf("reading configs of topic %s: %w", name, err)
	}
	if !ok {
		return nil, false, nil
	}
	var n topicConfigNode
	if err := json.Unmarshal(data, &n); err != nil {
		z.log.Warn("ignoring unreadable topic configs node", "topic", name, "err", err)
		return nil, false, nil
	}
	if len(n.Config) == 0 {
		n.Config = nil
	}
	return n.Config, true, nil
}

// SetTopicConfigs writes /config/topics/<t>. Every broker's watch picks the
// change up and applies it to its open partitions.
func (z *ZooKeeper) SetTopicConfigs(ctx context.Context, name string, configs map[string]string) (Topic, error) {
	if err := ctx.Err(); err != nil {
		return Topic{}, err
	}
	if _, ok := z.Topic(name); !ok {
		return Topic{}, ErrUnknownTopic
	}
	p := z.s.Paths.TopicConfig(name)
	data, _ := json.Marshal(topicConfigNode{Version: 1, Config: maps.Clone(configs)})
	_, err := z.s.Conn.Set(p, data, -1)
	if errors.Is(err, zk.ErrNoNode) {
		if err = z.s.EnsurePath(p[:len(p)-len(name)-1]); err == nil {
			_, err = z.s.Conn.Create(p, data, 0, zk.WorldACL(zk.PermAll))
		}
	}
	if err != nil {
		return Topic{}, fmt.Errorf("writing configs of topic %s to %s: %w", name, p, err)
	}
	return z.refreshedTopic(name)
}

// AddPartitions grows the assignment node with a write conditional on its
// version, so two concurrent growths cannot both apply.
func (z *ZooKeeper) AddPartitions(ctx context.Context, name string, total int32) (Topic, error) {
	if err := ctx.Err(); err != nil {
		return Topic{}, err
	}
	data, st, err := z.s.Conn.Get(z.s.Paths.Topic(name))
	if errors.Is(err, zk.ErrNoNode) {
		return Topic{}, ErrUnknownTopic
	}
	if err != nil {
		return Topic{}, fmt.Errorf("reading topic %s: %w", name, err)
	}
	n, err := DecodeTopicNode(data)
	if err != nil {
		return Topic{}, err
	}
	brokers, err := z.readBrokers(func(p string) ([]string, error) {
		kids, _, err := z.s.Conn.Children(p)
		return kids, err
	})
	if err != nil {
		return Topic{}, err
	}
	if n.Replicas != nil && len(n.Replicas[0]) > 1 {
		return z.addReplicatedPartitions(name, n, st.Version, total, brokers)
	}
	leaders, err := grow(Topic{Name: name, Leaders: n.Leaders}, total, brokers)
	if err != nil {
		return Topic{}, err
	}
	n.Leaders = leaders
	data, _ = json.Marshal(n)
	if _, err := z.s.Conn.Set(z.s.Paths.Topic(name), data, st.Version); err != nil {
		if errors.Is(err, zk.ErrBadVersion) {
			return Topic{}, fmt.Errorf("topic %s changed while adding partitions; retry: %w", name, err)
		}
		return Topic{}, fmt.Errorf("writing topic %s: %w", name, err)
	}
	z.log.Info("added partitions", "topic", name, "partitions", total)
	return z.refreshedTopic(name)
}

// refreshedTopic re-reads the registries so the caller reads its write.
func (z *ZooKeeper) refreshedTopic(name string) (Topic, error) {
	if err := z.refresh(); err != nil {
		return Topic{}, fmt.Errorf("topic %s changed but the local view is not refreshed yet: %w", name, err)
	}
	t, ok := z.Topic(name)
	if !ok {
		return Topic{}, ErrUnknownTopic
	}
	return t, nil
}
