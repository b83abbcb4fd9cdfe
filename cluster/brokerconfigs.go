package cluster

// Dynamic broker configs in ZooKeeper, where Kafka keeps them:
// /config/brokers/<default> holds the cluster-wide defaults and
// /config/brokers/<id> one broker's own, each {"version":1,"config":{...}}
// as Kafka writes it. Every broker watches both of the nodes that concern
// it, so a change written through any broker applies on all of them at
// once. Which keys are valid is the broker's business (broker package);
// this file only keeps the nodes.

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/go-zookeeper/zk"
)

// DefaultBrokerEntity names the cluster-wide defaults among the broker
// config nodes, as in Kafka.
const DefaultBrokerEntity = "<default>"

// BrokerEntity names one broker's config node.
func BrokerEntity(id int32) string { return strconv.Itoa(int(id)) }

// BrokerConfigs is the node of an entity: DefaultBrokerEntity or a broker id.
func (p ZKPaths) BrokerConfigs(entity string) string { return p.Root + "/config/brokers/" + entity }

// ZKBrokerConfigs reads, changes and watches the broker config nodes.
type ZKBrokerConfigs struct{ s *ZKSession }

// NewZKBrokerConfigs keeps the broker config nodes through s.
func NewZKBrokerConfigs(s *ZKSession) *ZKBrokerConfigs { return &ZKBrokerConfigs{s: s} }

// Load reads an entity's configs; no node means none.
func (c *ZKBrokerConfigs) Load(entity string) (map[string]string, error) {
	m, _, err := c.read(entity)
	return m, err
}

func (c *ZKBrokerConfigs) read(entity string) (map[string]string, int32, error) {
	p := c.s.Paths.BrokerConfigs(entity)
	data, st, err := c.s.Conn.Get(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, -1, nil
	}
	if err != nil {
		return nil, -1, fmt.Errorf("reading broker configs %s: %w", p, err)
	}
	var n topicConfigNode
	if err := json.Unmarshal(data, &n); err != nil || n.Version != 1 {
		return nil, -1, fmt.Errorf("broker configs %s hold %q, not {\"version\":1,\"config\":{...}}; rewrite or delete the node", p, truncate(string(data)))
	}
	return n.Config, st.Version, nil
}

// Update replaces an entity's configs with what change makes of the
// current ones. The write is conditional on the version read, so of two
// brokers changing the same node at once neither loses the other's
// change: the second reads again and reapplies. An error from change
// leaves the node as it was.
func (c *ZKBrokerConfigs) Update(entity string, change func(map[string]string) (map[string]string, error)) (map[string]string, error) {
	p := c.s.Paths.BrokerConfigs(entity)
	if err := c.s.EnsurePath(c.s.Paths.Root + "/config/brokers"); err != nil {
		return nil, fmt.Errorf("creating %s: %w", c.s.Paths.Root+"/config/brokers", err)
	}
	for {
		cur, version, err := c.read(entity)
		if err != nil {
			return nil, err
		}
		next, err := change(maps.Clone(cur))
		if err != nil {
			return nil, err
		}
		if next == nil {
			next = map[string]string{}
		}
		data, _ := json.Marshal(topicConfigNode{Version: 1, Config: next})
		if version < 0 {
			_, err = c.s.Conn.Create(p, data, 0, zk.WorldACL(zk.PermAll))
		} else {
			_, err = c.s.Conn.Set(p, data, version)
		}
		if errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrNoNode) {
			continue // changed under us: read again
		}
		if err != nil {
			return nil, fmt.Errorf("writing broker configs %s: %w", p, err)
		}
		return next, nil
	}
}

// Watch calls changed once the watches on the entities' nodes are armed,
// and again after every change of one of them, until stop or the session
// closes. While ZooKeeper is out of reach it retries every second, and
// calls changed again once it could re-arm, since a change may have gone
// unseen.
func (c *ZKBrokerConfigs) Watch(stop <-chan struct{}, changed func(), entities ...string) {
	w := NewZKWatch(c.s.Conn)
	for {
		var err error
		for _, e := range entities {
			if _, _, _, err = w.Get(c.s.Paths.BrokerConfigs(e)); err != nil {
				break
			}
		}
		if err == nil {
			changed()
		}
		var retry <-chan time.Time
		if err != nil {
			retry = time.After(time.Second)
		}
		select {
		case <-stop:
			return
		case <-c.s.Done():
			return
		case <-w.Fired():
		case <-retry:
		}
	}
}
