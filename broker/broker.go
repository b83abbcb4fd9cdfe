// Package broker is Tributary's Kafka-protocol server: it accepts TCP
// connections, decodes requests with franz-go's kmsg, and serves the
// partitions that the cluster metadata assigns to this broker from the
// storage engine in broker/log. One file per Kafka API.
//
// What a client may rely on:
//   - Requests pipelined on one connection are answered in request order.
//   - A Produce with acks=all is answered only after the fsync that covers
//     it; acks=1 after the append; acks=0 is never answered.
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
//   - Every listener (listeners.go) has its security protocol: TLS 1.2+
//     with an optional client CA (tls.go), SASL PLAIN and SCRAM-SHA-256/512
//     (sasl.go). On a SASL listener nothing but ApiVersions and the SASL
//     exchange is answered before the client has proved who it is, and no
//     password is stored, only salted, iterated SCRAM keys (credentials.go).
//   - With Config.Authorizer every request is checked against the ACLs as
//     Kafka checks it, and a request nothing allows is refused (acl*.go).
//   - The internal topics (_schemas, _audit; internal_topics.go) are
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
package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tributary-io/tributary/broker/group"
	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/cluster"
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
	// Log is the default storage configuration of every partition; topic
	// configs (retention.ms, segment.bytes, ...) override it per topic.
	Log log.Config
	// MaxRequestBytes caps the size of one request frame
	// (socket.request.max.bytes). Default 100 MiB.
	MaxRequestBytes int32
	// MaxMessageBytes caps the size of one record batch (message.max.bytes);
	// larger batches get MESSAGE_TOO_LARGE. Default 1 MiB + 12 bytes of batch
	// framing, as in Kafka.
	MaxMessageBytes int32
	// AutoCreateTopics creates an unknown topic on first Metadata or Produce
	// (auto.create.topics.enable).
	AutoCreateTopics bool
	// DefaultPartitions is the partition count of auto-created topics and of
	// CreateTopics requests that ask for -1 (num.partitions). Default 1.
	DefaultPartitions int32
	// Logger receives one line per event an operator would want.
	Logger *slog.Logger
	// Groups tunes the consumer group coordinator (session timeout bounds,
	// initial rebalance delay); zero values are Kafka's defaults.
	Groups group.Config
	// GroupOffsets is where committed offsets live. Nil: the ZooKeeper
	// offset registry when Metadata lends its session, else DataDir/groups.
	GroupOffsets group.OffsetStore

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
	// (max.connections.per.ip). Default: MaxConnections.
	MaxConnectionsPerIP int
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
	// internal topics (_schemas, _audit; see internal_topics.go). Nil means
	// DefaultInternalClients; an empty, non-nil list admits none.
	InternalClients []string
	// MaxTopics caps the topics of the cluster view this broker creates in
	// (--max-topics): CreateTopics and auto-creation beyond it are refused.
	// Default 10000; negative: no limit.
	MaxTopics int
	// MaxPartitions caps the partitions this broker hosts
	// (--max-partitions). Default 20000; negative: no limit.
	MaxPartitions int
	// MaxPartitionFiles caps the file descriptors the open partition logs
	// hold together; least recently used logs are closed to stay below it
	// and reopened on demand. Default: half the process's open file limit
	// (raised to its hard limit at start).
	MaxPartitionFiles int

	// TLS is the certificate of the SSL and SASL_SSL listeners (see tls.go).
	TLS TLSFiles
	// SASLMechanisms are the mechanisms SASL listeners offer. Nil: PLAIN,
	// SCRAM-SHA-256 and SCRAM-SHA-512.
	SASLMechanisms []string
	// Authorizer turns ACL enforcement on (acl.go): every request is
	// checked against the ACLs, and nothing matching means deny.
	Authorizer bool
	// SuperUsers are principals (User:<name>) that pass every ACL check.
	SuperUsers []string
	// Credentials holds the users SASL authenticates. Nil: ZooKeeper's
	// /config/users when Metadata lends its session, else
	// DataDir/credentials.json (see credentials.go).
	Credentials CredentialStore
}

func (c Config) withDefaults() Config {
	if c.MaxRequestBytes <= 0 {
		c.MaxRequestBytes = 100 << 20
	}
	if c.MaxMessageBytes <= 0 {
		c.MaxMessageBytes = 1<<20 + 12
	}
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
		c.MaxConnections = 10000
	}
	if c.MaxConnectionsPerIP <= 0 {
		c.MaxConnectionsPerIP = c.MaxConnections
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
	if c.MaxPartitions == 0 {
		c.MaxPartitions = 20000
	}
	if c.SASLMechanisms == nil {
		c.SASLMechanisms = []string{mechPlain, mechSCRAM256, mechSCRAM512}
	}
	return c
}

// Broker serves the Kafka protocol for the partitions assigned to it.
type Broker struct {
	cfg    Config
	meta   cluster.Metadata
	logger *slog.Logger
	logs   *partitions
	pids   *producerIDs
	selfID int32 // this broker's id: fixed for its lifetime, read on every request
	groups *group.Coordinator
	faults storageFaults // partitions failing writes, logged once each

	closing chan struct{} // closed when shutdown starts; long polls end
	tls     *tlsState     // nil without Config.TLS
	authz   *authorizer   // nil without Config.Authorizer

	mu        sync.Mutex
	listeners []*boundListener
	conns     map[*conn]struct{}
	perIP     map[string]int // open connections per remote IP
	connWG    sync.WaitGroup
	closed    bool
	stopSync  chan struct{}

	budget         *byteBudget // queued.max.request.bytes
	counters       connCounters
	lastRefusalLog atomic.Int64 // unix nanos of the last refused-connection line

	metrics *brokerMetrics // see metrics.go
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
	for _, m := range cfg.SASLMechanisms {
		if m != mechPlain && scramHash(m) == nil {
			return nil, fmt.Errorf("broker: SASL mechanism %q is not served: use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", m)
		}
	}
	var tlsState *tlsState
	if cfg.TLS.CertFile != "" {
		var err error
		if tlsState, err = newTLSState(cfg.TLS); err != nil {
			return nil, err
		}
	}
	b := &Broker{
		tls:      tlsState,
		cfg:      cfg,
		meta:     cfg.Metadata,
		logger:   cfg.Logger,
		closing:  make(chan struct{}),
		conns:    map[*conn]struct{}{},
		perIP:    map[string]int{},
		stopSync: make(chan struct{}),
		budget:   newByteBudget(cfg.QueuedMaxRequestBytes),
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
		var store aclStore = aclFile{path: filepath.Join(cfg.DataDir, "acls.json")}
		zs, inCluster := b.meta.(zkSessioner)
		if inCluster {
			store = aclZooKeeper{s: zs.Session()}
		}
		if b.authz, err = newAuthorizer(store, cfg.SuperUsers); err != nil {
			return nil, err
		}
	}
	b.selfID = b.meta.Self().ID
	if b.cfg.ClusterID == "" {
		b.cfg.ClusterID = b.meta.ClusterID()
	}
	pids, err := openProducerIDs(cfg.DataDir, b.selfID)
	if err != nil {
		return nil, err
	}
	b.pids = pids
	fileBudget := cfg.MaxPartitionFiles
	if limit := raiseOpenFileLimit(b.logger); fileBudget == 0 {
		fileBudget = partitionFileBudget(limit)
	}
	b.metrics = newBrokerMetrics(b)
	b.logs = newPartitions(cfg.DataDir, b.metrics.logConfig(cfg.Log), fileBudget, b.logger)
	if err := b.recoverUnclean(); err != nil {
		b.logs.closeAll()
		return nil, err
	}
	if err := b.startGroups(); err != nil {
		b.logs.closeAll()
		return nil, err
	}
	go b.followMetadata()
	go b.sweepRetention(cfg.Log.WithDefaults().RetentionCheckInterval)
	if zs, ok := b.authz.storeInZooKeeper(); ok {
		go zs.watch(b.stopSync, func() {
			if err := b.authz.refresh(); err != nil {
				b.logger.Error("reading ACLs from ZooKeeper failed; keeping the last ones read", "err", err)
			}
		})
	}
	return b, nil
}

// followMetadata deletes local partitions of topics that were deleted
// through another broker of the cluster: topics that have open logs, or
// were in the previous view, and are gone from this one.
func (b *Broker) followMetadata() {
	prev := map[string]bool{}
	for _, t := range b.meta.Topics() {
		prev[t.Name] = true
	}
	for {
		ch := b.meta.Changed()
		select {
		case <-b.stopSync:
			return
		case <-ch:
		}
		b.reconfigureAll() // configs changed through another broker (alterconfigs.go)
		live := map[string]bool{}
		for _, t := range b.meta.Topics() {
			live[t.Name] = true
		}
		for _, topic := range b.logs.topics() {
			prev[topic] = true
		}
		for topic := range prev {
			if !live[topic] {
				b.logger.Info("topic deleted from the cluster; removing its local partitions", "topic", topic)
				b.logs.deleteTopic(topic)
			}
		}
		prev = live
	}
}

// Serve accepts connections on ln, a PLAINTEXT listener, until Close. It
// returns nil after Close.
func (b *Broker) Serve(ln net.Listener) error {
	return b.ServeListeners([]Listener{{Protocol: Plaintext}}, []net.Listener{ln})
}

// ServeListeners serves every listener ls[i] on lns[i] until Close, and
// returns nil after Close, or the first listener's failure (after closing
// the others' listeners).
func (b *Broker) ServeListeners(ls []Listener, lns []net.Listener) error {
	if len(ls) != len(lns) || len(ls) == 0 {
		return fmt.Errorf("broker: %d listeners with %d sockets", len(ls), len(lns))
	}
	bound := make([]*boundListener, len(ls))
	for i, l := range ls {
		bl := &boundListener{Listener: l, ln: lns[i]}
		if l.Protocol.TLS() {
			if b.tls == nil {
				return fmt.Errorf("broker: listener %s needs a certificate (--tls-cert, --tls-key)", l)
			}
			bl.tls = b.tls.config()
		}
		bound[i] = bl
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return errors.New("broker: closed")
	}
	b.listeners = append(b.listeners, bound...)
	b.mu.Unlock()
	errc := make(chan error, len(bound))
	for _, bl := range bound {
		go func() { errc <- b.serveListener(bl) }()
	}
	var first error
	for range bound {
		if err := <-errc; err != nil && first == nil {
			first = err
			for _, bl := range bound {
				bl.ln.Close()
			}
		}
	}
	return first
}

func (b *Broker) serveListener(l *boundListener) error {
	ln := l.ln
	b.logger.Info("broker listening", "listener", l.Protocol, "addr", ln.Addr().String(), "node", b.selfID, "data_dir", b.cfg.DataDir)
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			select {
			case <-b.closing:
				return nil
			default:
			}
			if errListenerClosed(err) {
				return fmt.Errorf("listener %s: %w", l.Protocol, err)
			}
			// Out of descriptors, or any other failure of one accept:
			// keep serving the connections we have and try again.
			if delay == 0 {
				b.logger.Warn("accepting connections failed; retrying with backoff", "listener", l.Protocol, "err", err)
			}
			delay = acceptBackoff(delay)
			select {
			case <-time.After(delay):
			case <-b.closing:
				return nil
			}
			continue
		}
		if delay != 0 {
			b.logger.Info("accepting connections again", "listener", l.Protocol)
			delay = 0
		}
		c := newConn(b, l, nc)
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			nc.Close()
			continue
		}
		if setting := b.admitLocked(c); setting != "" {
			b.mu.Unlock()
			nc.Close()
			b.logRefusal(nc.RemoteAddr(), setting)
			continue
		}
		b.connWG.Add(1)
		b.mu.Unlock()
		b.metrics.accepted.Inc()
		go func() {
			defer b.connWG.Done()
			c.serve()
			b.mu.Lock()
			b.forgetLocked(c)
			b.mu.Unlock()
		}()
	}
}

// Addr is the address of the first PLAINTEXT listener (else of the first
// listener), or "" before Serve.
func (b *Broker) Addr() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.listeners) == 0 {
		return ""
	}
	for _, l := range b.listeners {
		if l.Protocol == Plaintext {
			return l.ln.Addr().String()
		}
	}
	return b.listeners[0].ln.Addr().String()
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
	close(b.stopSync)
	for _, l := range b.listeners {
		l.ln.Close()
	}
	for c := range b.conns {
		c.stopReading()
	}
	b.mu.Unlock()
	b.connWG.Wait()
	b.groups.Close()
	err := b.logs.closeAll()
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

// ctx returns a context cancelled when the broker starts shutting down.
func (b *Broker) ctx() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-b.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
