// Package broker is Tributary's Kafka-protocol server: it accepts TCP
// connections, decodes requests with franz-go's kmsg, and serves the
// partitions that the cluster metadata assigns to this broker from the
// storage engine in broker/log. One file per Kafka API, which registers
// the API's key, the versions it serves and its handler (handlers.go, or
// a handler package's Register, e.g. broker/groupapi): ApiVersions
// advertises exactly those (broker/kafkaapi's registry).
//
// What a client may rely on:
//   - Requests pipelined on one connection are answered in request order.
//   - A Produce with acks=all is answered only after the fsync that covers
//     it, on every in-sync replica for a replicated partition (broker/replication);
//     acks=1 after the append; acks=0 is never answered.
//   - Fetch serves only flushed data and sends record bytes with sendfile,
//     straight from the segment file to the socket (on TLS listeners they
//     are read and encrypted: TLS cannot use sendfile).
//   - A malformed or oversized request closes its connection (and is logged);
//     the broker stays up. So does a panic while serving a request.
//   - Hostile or broken clients cannot exhaust the broker: request bodies are
//     read as their bytes arrive, the bytes all requests in flight hold are
//     bounded (QueuedMaxRequestBytes), connections are capped in total and
//     per IP, and a client that stalls mid-request, stops reading responses
//     or stays idle is disconnected.
//   - Every listener (broker/netserver) has its security protocol: TLS 1.2+
//     with an optional client CA, SASL PLAIN and SCRAM-SHA-256/512
//     (sasl.go). On a SASL listener nothing but ApiVersions and the SASL
//     exchange is answered before the client has proved who it is, and no
//     password is stored, only salted, iterated SCRAM keys (broker/auth).
//   - With Config.Authorizer every request is checked against the ACLs as
//     Kafka checks it, and a request nothing allows is refused (each
//     handler asks broker/acl's helper; the ACL model is broker/acl's).
//   - A client over its producer_byte_rate or consumer_byte_rate (per
//     user and/or client id, Kafka's precedence; broker/quota) is answered with
//     throttle_time_ms and its connection is not read for that long, so its
//     rate converges to the quota; quotas persist in the data directory or
//     ZooKeeper and apply on every broker of a cluster.
//   - The internal topics (_schemas, _audit; broker/internaltopic) are
//     written and deleted only by the client ids in Config.InternalClients
//     (or, with an authorizer, by the principals the ACLs allow), and keep
//     the shape their owners need.
//   - A data directory the broker wrote opens again whatever its partition
//     count: partition logs open on first use and the least recently used
//     are closed to stay within the descriptor limit; partitions not shut
//     down cleanly are recovered at start, before they are served.
//   - Produce and fetch to existing topics never wait for a topic being
//     created; topics and partitions beyond --max-topics/--max-partitions
//     are refused with POLICY_VIOLATION.
//   - A partition that cannot write (full disk) answers KAFKA_STORAGE_ERROR
//     and is logged once until it writes again.
//
// New wires the parts that are packages of their own: broker/netserver
// (connections, framing, the request budget and its shares), broker/auth
// (credentials, SCRAM, the login guard), broker/acl (the authorizer),
// broker/quota, broker/topicconfig and broker/brokerconfig (the config
// models), broker/kafkaerr (error codes), broker/partition (the partition
// table: open logs within the descriptor budget), broker/replication
// (leaders' high watermarks and ISRs, followers' fetchers), broker/log
// (storage), broker/group (the group coordinator), broker/txn and
// broker/txnbackend (the transaction coordinator and what it stands on:
// state partitions, markers, placement, inter-broker connections),
// broker/metrics (the Prometheus collector) and the handler packages
// (broker/dataapi, broker/groupapi, broker/txnapi, ...). None of them
// imports this package.
package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/auth"
	"github.com/tributary-io/tributary/broker/group"
	"github.com/tributary-io/tributary/broker/kafkaapi"
	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/metrics"
	"github.com/tributary-io/tributary/broker/netserver"
	"github.com/tributary-io/tributary/broker/partition"
	"github.com/tributary-io/tributary/broker/producerid"
	"github.com/tributary-io/tributary/broker/quota"
	"github.com/tributary-io/tributary/broker/replication"
	"github.com/tributary-io/tributary/broker/settings"
	"github.com/tributary-io/tributary/broker/topicapi"
	"github.com/tributary-io/tributary/broker/txn"
	"github.com/tributary-io/tributary/broker/txnbackend"
	"github.com/tributary-io/tributary/cluster"
)

// Broker serves the Kafka protocol for the partitions assigned to it.
type Broker struct {
	cfg    Config
	meta   cluster.Metadata
	logger *slog.Logger
	logs   *partition.Table // the partition table (broker/partition)
	pids   *producerid.IDs
	selfID int32 // this broker's id: fixed for its lifetime, read on every request
	groups *group.Coordinator
	// The transaction coordinator and what it stands on here
	// (transactions.go).
	txns       *txn.Coordinator
	txnBackend *txnbackend.Backend

	// life is cancelled when shutdown starts, with closing: the parent of
	// the contexts requests wait under (dataapi's acks=all waits).
	life    context.Context
	endLife context.CancelFunc

	closing chan struct{}     // closed when shutdown starts; long polls end
	server  *netserver.Server // the connection layer (connections.go)
	tls     *netserver.TLS    // nil without Config.TLS
	authz   *acl.Authorizer   // nil without Config.Authorizer
	logins  *auth.Guard       // failed-login limit and timing (broker/auth)
	quotas  *quota.Manager    // client quotas (broker/quota)
	// staticLog is the partitions' configuration as the flags make it,
	// settings the dynamic broker configs over it (settings.go).
	staticLog log.Config
	settings  *settings.Broker

	mu       sync.Mutex
	closed   bool
	stopSync chan struct{}

	refusals   refusalLog // refused features, logged once a minute each (refusals.go)
	startLevel slog.Level // the log level at start, which DELETE of a BROKER_LOGGER returns to

	metrics *metrics.Collector // broker/metrics (metrics.go)

	apis *kafkaapi.Registry // the APIs served (handlers.go, broker/kafkaapi)

	replicas *replication.Manager // replicated partitions led and followed (broker/replication)
	topics   *topicapi.Handlers   // the topic APIs, and which topics exist (broker/topicapi)
}

// New opens the data directory (running crash recovery on every local
// partition that was not shut down cleanly; the others open on first use)
// and returns a broker ready to Serve.
func New(cfg Config) (*Broker, error) {
	cfg = cfg.withDefaults()
	if cfg.DataDir == "" {
		return nil, errors.New("broker: a data directory is required")
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("broker: data directory: %w", err)
	}
	if err := metrics.ValidGranularity(cfg.PartitionMetrics); err != nil {
		return nil, err
	}
	for _, m := range cfg.SASLMechanisms {
		if m != auth.MechPlain && auth.SCRAMHash(m) == nil {
			return nil, fmt.Errorf("broker: SASL mechanism %q is not served: use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", m)
		}
	}
	var tlsState *netserver.TLS
	if cfg.TLS.CertFile != "" {
		var err error
		if tlsState, err = netserver.NewTLS(cfg.TLS); err != nil {
			return nil, err
		}
	}
	life, endLife := context.WithCancel(context.Background())
	b := &Broker{
		tls:      tlsState,
		cfg:      cfg,
		meta:     cfg.Metadata,
		logger:   cfg.Logger,
		closing:  make(chan struct{}),
		life:     life,
		endLife:  endLife,
		stopSync: make(chan struct{}),
		logins:   auth.NewGuard(),
	}
	var err error
	if b.meta == nil {
		// The advertised address is only known once Serve has a listener;
		// standalone metadata reads it from there (see Self).
		m, err := cluster.OpenStandalone(cfg.DataDir, cluster.Broker{ID: cfg.NodeID})
		if err != nil {
			return nil, err
		}
		m.SetLimits(max(cfg.MaxTopics, 0), max(cfg.MaxPartitions, 0))
		b.meta = &standaloneMeta{Standalone: m, b: b}
	}
	if b.cfg.Credentials == nil {
		if zs, ok := b.meta.(zkSessioner); ok {
			b.cfg.Credentials = NewZooKeeperCredentials(zs.Session())
		} else {
			b.cfg.Credentials = OpenCredentialFile(CredentialFilePath(cfg.DataDir))
		}
	}
	if cfg.Authorizer {
		store := acl.NewFile(filepath.Join(cfg.DataDir, "acls.json"))
		if zs, inCluster := b.meta.(zkSessioner); inCluster {
			store = acl.NewZooKeeper(zs.Session())
		}
		if b.authz, err = acl.New(store, cfg.SuperUsers, internalAllowed); err != nil {
			return nil, err
		}
	}
	qstore := quota.NewFile(filepath.Join(cfg.DataDir, "quotas.json"))
	if zs, ok := b.meta.(zkSessioner); ok {
		qstore = quota.NewZooKeeper(zs.Session())
	}
	if b.quotas, err = quota.New(qstore); err != nil {
		return nil, err
	}
	b.selfID = b.meta.Self().ID
	b.startLevel = b.currentLogLevel()
	if b.cfg.ClusterID == "" {
		b.cfg.ClusterID = b.meta.ClusterID()
	}
	pids, err := producerid.Open(cfg.DataDir, b.selfID)
	if err != nil {
		return nil, err
	}
	b.pids = pids
	fileBudget := cfg.MaxPartitionFiles
	if limit := partition.RaiseOpenFileLimit(b.logger); fileBudget == 0 {
		fileBudget = partition.FileBudget(limit)
	}
	b.metrics = b.newMetrics()
	b.server = b.newServer(tlsState)
	b.migrateInternalTopics()
	b.staticLog = b.metrics.LogConfig(cfg.Log)
	// Damaged replicas fetching again: the table's Hooks, so made first.
	repair := replication.NewRepair(b.selfID, b.meta, b.logger, b.closing)
	b.logs = partition.New(partition.Config{
		Dir: cfg.DataDir, Base: b.staticLog, FDBudget: fileBudget, MaxOpen: cfg.MaxOpenPartitions,
		Logger: b.logger, Current: b.meta.Topic, Hooks: repair,
	})
	// Before anything that may look a partition up (Lookup is replication's).
	b.replicas = replication.New(replication.Deps{
		Self: b.selfID, Meta: b.meta, Logs: b.logs, Repair: repair, DataDir: cfg.DataDir,
		LagMax: cfg.ReplicaLagMax, Logger: b.logger,
		InterBroker: cfg.InterBroker, Listener: b.interBrokerListener(),
		Stop: b.stopSync, Closing: b.closing,
		MinISR:        func(t cluster.Topic) int { return b.topicSettingsOf(t.Configs).MinISR },
		ThrottleRates: b.throttleRates,
	})
	b.settings = b.newSettings()
	b.topics = b.newTopics()
	if err := b.settings.Load(); err != nil {
		b.logs.CloseAll()
		return nil, err
	}
	if err := b.logs.RecoverUnclean(b.meta.Topics(), b.selfID); err != nil {
		b.logs.CloseAll()
		return nil, err
	}
	if err := b.startGroups(); err != nil {
		b.logs.CloseAll()
		return nil, err
	}
	b.startTxns()
	b.apis = b.newAPIs()
	b.startMetrics()
	go b.replicas.ShrinkISRs()
	go b.followMetadata()
	go b.logs.SweepRetention(cfg.Log.WithDefaults().RetentionCheckInterval, b.stopSync, b.meta.Topics, b.selfID)
	go b.settings.Follow(b.stopSync)
	go b.quotas.Follow(b.stopSync, func(err error) {
		b.logger.Error("reading client quotas from ZooKeeper failed; keeping the last ones read", "err", err)
	})
	if b.authz != nil {
		go b.authz.Follow(b.stopSync, func(err error) {
			b.logger.Error("reading ACLs from ZooKeeper failed; keeping the last ones read", "err", err)
		})
	}
	return b, nil
}

// followMetadata deletes local partitions of topics that were deleted
// through another broker of the cluster: topics that have open logs, or
// were in the previous view, and are gone from this one and, in a
// cluster, from ZooKeeper (topicDeleted).
func (b *Broker) followMetadata() {
	prev := map[string]bool{}
	for _, t := range b.meta.Topics() {
		prev[t.Name] = true
	}
	b.replicas.ReconcileFetchers()
	b.replicas.ReportLogEnds()
	for {
		ch := b.meta.Changed()
		select {
		case <-b.stopSync:
			return
		case <-ch:
		}
		b.settings.ReconfigureAll() // configs changed through another broker (broker/settings)
		b.replicas.ReconcileFetchers()
		b.replicas.ReportLogEnds()
		live := map[string]bool{}
		for _, t := range b.meta.Topics() {
			live[t.Name] = true
		}
		for _, topic := range b.logs.Topics() {
			prev[topic] = true
		}
		for topic := range prev {
			if !live[topic] && b.replicas.TopicDeleted(topic) {
				b.logger.Info("topic deleted from the cluster; removing its local partitions", "topic", topic)
				b.logs.DeleteTopic(topic)
			}
		}
		prev = live
	}
}

// Close shuts down gracefully: stop accepting, stop reading new requests,
// answer the requests already read, then flush every partition and mark it
// cleanly shut down so the next start skips recovery.
func (b *Broker) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	close(b.closing)
	b.endLife()
	close(b.stopSync)
	b.mu.Unlock()
	b.server.Close() // stops accepting and reading; waits for the responses owed
	b.replicas.CloseFetchers()
	b.groups.Close()
	b.closeTxns()
	err := b.logs.CloseAll()
	if merr := b.meta.Close(); err == nil {
		err = merr
	}
	b.logger.Info("broker stopped", "clean", err == nil)
	return err
}

// standaloneMeta reports the listener's address as the broker's own, so
// Metadata tells clients to come back to the address they reached.
type standaloneMeta struct {
	*cluster.Standalone
	b *Broker
}

func (m *standaloneMeta) Self() cluster.Broker {
	return SelfWithEndpoints(m.Standalone.Self(), m.b.Endpoints())
}

func (m *standaloneMeta) Brokers() []cluster.Broker { return []cluster.Broker{m.Self()} }
