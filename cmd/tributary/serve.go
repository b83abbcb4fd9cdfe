package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/broker/group"
	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/txn"
)

// brokerFlags are the settings shared by `standalone` and `broker`, named
// after Kafka's where one exists so that operators recognise them.
type brokerFlags struct {
	dataDir             string
	partitionMetrics    string
	listen              string
	autoCreate          bool
	partitions          int
	segmentBytes        int64
	segmentAge          time.Duration
	intervalFlush       bool
	flushMessages       int64
	flushInterval       time.Duration
	retention           time.Duration
	retentionBytes      int64
	maxRequestBytes     int
	maxMessageBytes     int
	producerExpiry      time.Duration
	maxProducerIDs      int
	internalClients     string
	scrubInterval       time.Duration
	scrubRate           int64
	maxTopics           int
	autoCreateMaxTopics int
	autoCreateRate      float64
	maxPartitions       int
	compression         log.Compression
	cleaner             log.CleanerConfig
	groups              group.Config
	txns                txn.Config
	conns               connFlags
	security            securityFlags
	metricsListen       *string
}

// securityFlags are the listeners and what secures them.
type securityFlags struct {
	listeners   string
	advertised  string
	tlsCert     string
	tlsKey      string
	tlsClientCA string
	mechanisms  string
	authorizer  bool
	superUsers  string
}

// connFlags are the connection-layer limits (see broker.Config).
type connFlags struct {
	maxConnections      int
	maxConnectionsPerIP int
	maxIdle             time.Duration
	maxReauthMillis     int64
	queuedMaxBytes      int64
	queuedMaxBytesPerIP int64
	queuedMaxBytesPerPr int64
	saslMaxReceive      int
	maxDecompressMemory int64
	maxIdleUnauth       time.Duration
}

func (f *brokerFlags) register(fs *flag.FlagSet, defaultListen string) {
	d := log.Config{}.WithDefaults()
	f.metricsListen = metricsFlag(fs)
	fs.StringVar(&f.dataDir, "data-dir", "./data", "directory of the partition logs")
	fs.StringVar(&f.listen, "listen", defaultListen, "Kafka protocol listen address `host:port` (also the address advertised to clients)")
	fs.BoolVar(&f.autoCreate, "auto-create-topics", true, "create unknown topics on first use (auto.create.topics.enable)")
	fs.IntVar(&f.partitions, "partitions", 1, "partitions of auto-created topics (num.partitions)")
	fs.Int64Var(&f.segmentBytes, "segment-bytes", d.SegmentBytes, "roll a segment at this size (segment.bytes)")
	fs.DurationVar(&f.segmentAge, "segment-age", d.SegmentAge, "roll a segment when its first batch is this old (segment.ms)")
	fs.Func("flush-policy", "`continuous` (default): fsync a partition as soon as its previous fsync ends, so consumers see data within milliseconds; interval: the paper's batching, fsync only after --flush-messages or --flush-interval", func(v string) error {
		switch v {
		case "continuous", "interval":
			f.intervalFlush = v == "interval"
			return nil
		}
		return fmt.Errorf("%q is not a flush policy: use continuous or interval", v)
	})
	fs.Int64Var(&f.flushMessages, "flush-messages", d.FlushMessages, "fsync after this many unflushed messages (flush.messages; an upper bound under --flush-policy continuous)")
	fs.DurationVar(&f.flushInterval, "flush-interval", d.FlushInterval, "fsync unflushed data at least this often (flush.ms; an upper bound under --flush-policy continuous)")
	fs.DurationVar(&f.retention, "retention", d.RetentionAge, "delete segments older than this; negative keeps forever (retention.ms)")
	fs.Int64Var(&f.retentionBytes, "retention-bytes", d.RetentionBytes, "delete old segments while a partition is larger than this; -1: no limit (retention.bytes)")
	fs.IntVar(&f.maxRequestBytes, "max-request-bytes", 100<<20, "largest request frame accepted (socket.request.max.bytes)")
	fs.IntVar(&f.maxMessageBytes, "max-message-bytes", 1<<20+12, "largest record batch accepted (message.max.bytes)")
	fs.DurationVar(&f.producerExpiry, "producer-id-expiration", d.ProducerIDExpiry, "forget an idempotent producer's sequences after it is idle this long (producer.id.expiration.ms)")
	fs.IntVar(&f.maxProducerIDs, "max-producer-ids", d.MaxProducerIDs, "idempotent producer ids tracked per partition; past it the least recently active is forgotten")
	fs.IntVar(&f.conns.maxConnections, "max-connections", 10000, "connections served at once; more are refused (max.connections)")
	fs.IntVar(&f.conns.maxConnectionsPerIP, "max-connections-per-ip", 0, "connections served at once from one IP address; 0: a tenth of max.connections as it is now (max.connections.per.ip)")
	fs.DurationVar(&f.conns.maxIdle, "connections-max-idle", 10*time.Minute, "close connections idle this long (connections.max.idle.ms)")
	fs.Int64Var(&f.conns.maxReauthMillis, "connections-max-reauth-ms", 0, "SASL clients must log in again on their connection within this many milliseconds or are disconnected at their next request; 0: never (connections.max.reauth.ms)")
	fs.Int64Var(&f.conns.queuedMaxBytes, "queued-max-request-bytes", 512<<20, "bytes all requests in flight may hold; more wait (queued.max.request.bytes)")
	fs.Int64Var(&f.conns.queuedMaxBytesPerIP, "queued-max-request-bytes-per-ip", 0, "bytes the requests of one IP address may hold at once; 0: a quarter of --queued-max-request-bytes")
	fs.Int64Var(&f.conns.maxDecompressMemory, "max-decompression-memory", 256<<20, "bytes that records decompressed to be re-encoded in a topic's compression.type may take across all partitions; more wait")
	fs.Int64Var(&f.conns.queuedMaxBytesPerPr, "queued-max-request-bytes-per-principal", 0, "bytes the requests of one logged-in principal (not ANONYMOUS) may hold at once, from any address; 0: a quarter of --queued-max-request-bytes")
	fs.IntVar(&f.conns.saslMaxReceive, "sasl-max-receive-size", 512<<10, "largest request frame on a SASL listener before login; larger closes the connection (sasl.server.max.receive.size)")
	fs.DurationVar(&f.conns.maxIdleUnauth, "connections-max-idle-unauthenticated", 10*time.Second, "close connections of SASL listeners that have not logged in and are idle this long")
	fs.StringVar(&f.security.listeners, "listeners", "", "listeners `PROTOCOL://host:port,...` with PROTOCOL one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL (listeners); replaces --listen")
	fs.StringVar(&f.security.advertised, "advertised-listeners", "", "addresses told to clients, `PROTOCOL://host:port,...`, one per listener that clients must reach elsewhere than where it binds (advertised.listeners)")
	fs.StringVar(&f.security.tlsCert, "tls-cert", "", "PEM certificate chain of the SSL and SASL_SSL listeners; re-read on SIGHUP")
	fs.StringVar(&f.security.tlsKey, "tls-key", "", "PEM private key of --tls-cert; re-read on SIGHUP")
	fs.StringVar(&f.security.tlsClientCA, "tls-client-ca", "", "PEM CA certificates; when set, TLS clients must present a certificate they signed (principal User:<CN>)")
	fs.StringVar(&f.security.mechanisms, "sasl-mechanisms", "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512", "SASL mechanisms offered on SASL listeners; users are set with `tributary users`")
	fs.BoolVar(&f.security.authorizer, "authorizer", false, "enforce ACLs on every request (deny when no ACL matches); manage them with CreateAcls/DescribeAcls/DeleteAcls (kafka-acls, kadm)")
	fs.StringVar(&f.security.superUsers, "super-users", "", "`User:a;User:b`: principals that pass every ACL check (super.users)")
	fs.StringVar(&f.internalClients, "internal-clients", strings.Join(broker.DefaultInternalClients, ","),
		"comma-separated client ids admitted to write and delete the internal topics _schemas and _audit; a guard against accidents and buggy clients, not attackers (client ids are not authenticated)")
	fs.DurationVar(&f.scrubInterval, "scrub-interval", 24*time.Hour, "re-verify each partition's sealed segments this often (the first pass at a random moment within it) and repair or quarantine damaged batches; 0: off")
	fs.Int64Var(&f.scrubRate, "scrub-rate", log.DefaultScrubRate, "bytes a second all the broker's scrubbing may read together")
	fs.IntVar(&f.maxTopics, "max-topics", 10000, "refuse creating topics beyond this many; -1: no limit")
	fs.IntVar(&f.autoCreateMaxTopics, "auto-create-max-topics", 0, "auto-create topics only while the cluster has fewer than this many, so CreateTopics keeps room; 0: half of --max-topics, -1: no cap of its own")
	fs.Float64Var(&f.autoCreateRate, "auto-create-rate", 10, "topics auto-created a second at most (ten seconds' worth of burst); more get THROTTLING_QUOTA_EXCEEDED; -1: no limit")
	fs.StringVar(&f.partitionMetrics, "partition-metrics", broker.PartitionMetricsPartition, "`partition`: the partition-level metrics (offsets, size, lag, ...) have a series per partition; topic: one per topic, summed over its partitions (lags: the largest), for brokers with thousands of partitions")
	fs.IntVar(&f.maxPartitions, "max-partitions", 20000, "refuse creating topics that would make this broker host more partitions; -1: no limit")
	fs.TextVar(&f.compression, "compression-type", log.CompressionProducer, "codec batches are stored in: `producer` (as each producer sent them), uncompressed, gzip, snappy, lz4 or zstd; the default of topics that set no compression.type (compression.type)")
	fs.IntVar(&f.cleaner.Threads, "log-cleaner-threads", log.DefaultCleanerThreads, "compacted logs cleaned at once (log.cleaner.threads)")
	fs.Int64Var(&f.cleaner.DedupeBufferBytes, "log-cleaner-dedupe-buffer-size", log.DefaultCleanerBufferBytes,
		"bytes of the cleaner's offset maps, split across its threads; 24 bytes a key, a dirty section with more keys is cleaned in parts (log.cleaner.dedupe.buffer.size)")
	fs.DurationVar(&f.cleaner.Backoff, "log-cleaner-backoff", log.DefaultCleanerBackoff, "how long the cleaner waits when no log needs cleaning (log.cleaner.backoff.ms)")
	fs.DurationVar(&f.groups.ConsumerSessionTimeout, "group-consumer-session-timeout", 45*time.Second,
		"a member of a consumer-protocol group (group.protocol=consumer) that does not heartbeat this long is removed and its partitions reassigned (group.consumer.session.timeout.ms)")
	fs.DurationVar(&f.groups.ConsumerHeartbeatInterval, "group-consumer-heartbeat-interval", 5*time.Second,
		"interval consumer-protocol members heartbeat at: how soon one learns of partitions another released; below --group-consumer-session-timeout (group.consumer.heartbeat.interval.ms)")
	fs.DurationVar(&f.txns.MaxTimeout, "transaction-max-timeout", 15*time.Minute,
		"longest transaction.timeout.ms a transactional producer may ask for; a transaction open longer is aborted by its coordinator (transaction.max.timeout.ms)")
	fs.DurationVar(&f.txns.IDExpiration, "transactional-id-expiration", 7*24*time.Hour,
		"a transactional id with no transaction open for this long is forgotten: its next producer starts with a new producer id (transactional.id.expiration.ms)")
	f.groups.MigrationPolicy = group.MigrationBidirectional
	fs.Func("group-consumer-migration-policy", "whether a live group is converted between the classic and the consumer protocols as its members are rolled from group.protocol=classic to consumer and back: bidirectional (default), upgrade, downgrade or disabled (group.consumer.migration.policy)",
		func(v string) error {
			if !group.ValidMigrationPolicy(v) {
				return fmt.Errorf("%q: want bidirectional, upgrade, downgrade or disabled", v)
			}
			f.groups.MigrationPolicy = v
			return nil
		})
}

func (f *brokerFlags) config() broker.Config {
	return broker.Config{
		LogLevel:          logLevelVar,
		DataDir:           f.dataDir,
		AutoCreateTopics:  f.autoCreate,
		DefaultPartitions: int32(f.partitions),
		MaxRequestBytes:   int32(f.maxRequestBytes),
		MaxMessageBytes:   int32(f.maxMessageBytes),

		MaxConnections:                    f.conns.maxConnections,
		MaxConnectionsPerIP:               f.conns.maxConnectionsPerIP,
		ConnectionsMaxIdle:                f.conns.maxIdle,
		ConnectionsMaxReauth:              time.Duration(f.conns.maxReauthMillis) * time.Millisecond,
		QueuedMaxRequestBytes:             f.conns.queuedMaxBytes,
		QueuedMaxRequestBytesPerIP:        f.conns.queuedMaxBytesPerIP,
		QueuedMaxRequestBytesPerPrincipal: f.conns.queuedMaxBytesPerPr,
		SASLMaxReceiveSize:                int32(min(f.conns.saslMaxReceive, 1<<30)),
		ConnectionsMaxIdleUnauthenticated: f.conns.maxIdleUnauth,
		MaxDecompressionMemory:            f.conns.maxDecompressMemory,
		MaxTopics:                         f.maxTopics,
		AutoCreateMaxTopics:               f.autoCreateMaxTopics,
		AutoCreateRate:                    f.autoCreateRate,
		MaxPartitions:                     f.maxPartitions,
		PartitionMetrics:                  f.partitionMetrics,
		Groups:                            f.groups,
		Transactions:                      f.txns,
		Log: log.Config{
			SegmentBytes:     f.segmentBytes,
			SegmentAge:       f.segmentAge,
			IntervalFlush:    f.intervalFlush,
			FlushMessages:    f.flushMessages,
			FlushInterval:    f.flushInterval,
			RetentionAge:     f.retention,
			RetentionBytes:   f.retentionBytes,
			ProducerIDExpiry: f.producerExpiry,
			MaxProducerIDs:   f.maxProducerIDs,
			ScrubInterval:    f.scrubInterval,
			ScrubRate:        f.scrubRate,
			Compression:      f.compression,
			Cleaner:          f.cleaner,
		},
		Logger:          slog.Default(),
		InternalClients: append([]string{}, splitList(f.internalClients)...), // empty admits none
		TLS: broker.TLSFiles{
			CertFile:     f.security.tlsCert,
			KeyFile:      f.security.tlsKey,
			ClientCAFile: f.security.tlsClientCA,
		},
		SASLMechanisms: splitList(f.security.mechanisms),
		Authorizer:     f.security.authorizer,
		SuperUsers:     superUsers(f.security.superUsers),
	}
}

// superUsers splits super.users, which Kafka separates with semicolons.
func superUsers(s string) []string {
	var out []string
	for _, u := range strings.Split(s, ";") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, u)
		}
	}
	return out
}

// openListeners binds every listener: --listeners, else one PLAINTEXT
// listener on --listen.
func (f *brokerFlags) openListeners() ([]broker.Listener, []net.Listener, error) {
	ls := []broker.Listener{{Protocol: broker.Plaintext, Addr: f.listen}}
	if f.security.listeners != "" {
		var err error
		if ls, err = broker.ParseListeners(f.security.listeners); err != nil {
			return nil, nil, err
		}
	}
	if f.security.advertised != "" {
		if err := broker.Advertise(ls, f.security.advertised); err != nil {
			return nil, nil, err
		}
	}
	lns := make([]net.Listener, 0, len(ls))
	for _, l := range ls {
		if l.Protocol.TLS() && f.security.tlsCert == "" {
			closeAll(lns)
			return nil, nil, fmt.Errorf("listener %s needs --tls-cert and --tls-key", l)
		}
		ln, err := net.Listen("tcp", l.Addr)
		if err != nil {
			closeAll(lns)
			return nil, nil, fmt.Errorf("listener %s: %w", l, err)
		}
		lns = append(lns, ln)
	}
	return ls, lns, nil
}

func closeAll(lns []net.Listener) {
	for _, ln := range lns {
		ln.Close()
	}
}

// describeListeners is the start-up line's list of bound listeners.
func describeListeners(ls []broker.Listener, lns []net.Listener) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = string(l.Protocol) + "://" + lns[i].Addr().String()
	}
	return strings.Join(parts, ",")
}

// serveBroker runs b on its listeners until ctx ends, then shuts it down
// gracefully. SIGHUP reloads the TLS certificate.
func serveBroker(ctx context.Context, b *broker.Broker, ls []broker.Listener, lns []net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- b.ServeListeners(ls, lns) }()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for waiting := true; waiting; {
		select {
		case err := <-errc:
			b.Close()
			return fmt.Errorf("serving: %w", err)
		case <-hup:
			b.ReloadTLS() // logs the outcome; a bad pair keeps the old one
		case <-ctx.Done():
			waiting = false
		}
	}
	slog.Info("shutting down: finishing in-flight requests and flushing")
	return b.Close()
}
