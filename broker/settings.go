package broker

// The broker's settings (broker/settings) as the root wires and reads
// them: what the flags make (the static settings, and the read-only
// entries DescribeConfigs reports for them), and the names the root's
// hot paths read a setting by (Produce's limits, Fetch's codec check, the
// connection limits, the replication throttle).

import (
	"log/slog"
	"math"
	"path/filepath"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/brokerconfig"
	"github.com/tributary-io/tributary/broker/brokerlogger"
	"github.com/tributary-io/tributary/broker/configapi"
	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/settings"
	"github.com/tributary-io/tributary/broker/topicconfig"
	"github.com/tributary-io/tributary/cluster"
)

// newSettings builds b's settings over the flags, with the dynamic broker
// configs' store: the data directory's file, or ZooKeeper in a cluster.
// New calls it once the partition table exists, then Load.
func (b *Broker) newSettings() *settings.Broker {
	store := brokerconfig.NewFile(filepath.Join(b.cfg.DataDir, "broker-configs.json"), b.selfID)
	if zs, ok := b.meta.(zkSessioner); ok {
		store = brokerconfig.NewZooKeeper(cluster.NewZKBrokerConfigs(zs.Session()), b.selfID)
	}
	return settings.New(settings.Config{
		Self: b.selfID, Metadata: b.meta, Store: store,
		Static: b.staticBrokerSettings(), StaticEntries: b.staticConfigEntries(),
		Partitions: b.logs, MaxRequestBytes: b.cfg.MaxRequestBytes,
		Loggers: b.loggers(), Logger: b.logger,
		Lookup: func(name string) (cluster.Topic, int16) { return b.lookupTopic(name, false) },
	})
}

// staticBrokerSettings are the settings the flags make.
func (b *Broker) staticBrokerSettings() brokerconfig.Settings {
	return brokerconfig.Settings{
		Topic:         topicconfig.Settings{Log: b.staticLog.WithDefaults(), MaxMessageBytes: b.cfg.MaxMessageBytes, MinISR: b.cfg.MinInsyncReplicas, Unclean: b.cfg.UncleanLeaderElection},
		MaxConns:      b.cfg.MaxConnections,
		MaxConnsPerIP: b.cfg.MaxConnectionsPerIP,
		// Set at run time only, as Kafka's reassignment tool does.
		LeaderThrottleRate: math.MaxInt64, FollowerThrottleRate: math.MaxInt64, AlterLogDirsRate: math.MaxInt64,
	}
}

// staticConfigEntries are the settings only flags change, read-only: each
// STATIC_BROKER_CONFIG when a flag changed it, else DEFAULT_CONFIG.
func (b *Broker) staticConfigEntries() []configapi.Entry {
	builtin := Config{}.withDefaults()
	have, def := b.cfg.Log.WithDefaults(), log.Config{}.WithDefaults()
	long := func(name string, v, d int64) configapi.Entry {
		return configapi.Entry{Name: name, Value: strconv.FormatInt(v, 10), Type: kmsg.ConfigTypeLong, Source: sourceOf(v == d)}
	}
	ms := func(name string, v, d time.Duration) configapi.Entry {
		e := long(name, v.Milliseconds(), d.Milliseconds())
		e.Value = topicconfig.DurationMs(v)
		return e
	}
	entries := []configapi.Entry{
		long("broker.id", int64(b.selfID), 0),
		{Name: "log.dirs", Value: b.cfg.DataDir, Type: kmsg.ConfigTypeString, Source: kmsg.ConfigSourceStaticBrokerConfig},
		{Name: "auto.create.topics.enable", Value: strconv.FormatBool(b.cfg.AutoCreateTopics), Type: kmsg.ConfigTypeBoolean,
			Source: sourceOf(b.cfg.AutoCreateTopics)},
		long("num.partitions", int64(b.cfg.DefaultPartitions), int64(builtin.DefaultPartitions)),
		long("socket.request.max.bytes", int64(b.cfg.MaxRequestBytes), int64(builtin.MaxRequestBytes)),
		ms("log.retention.check.interval.ms", have.RetentionCheckInterval, def.RetentionCheckInterval),
		ms("producer.id.expiration.ms", have.ProducerIDExpiry, def.ProducerIDExpiry),
	}
	for i := range entries {
		entries[i].ReadOnly = true
		entries[i].Synonyms = []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{brokerconfig.Synonym(entries[i].Name, entries[i].Value, entries[i].Source)}
	}
	return entries
}

func sourceOf(isDefault bool) kmsg.ConfigSource {
	if isDefault {
		return kmsg.ConfigSourceDefaultConfig
	}
	return kmsg.ConfigSourceStaticBrokerConfig
}

// loggers are b's loggers (BROKER_LOGGER).
func (b *Broker) loggers() brokerlogger.Loggers {
	return brokerlogger.Loggers{Var: b.cfg.LogLevel, Logger: b.logger, Start: b.startLevel}
}

// currentLogLevel is the level in force.
func (b *Broker) currentLogLevel() slog.Level { return b.loggers().Current() }

// topicSettingsOf is a topic's settings (settings.TopicSettingsOf).
func (b *Broker) topicSettingsOf(configs map[string]string) topicconfig.Settings {
	return b.settings.TopicSettingsOf(configs)
}

// connLimits are max.connections and max.connections.per.ip as they are
// now (settings.ConnLimits).
func (b *Broker) connLimits() (maxConns, perIP int) { return b.settings.ConnLimits() }

// throttleRates are this broker's leader and follower replication rates
// (settings.ThrottleRates).
func (b *Broker) throttleRates() (leader, follower int64) { return b.settings.ThrottleRates() }

// fetchCodecCheck is the error code of a Fetch older than v10 from a topic
// whose compression.type (its own or the broker's) is zstd: such clients
// predate zstd, so Kafka answers UNSUPPORTED_COMPRESSION_TYPE rather than
// send batches they cannot read. As in Kafka the topic's setting decides,
// not the batches, so the check costs no read; a producer topic holds zstd
// only from Produce v7+ clients, which fetch with v10+ themselves.
func (b *Broker) fetchCodecCheck(t cluster.Topic) int16 {
	if codec, ok := b.topicSettingsOf(t.Configs).Log.Compression.Codec(); ok && codec == log.CodecZstd {
		return kerr.UnsupportedCompressionType.Code
	}
	return 0
}

// produceLimits are the per-topic settings Produce checks and applies.
type produceLimits struct {
	maxMessageBytes int32
	logAppendTime   bool
	recompress      bool      // store batches in codec (compression.type)
	codec           log.Codec // the topic's codec when recompress is set
}

// produceLimitsFor reads them from the topic's settings, the broker's
// defaults (compression.type included) where the topic sets nothing.
func (b *Broker) produceLimitsFor(t cluster.Topic) produceLimits {
	s := b.topicSettingsOf(t.Configs)
	codec, recompress := s.Log.Compression.Codec()
	return produceLimits{maxMessageBytes: s.MaxMessageBytes, logAppendTime: s.LogAppendTime, recompress: recompress, codec: codec}
}
