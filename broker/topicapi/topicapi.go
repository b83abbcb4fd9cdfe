// Package topicapi serves the topic admin APIs: Metadata,
// DescribeTopicPartitions, CreateTopics, DeleteTopics, CreatePartitions
// and DescribeLogDirs; and it decides which topics exist: auto-creation
// (Lookup, the one entry point Produce and the other APIs use), its rate
// and cap, the topic and partition caps, the replication factor a cluster
// can hold.
//
// One file per API holds its versions, its handler and its ACL rule.
// Topics are answered from the cluster view (cluster.Metadata), so every
// broker of a cluster answers the same; created, grown and deleted there,
// so the change reaches every broker. Internal topics keep their shape
// (broker/internaltopic). What a topic's configs mean is the root's: it
// gives Config.CheckConfigs (the safe ranges) and Config.TopicConfigs
// (the effective configs CreateTopics reports); what a deletion leaves
// behind on this broker (its partitions, the groups' offsets) is
// Config.Deleted.
//
// The broker builds Handlers with New from what they use and adds them to
// its registry with Register; nothing here imports the root broker.
package topicapi

import (
	"log/slog"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/configapi"
	"github.com/tributary-io/tributary/broker/kafkaapi"
	"github.com/tributary-io/tributary/broker/partition"
	"github.com/tributary-io/tributary/broker/replication"
	"github.com/tributary-io/tributary/cluster"
)

// Config is what the topic APIs use from the broker.
type Config struct {
	Metadata cluster.Metadata
	// Authz decides each request (broker/acl's helper); nil allows
	// everything.
	Authz     *acl.Authorizer
	Self      int32  // this broker's id
	ClusterID string // reported by Metadata
	Limits    Limits
	Logger    *slog.Logger
	// InternalClients are the client ids a broker without an authorizer
	// admits to delete internal topics (broker/internaltopic).
	InternalClients []string
	// DataDir is the one log directory DescribeLogDirs reports;
	// Partitions and Replicas are the partitions stored in it.
	DataDir    string
	Partitions *partition.Table
	Replicas   *replication.Manager
	// CheckConfigs checks a new topic's configs (already accepted by
	// broker/topicconfig) against the broker's safe ranges for a topic of
	// that many replicas; an error is broker/kafkaerr's.
	CheckConfigs func(configs map[string]string, replicas int) error
	// TopicConfigs reports the effective configs of a topic with configs
	// of its own, as DescribeConfigs would.
	TopicConfigs func(configs map[string]string) ([]configapi.Entry, error)
	// Deleted drops what this broker keeps of a topic just deleted from
	// the cluster view: its partitions' files, the groups' offsets.
	Deleted func(topic string)
}

// Limits are the broker's settings about which topics may be made.
type Limits struct {
	AutoCreate               bool    // --auto-create-topics
	AutoCreateRate           float64 // auto-creations a second; <= 0: unlimited
	AutoCreateMaxTopics      int     // auto-creation stops at this many topics; <= 0: no cap
	DefaultPartitions        int32
	DefaultReplicationFactor int
	MaxTopics                int   // <= 0: no cap
	MaxPartitions            int   // partitions this broker hosts; <= 0: no cap
	MaxRequestBytes          int32 // for the messages naming it
	// MetadataChecksCaps says the cluster view refuses creations beyond
	// MaxTopics and MaxPartitions itself, in the same step as the create
	// (standalone), so no check here races it.
	MetadataChecksCaps bool
}

// Handlers serves the topic APIs of one broker.
type Handlers struct {
	meta       cluster.Metadata
	authz      *acl.Authorizer
	self       int32
	clusterID  string
	limits     Limits
	logger     *slog.Logger
	internal   []string
	dataDir    string
	logs       *partition.Table
	replicas   *replication.Manager
	check      func(map[string]string, int) error
	configs    func(map[string]string) ([]configapi.Entry, error)
	deleted    func(string)
	autoCreate *autoCreateLimit
}

// New returns the topic APIs over cfg. It only keeps cfg: the broker may
// build them before it serves.
func New(cfg Config) *Handlers {
	return &Handlers{
		meta: cfg.Metadata, authz: cfg.Authz, self: cfg.Self, clusterID: cfg.ClusterID,
		limits: cfg.Limits, logger: cfg.Logger, internal: cfg.InternalClients,
		dataDir: cfg.DataDir, logs: cfg.Partitions, replicas: cfg.Replicas,
		check: cfg.CheckConfigs, configs: cfg.TopicConfigs, deleted: cfg.Deleted,
		autoCreate: newAutoCreateLimit(cfg.Limits.AutoCreateRate),
	}
}

// apis are this package's APIs, each declared in its file's init.
var apis kafkaapi.APIs[*Handlers]

// add declares, from an API file's init, that h serves key in versions
// min..max with serve(h).
func add(key, min, max int16, serve func(*Handlers) kafkaapi.Serve) { apis.Add(key, min, max, serve) }

// Register adds every topic API of this package to r.
func (h *Handlers) Register(r *kafkaapi.Registry) {
	apis.Register(r, h)
}
