// # ZooKeeper layout
//
// A cluster shares one ZooKeeper chroot (the path after the last host:port of
// the connect string, e.g. 127.0.0.1:2181/tributary). Under it live the
// paper's four registries, plus the topic assignments:
//
//	/brokers/ids/<id>                              ephemeral  broker registry: {"id","host","port","topics":{"t":[0,3]}}
//	/cluster/id                                    persistent cluster id: {"version":"1","id":"<base64 uuid>"}
//	/brokers/topics/<topic>                        persistent topic assignment: {"version":1,"topic_id":"<base64 uuid>","leaders":[1,2,3,...],"configs":{}}
//	/config/topics/<topic>                         persistent topic configs: {"version":1,"config":{"retention.ms":"1000"}}
//	/config/acls, /config/quotas                   persistent every ACL, every client quota (broker/acl, broker/quota)
//	/config/users/<user>                           persistent a user's SCRAM credentials (broker/auth)
//	/admin/preferred_replica_election              persistent leader elections asked of the controller (preferred.go)
//	/consumers/<group>/ids/<consumer>              ephemeral  consumer registry: {"version":1,"group","topics":[...],"host","pid","started"}
//	/consumers/<group>/owners/<topic>/<partition>  ephemeral  ownership registry: the owning consumer id, as text
//	/consumers/<group>/offsets/<topic>/<partition> persistent offset registry: next offset to consume, as decimal text
//
// Ephemeral nodes vanish when their creator's session ends (a clean close, or
// the session timeout after a crash), which is how the cluster learns that a
// broker or a consumer is gone. Only assignments and offsets outlive their
// writers. The owner and offset formats are those of Kafka 0.8's ZooKeeper
// consumer, so its tools can read them.
package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"path"
	"strconv"
	"strings"
)

// ZKPaths builds the paths of the registries under a chroot. Root is "" for
// the ZooKeeper root or "/chroot" otherwise.
type ZKPaths struct {
	Root string
}

func (p ZKPaths) BrokerIDs() string        { return p.Root + "/brokers/ids" }
func (p ZKPaths) Broker(id int32) string   { return p.BrokerIDs() + "/" + strconv.Itoa(int(id)) }
func (p ZKPaths) Topics() string           { return p.Root + "/brokers/topics" }
func (p ZKPaths) Topic(name string) string { return p.Topics() + "/" + name }
func (p ZKPaths) ClusterID() string        { return p.Root + "/cluster/id" }
func (p ZKPaths) TopicConfig(name string) string {
	return p.Root + "/config/topics/" + name
}

// Config is the parent of the cluster-wide config nodes.
func (p ZKPaths) Config() string { return p.Root + "/config" }

// ACLs is the one node holding every ACL (broker/acl).
func (p ZKPaths) ACLs() string { return p.Config() + "/acls" }

// Quotas is the one node holding every client quota (broker/quota).
func (p ZKPaths) Quotas() string { return p.Config() + "/quotas" }

// Users is the parent of the SCRAM credential nodes, one per user, named
// by the path-escaped user name (broker/auth).
func (p ZKPaths) Users() string { return p.Config() + "/users" }

func (p ZKPaths) Group(group string) string {
	return p.Root + "/consumers/" + group
}
func (p ZKPaths) ConsumerIDs(group string) string { return p.Group(group) + "/ids" }
func (p ZKPaths) Consumer(group, id string) string {
	return p.ConsumerIDs(group) + "/" + id
}
func (p ZKPaths) Owners(group, topic string) string {
	return p.Group(group) + "/owners/" + topic
}
func (p ZKPaths) Owner(group, topic string, partition int32) string {
	return p.Owners(group, topic) + "/" + strconv.Itoa(int(partition))
}
func (p ZKPaths) Offsets(group, topic string) string {
	return p.Group(group) + "/offsets/" + topic
}
func (p ZKPaths) Offset(group, topic string, partition int32) string {
	return p.Offsets(group, topic) + "/" + strconv.Itoa(int(partition))
}

// ParseZKConnect splits a connect string "host:port[,host:port...][/chroot]"
// into servers and the chroot ("" when absent or "/"), as Kafka and
// ZooKeeper's own clients read it.
func ParseZKConnect(connect string) (servers []string, chroot string, err error) {
	hosts := connect
	if i := strings.IndexByte(connect, '/'); i >= 0 {
		hosts, chroot = connect[:i], connect[i:]
		chroot = strings.TrimRight(chroot, "/")
		if chroot != "" && (path.Clean(chroot) != chroot || strings.Contains(chroot, "//")) {
			return nil, "", fmt.Errorf("zookeeper connect string %q: chroot %q is not a clean absolute path", connect, chroot)
		}
	}
	for _, h := range strings.Split(hosts, ",") {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(h); err != nil {
			h = net.JoinHostPort(h, "2181")
		}
		servers = append(servers, h)
	}
	if len(servers) == 0 {
		return nil, "", fmt.Errorf("zookeeper connect string %q names no server; expected host:port[,host:port]/chroot", connect)
	}
	return servers, chroot, nil
}

// ValidateName checks a topic, group or consumer id for use as one ZooKeeper
// path element. The rule is Kafka's for topic names: 1 to 249 characters of
// ASCII letters, digits, '.', '_' and '-', and not "." or "..".
func ValidateName(kind, name string) error {
	if name == "" {
		return fmt.Errorf("%s name is empty", kind)
	}
	if len(name) > 249 {
		return fmt.Errorf("%s name %q is longer than 249 characters", kind, name)
	}
	if name == "." || name == ".." {
		return fmt.Errorf("%s name %q is not allowed", kind, name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("%s name %q has %q; only ASCII letters, digits, '.', '_' and '-' are allowed", kind, name, r)
		}
	}
	return nil
}

// BrokerNode is the content of /brokers/ids/<id>: where clients reach the
// broker, and which partitions it stores (the paper's "set of topics and
// partitions", kept up to date as topics come and go).
type BrokerNode struct {
	Broker
	Topics map[string][]int32 `json:"topics"`
}

// TopicNode is the content of /brokers/topics/<topic>.
type TopicNode struct {
	Version int     `json:"version"`
	ID      TopicID `json:"topic_id,omitzero"`
	Leaders []int32 `json:"leaders"`
	// Replicas[p] lists the brokers that store partition p, the preferred
	// leader (Leaders[p]) first. Absent in nodes written before
	// replication: every partition then has one replica, its leader.
	Replicas [][]int32         `json:"replicas,omitempty"`
	Configs  map[string]string `json:"configs,omitempty"`
	// AddingReplicas and RemovingReplicas, keyed by partition, describe
	// the reassignments under way (Kafka's fields): Replicas[p] is then
	// the target replicas followed by the removing ones.
	AddingReplicas   map[string][]int32 `json:"adding_replicas,omitempty"`
	RemovingReplicas map[string][]int32 `json:"removing_replicas,omitempty"`
}

// ConsumerNode is the content of /consumers/<group>/ids/<consumer>.
type ConsumerNode struct {
	Version int      `json:"version"`
	Group   string   `json:"group"`
	Topics  []string `json:"topics"`
	Host    string   `json:"host,omitempty"`
	PID     int      `json:"pid,omitempty"`
	Started string   `json:"started,omitempty"`
}

// MaxNodeSize is the largest node a decoder accepts: ZooKeeper's own limit
// (jute.maxbuffer, 1 MiB by default), so what a node decodes to is bounded
// even if a server is configured to hold more.
const MaxNodeSize = 1 << 20

// nodeVersion is the version brokers and consumers write into versioned
// nodes; a reader refuses a newer one rather than misread it.
const nodeVersion = 1

// The decoders below accept what Tributary's writers write (and what a
// person could write by hand in the same shape) and refuse the rest with an
// error saying what is wrong, so that a reader skips or reports a bad node
// instead of acting on it: serving a broker at port 0, a topic without
// partitions, a negative offset.

// DecodeBrokerNode reads a broker registry node.
func DecodeBrokerNode(data []byte) (BrokerNode, error) {
	var n BrokerNode
	if err := decodeNode("broker registry", data, &n); err != nil {
		return BrokerNode{}, err
	}
	switch {
	case n.ID < 0:
		return BrokerNode{}, fmt.Errorf("broker registry node: id %d is negative", n.ID)
	case n.Host == "":
		return BrokerNode{}, errors.New("broker registry node: no host")
	case n.Port < 1 || n.Port > 65535:
		return BrokerNode{}, fmt.Errorf("broker registry node: port %d is not a TCP port", n.Port)
	}
	for _, e := range n.Endpoints {
		if e.Listener == "" || e.Host == "" || e.Port < 1 || e.Port > 65535 {
			return BrokerNode{}, fmt.Errorf("broker registry node: endpoint %s://%s:%d is incomplete", e.Listener, e.Host, e.Port)
		}
	}
	for t, parts := range n.Topics {
		if err := ValidateName("topic", t); err != nil {
			return BrokerNode{}, fmt.Errorf("broker registry node: %w", err)
		}
		for _, p := range parts {
			if p < 0 {
				return BrokerNode{}, fmt.Errorf("broker registry node: topic %s: partition %d is negative", t, p)
			}
		}
	}
	return n, nil
}

// DecodeTopicNode reads a topic assignment node.
func DecodeTopicNode(data []byte) (TopicNode, error) {
	var n TopicNode
	if err := decodeNode("topic assignment", data, &n); err != nil {
		return TopicNode{}, err
	}
	if err := checkVersion("topic assignment", n.Version); err != nil {
		return TopicNode{}, err
	}
	if len(n.Leaders) == 0 {
		return TopicNode{}, errors.New("topic assignment node: no partitions (\"leaders\" is empty)")
	}
	for p, id := range n.Leaders {
		if id < 0 {
			return TopicNode{}, fmt.Errorf("topic assignment node: partition %d: broker id %d is negative", p, id)
		}
	}
	if n.Replicas != nil {
		if err := checkReplicas(n.Leaders, n.Replicas); err != nil {
			return TopicNode{}, fmt.Errorf("topic assignment node: %w", err)
		}
	}
	if err := checkReassignments(n); err != nil {
		return TopicNode{}, fmt.Errorf("topic assignment node: %w", err)
	}
	return n, nil
}

// DecodeConsumerNode reads a consumer registry node.
func DecodeConsumerNode(data []byte) (ConsumerNode, error) {
	var n ConsumerNode
	if err := decodeNode("consumer registry", data, &n); err != nil {
		return ConsumerNode{}, err
	}
	if err := checkVersion("consumer registry", n.Version); err != nil {
		return ConsumerNode{}, err
	}
	if err := ValidateName("group", n.Group); err != nil {
		return ConsumerNode{}, fmt.Errorf("consumer registry node: %w", err)
	}
	for _, t := range n.Topics {
		if err := ValidateName("topic", t); err != nil {
			return ConsumerNode{}, fmt.Errorf("consumer registry node: %w", err)
		}
	}
	return n, nil
}

// DecodeOwnerNode reads an ownership registry node: the owning consumer's
// id as text. Surrounding white space (a newline left by a hand edit) is
// ignored.
func DecodeOwnerNode(data []byte) (string, error) {
	if len(data) > MaxNodeSize {
		return "", fmt.Errorf("ownership registry node: %d bytes, more than ZooKeeper holds (%d)", len(data), MaxNodeSize)
	}
	id := strings.TrimSpace(string(data))
	if err := ValidateName("consumer id", id); err != nil {
		return "", fmt.Errorf("ownership registry node: %w", err)
	}
	return id, nil
}

// DecodeOffsetNode reads an offset registry node: the next offset to
// consume, as decimal text. Surrounding white space is ignored; a negative
// number is refused (Kafka's "no offset" is the absence of the node).
func DecodeOffsetNode(data []byte) (int64, error) {
	if len(data) > MaxNodeSize {
		return 0, fmt.Errorf("offset registry node: %d bytes, more than ZooKeeper holds (%d)", len(data), MaxNodeSize)
	}
	text := strings.TrimSpace(string(data))
	off, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("offset registry node: %q is not a decimal offset", truncate(text))
	}
	if off < 0 {
		return 0, fmt.Errorf("offset registry node: offset %d is negative", off)
	}
	return off, nil
}

func decodeNode(kind string, data []byte, v any) error {
	if len(data) > MaxNodeSize {
		return fmt.Errorf("%s node: %d bytes, more than ZooKeeper holds (%d)", kind, len(data), MaxNodeSize)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s node is not valid JSON: %w", kind, err)
	}
	return nil
}

func checkVersion(kind string, v int) error {
	if v < 0 || v > nodeVersion {
		return fmt.Errorf("%s node: version %d is not one this process understands (up to %d)", kind, v, nodeVersion)
	}
	return nil
}

// truncate shortens text quoted in an error message.
func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
