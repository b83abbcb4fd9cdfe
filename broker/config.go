package broker

// The broker's own configuration and its defaults. Topic-level settings
// (retention, cleanup policy, ...) are broker/settings'.

import (
	"log/slog"
	"time"

	"github.com/tributary-io/tributary/broker/auth"
	"github.com/tributary-io/tributary/broker/brokerconfig"
	"github.com/tributary-io/tributary/broker/group"
	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/topicconfig"
	"github.com/tributary-io/tributary/broker/txn"
	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/clientsec"
)

// Config configures a broker. Zero values take the documented defaults.
type Config struct {
	// DataDir holds the partition logs (one directory per partition).
	DataDir string
	// Metadata is the cluster view. Nil means standalone: metadata in DataDir.
	Metadata cluster.Metadata
	// NodeID is this broker's id in standalone mode (default 0). In a cluster
	// the id comes from Metadata.Self.
	NodeID int32
	// ClusterID is reported in Metadata responses. Default: the cluster
	// metadata's persistent random id (data directory or ZooKeeper).
	ClusterID string
	// Log is the default storage configuration of every partition; dynamic
	// broker configs (log.retention.ms, ...; broker/settings) override it
	// at run time, and topic configs (retention.ms, segment.bytes, ...)
	// per topic.
	Log log.Config
	// MaxRequestBytes caps the size of one request frame
	// (socket.request.max.bytes). Default 100 MiB.
	MaxRequestBytes int32
	// MaxMessageBytes caps the size of one record batch (message.max.bytes);
	// larger batches get MESSAGE_TOO_LARGE. Default 1 MiB + 12 bytes of batch
	// framing, as in Kafka.
	MaxMessageBytes int32
	// ReplicaLagMax is how long a follower may go without catching up with
	// its leader before the leader takes it out of the ISR
	// (replica.lag.time.max.ms). Default 30 s.
	ReplicaLagMax time.Duration
	// InterBrokerListener is the listener of the leaders that followers
	// replicate from (security.inter.broker.protocol). Empty: the one
	// InterBroker's settings speak (PLAINTEXT when they are empty).
	InterBrokerListener SecurityProtocol
	// InterBroker is how this broker proves itself to the leaders it
	// replicates from on that listener: TLS (a CA, a client certificate)
	// and SASL credentials. With the authorizer on, its principal needs
	// ClusterAction on the cluster (a super user has it).
	InterBroker clientsec.Kafka
	// MinInsyncReplicas is the default of the topic config
	// min.insync.replicas: the fewest in-sync replicas an acks=all produce
	// is accepted with (else NOT_ENOUGH_REPLICAS). Default 1.
	MinInsyncReplicas int
	// UncleanLeaderElection is the default of the topic config
	// unclean.leader.election.enable: whether the controller may let a
	// replica outside the ISR lead a partition none of whose in-sync
	// replicas is alive, losing the records acknowledged above its log
	// end. Default false: the partition waits for an in-sync replica.
	UncleanLeaderElection bool
	// DefaultReplicationFactor is the replication factor of auto-created
	// topics and of CreateTopics asking for -1. Default 1.
	DefaultReplicationFactor int
	// AutoCreateTopics creates an unknown topic on first Metadata or Produce
	// (auto.create.topics.enable).
	AutoCreateTopics bool
	// DefaultPartitions is the partition count of auto-created topics and of
	// CreateTopics requests that ask for -1 (num.partitions). Default 1.
	DefaultPartitions int32
	// DisableMetrics turns the metrics' event hooks (requests, bytes,
	// flushes, throttles, refused logins, ISR changes) into no-ops; what
	// is read at scrape time (partitions, connections, lag) is still
	// served. It exists to measure what the hooks cost
	// (BenchmarkProduceMetricsCost).
	DisableMetrics bool
	// PartitionMetrics is how the partition-level series are exported:
	// "partition" (the default), one series per partition; "topic", one
	// per topic, summed over its partitions (lags: the largest), for
	// brokers with thousands of partitions (broker/metrics/pertopic.go).
	PartitionMetrics string
	// Logger receives one line per event an operator would want.
	Logger *slog.Logger
	// LogLevel, when set, is the level Logger's handler filters by: BROKER_LOGGER
	// configs change it at run time (broker/settings, broker/brokerlogger). Nil: the level is fixed.
	LogLevel *slog.LevelVar
	// Groups tunes the consumer group coordinator (session timeout bounds,
	// initial rebalance delay); zero values are Kafka's defaults.
	Groups group.Config
	// GroupOffsets is where committed offsets live. Nil: the ZooKeeper
	// offset registry when Metadata lends its session, else DataDir/groups.
	GroupOffsets group.OffsetStore
	// Transactions tunes the transaction coordinator (broker/txn): state
	// partitions, the longest transaction timeout, id expiration.
	Transactions txn.Config

	// QueuedMaxRequestBytes bounds the bytes held by all requests in flight
	// across the broker, from reading a body until its response is written
	// (queued.max.request.bytes); a connection waits for room before
	// reading. Default 512 MiB. A request larger than the budget waits
	// until it has the budget to itself.
	QueuedMaxRequestBytes int64
	// MaxConnections caps the connections served at once (max.connections);
	// more are closed as soon as they are accepted. Default 10000.
	MaxConnections int
	// MaxConnectionsPerIP caps the connections from one IP address
	// (max.connections.per.ip). Default (0): a tenth of the max.connections
	// in force, at least one, so one address cannot take every slot.
	MaxConnectionsPerIP int
	// QueuedMaxRequestBytesPerIP is the part of QueuedMaxRequestBytes the
	// requests of one IP address may hold at once. Default: a quarter.
	QueuedMaxRequestBytesPerIP int64
	// QueuedMaxRequestBytesPerPrincipal is the part the requests of one
	// logged-in principal (not ANONYMOUS) may hold at once, whatever
	// addresses it connects from. Default: a quarter.
	QueuedMaxRequestBytesPerPrincipal int64
	// MaxDecompressionMemory bounds, across all partitions, the memory of
	// records decompressed to be re-encoded in a topic's compression.type
	// (log.MemoryBudget): concurrent decompression bombs wait for room
	// instead of growing the heap. Default 256 MiB.
	MaxDecompressionMemory int64
	// SASLMaxReceiveSize caps a request frame on a SASL listener before the
	// client has logged in (Kafka's sasl.server.max.receive.size); larger
	// closes the connection. Default 512 KiB.
	SASLMaxReceiveSize int32
	// ConnectionsMaxIdleUnauthenticated closes a connection of a SASL
	// listener that has not logged in and sends nothing for this long.
	// Default 10 s.
	ConnectionsMaxIdleUnauthenticated time.Duration
	// ConnectionsMaxIdle closes a connection that has sent nothing and
	// awaits no response for this long (connections.max.idle.ms).
	// Default 10 minutes.
	ConnectionsMaxIdle time.Duration
	// RequestReadTimeout bounds how long a request's bytes may take to
	// arrive once its first byte has: a client that announces a frame and
	// stops is disconnected. Default 30 s.
	RequestReadTimeout time.Duration
	// ResponseWriteTimeout bounds the writing of one response: a client that
	// stops reading is disconnected, releasing what its responses hold.
	// Default 30 s.
	ResponseWriteTimeout time.Duration
	// InternalClients are the client ids admitted to write and delete the
	// internal topics (_schemas, _audit; see broker/internaltopic). Nil means
	// DefaultInternalClients; an empty, non-nil list admits none.
	InternalClients []string
	// MaxTopics caps the topics of the cluster view this broker creates in
	// (--max-topics): CreateTopics and auto-creation beyond it are refused.
	// Default 10000; negative: no limit.
	MaxTopics int
	// AutoCreateMaxTopics stops auto-creation once the cluster has this
	// many topics, so CreateTopics keeps room below MaxTopics
	// (broker/topicapi). Default: half of MaxTopics; negative: no cap
	// of its own.
	AutoCreateMaxTopics int
	// AutoCreateRate bounds auto-creations a second across the broker,
	// with ten seconds' worth of burst; beyond it the client gets
	// THROTTLING_QUOTA_EXCEEDED. Default 10; negative: no limit.
	AutoCreateRate float64
	// MaxPartitions caps the partitions this broker hosts
	// (--max-partitions). Default 20000; negative: no limit.
	MaxPartitions int
	// MaxPartitionFiles caps the file descriptors the open partition logs
	// hold together; least recently used logs give theirs back (they stay
	// open, parked) to stay below it and reopen their files on demand.
	// Default: half the process's open file limit (raised to its hard
	// limit at start).
	MaxPartitionFiles int
	// MaxOpenPartitions caps the open partition logs, parked or not; the
	// least recently used are closed to stay below it and reopened on
	// demand. Default: twice MaxPartitionFiles.
	MaxOpenPartitions int

	// TLS is the certificate of the SSL and SASL_SSL listeners (broker/netserver/tls.go).
	TLS TLSFiles
	// SASLMechanisms are the mechanisms SASL listeners offer. Nil: PLAIN,
	// SCRAM-SHA-256 and SCRAM-SHA-512.
	SASLMechanisms []string
	// Authorizer turns ACL enforcement on (broker/acl): every request is
	// checked against the ACLs, and nothing matching means deny.
	Authorizer bool
	// SuperUsers are principals (User:<name>) that pass every ACL check.
	SuperUsers []string
	// ConnectionsMaxReauth limits a SASL session (connections.max.reauth.ms,
	// KIP-368): a client must log in again on its connection within this
	// long, or the connection is closed at its next request. 0: sessions
	// never expire, as in Kafka. See broker/saslapi/reauth.go.
	ConnectionsMaxReauth time.Duration
	// Credentials holds the users SASL authenticates. Nil: ZooKeeper's
	// /config/users when Metadata lends its session, else
	// DataDir/credentials.json (see broker/auth).
	Credentials CredentialStore
}

func (c Config) withDefaults() Config {
	if c.MaxRequestBytes <= 0 {
		c.MaxRequestBytes = 100 << 20
	}
	if c.MaxMessageBytes <= 0 {
		c.MaxMessageBytes = topicconfig.DefaultMaxMessageBytes
	}
	if c.ReplicaLagMax <= 0 {
		c.ReplicaLagMax = 30 * time.Second
	}
	c.MinInsyncReplicas = max(c.MinInsyncReplicas, 1)
	c.DefaultReplicationFactor = max(c.DefaultReplicationFactor, 1)
	if c.DefaultPartitions <= 0 {
		c.DefaultPartitions = 1
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.QueuedMaxRequestBytes <= 0 {
		c.QueuedMaxRequestBytes = 512 << 20
	}
	if c.MaxConnections <= 0 {
		c.MaxConnections = brokerconfig.DefaultMaxConnections
	}
	c.MaxConnectionsPerIP = max(c.MaxConnectionsPerIP, 0) // 0: follows max.connections (connLimits)
	if c.QueuedMaxRequestBytesPerIP <= 0 {
		c.QueuedMaxRequestBytesPerIP = max(c.QueuedMaxRequestBytes/4, 1)
	}
	if c.QueuedMaxRequestBytesPerPrincipal <= 0 {
		c.QueuedMaxRequestBytesPerPrincipal = max(c.QueuedMaxRequestBytes/4, 1)
	}
	if c.MaxDecompressionMemory <= 0 {
		c.MaxDecompressionMemory = 256 << 20
	}
	if c.Log.DecompressMemory == nil {
		c.Log.DecompressMemory = log.NewMemoryBudget(c.MaxDecompressionMemory)
	}
	if c.Log.ScrubPace == nil {
		// One pace for every partition: --scrub-rate is the broker's.
		c.Log.ScrubPace = log.NewScrubPace(c.Log.ScrubRate)
	}
	if c.SASLMaxReceiveSize <= 0 {
		c.SASLMaxReceiveSize = 512 << 10
	}
	if c.ConnectionsMaxIdleUnauthenticated <= 0 {
		c.ConnectionsMaxIdleUnauthenticated = 10 * time.Second
	}
	if c.ConnectionsMaxIdle <= 0 {
		c.ConnectionsMaxIdle = 10 * time.Minute
	}
	if c.RequestReadTimeout <= 0 {
		c.RequestReadTimeout = 30 * time.Second
	}
	if c.ResponseWriteTimeout <= 0 {
		c.ResponseWriteTimeout = 30 * time.Second
	}
	if c.InternalClients == nil {
		c.InternalClients = DefaultInternalClients
	}
	if c.MaxTopics == 0 {
		c.MaxTopics = 10000
	}
	if c.AutoCreateMaxTopics == 0 && c.MaxTopics > 0 {
		c.AutoCreateMaxTopics = max(c.MaxTopics/2, 1)
	}
	if c.AutoCreateRate == 0 {
		c.AutoCreateRate = 10
	}
	if c.MaxPartitions == 0 {
		c.MaxPartitions = 20000
	}
	if c.SASLMechanisms == nil {
		c.SASLMechanisms = []string{auth.MechPlain, auth.MechSCRAM256, auth.MechSCRAM512}
	}
	return c
}
