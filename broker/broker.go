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
//     straight from the segment file to the socket.
//   - A malformed or oversized request closes its connection (and is logged);
//     the broker stays up. So does a panic while serving a request.
//   - Hostile or broken clients cannot exhaust the broker: request bodies are
//     read as their bytes arrive, the bytes all requests in flight hold are
//     bounded (QueuedMaxRequestBytes), connections are capped in total and
//     per IP, and a client that stalls mid-request, stops reading responses
//     or stays idle is disconnected.
//   - The internal topics (_schemas, _audit; internal_topics.go) are
//     written and deleted only by the client ids in Config.InternalClients,
//     and keep the shape their owners need.
package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
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
	// ClusterID is reported in Metadata responses. Default "tributary".
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
}

func (c Config) withDefaults() Config {
	if c.ClusterID == "" {
		c.ClusterID = "tributary"
	}
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

	closing  chan struct{} // closed when shutdown starts; long polls end
	mu       sync.Mutex
	ln       net.Listener
	conns    map[*conn]struct{}
	perIP    map[string]int // open connections per remote IP
	connWG   sync.WaitGroup
	closed   bool
	stopSync chan struct{}

	budget         *byteBudget // queued.max.request.bytes
	counters       connCounters
	lastRefusalLog atomic.Int64 // unix nanos of the last refused-connection line

	metrics *brokerMetrics // see metrics.go
}

// New opens the data directory (running crash recovery on every local
// partition) and returns a broker ready to Serve.
func New(cfg Config) (*Broker, error) {
	cfg = cfg.withDefaults()
	if cfg.DataDir == "" {
		return nil, errors.New("broker: a data directory is required")
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("broker: data directory: %w", err)
	}
	b := &Broker{
		cfg:      cfg,
		meta:     cfg.Metadata,
		logger:   cfg.Logger,
		closing:  make(chan struct{}),
		conns:    map[*conn]struct{}{},
		perIP:    map[string]int{},
		stopSync: make(chan struct{}),
		budget:   newByteBudget(cfg.QueuedMaxRequestBytes),
	}
	if b.meta == nil {
		// The advertised address is only known once Serve has a listener;
		// standalone metadata reads it from there (see Self).
		m, err := cluster.OpenStandalone(cfg.DataDir, cluster.Broker{ID: cfg.NodeID})
		if err != nil {
			return nil, err
		}
		b.meta = &standaloneMeta{Standalone: m, b: b}
	}
	b.selfID = b.meta.Self().ID
	pids, err := openProducerIDs(cfg.DataDir, b.selfID)
	if err != nil {
		return nil, err
	}
	b.pids = pids
	b.metrics = newBrokerMetrics(b)
	b.logs = newPartitions(cfg.DataDir, b.metrics.logConfig(cfg.Log), b.logger)
	if err := b.openLocalPartitions(); err != nil {
		b.logs.closeAll()
		return nil, err
	}
	if err := b.startGroups(); err != nil {
		b.logs.closeAll()
		return nil, err
	}
	go b.followMetadata()
	return b, nil
}

// openLocalPartitions opens (and so recovers) every partition assigned to
// this broker, so that recovery happens at start-up and is logged there,
// not on a client's first request.
func (b *Broker) openLocalPartitions() error {
	self := b.selfID
	for _, t := range b.meta.Topics() {
		for p, leader := range t.Leaders {
			if leader != self {
				continue
			}
			if _, err := b.logs.get(t, int32(p)); err != nil {
				return err
			}
		}
	}
	return nil
}

// followMetadata deletes local partitions of topics that were deleted
// through another broker of the cluster.
func (b *Broker) followMetadata() {
	for {
		ch := b.meta.Changed()
		select {
		case <-b.stopSync:
			return
		case <-ch:
		}
		live := map[string]bool{}
		for _, t := range b.meta.Topics() {
			live[t.Name] = true
		}
		for _, topic := range b.logs.topics() {
			if !live[topic] {
				b.logger.Info("topic deleted from the cluster; removing its local partitions", "topic", topic)
				b.logs.deleteTopic(topic)
			}
		}
	}
}

// Serve accepts connections on ln until Close. It returns nil after Close.
func (b *Broker) Serve(ln net.Listener) error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return errors.New("broker: closed")
	}
	b.ln = ln
	b.mu.Unlock()
	b.logger.Info("broker listening", "addr", ln.Addr().String(), "node", b.selfID, "data_dir", b.cfg.DataDir)
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
				return err
			}
			// Out of descriptors, or any other failure of one accept:
			// keep serving the connections we have and try again.
			if delay == 0 {
				b.logger.Warn("accepting connections failed; retrying with backoff", "err", err)
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
			b.logger.Info("accepting connections again")
			delay = 0
		}
		c := newConn(b, nc)
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

// Addr is the address the broker listens on, or "" before Serve.
func (b *Broker) Addr() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ln == nil {
		return ""
	}
	return b.ln.Addr().String()
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
	if b.ln != nil {
		b.ln.Close()
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
	self := m.Standalone.Self()
	if host, port, ok := splitHostPort(m.b.Addr()); ok {
		self.Host, self.Port = host, port
	}
	return self
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
