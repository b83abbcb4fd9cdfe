package broker

// Topic configs: the Kafka names a user may set per topic (CreateTopics,
// AlterConfigs, IncrementalAlterConfigs), what each changes, and how each is
// reported (CreateTopics and DescribeConfigs). A name Tributary does not
// implement, or a value it cannot honour, fails with INVALID_CONFIG naming
// the key, so nobody believes they got what they asked for.

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/cluster"
)

// topicSettings is everything a topic's configs decide: its partitions'
// storage configuration and the checks the broker makes on produce.
type topicSettings struct {
	log             log.Config
	maxMessageBytes int32 // largest record batch (max.message.bytes)
	logAppendTime   bool  // the broker stamps batches with its own clock
	minISR          int   // min.insync.replicas (0 reads as 1)
	// unclean is unclean.leader.election.enable. The controller acts on
	// it (cluster.ZooKeeper.SetUncleanLeaderElection takes the broker
	// default; a topic's own value is read from its configs there).
	unclean bool
	// leader/follower.replication.throttled.replicas as set
	// (replica_throttle.go reads them from the topic's configs).
	leaderThrottled, followerThrottled string
}

// topicConfigDef is one topic setting: its type as DescribeConfigs reports
// it, how a value changes the settings, and the effective value.
type topicConfigDef struct {
	typ kmsg.ConfigType
	set func(s *topicSettings, v string) error
	get func(s topicSettings) string
}

var topicConfigDefs = map[string]topicConfigDef{
	cluster.LeaderThrottledReplicas:   throttledReplicasDef(cluster.LeaderThrottledReplicas, func(s *topicSettings) *string { return &s.leaderThrottled }),
	cluster.FollowerThrottledReplicas: throttledReplicasDef(cluster.FollowerThrottledReplicas, func(s *topicSettings) *string { return &s.followerThrottled }),
	"retention.ms":                    durationDef("retention.ms", func(c *log.Config) *time.Duration { return &c.RetentionAge }, true),
	"retention.bytes":                 int64Def("retention.bytes", func(c *log.Config) *int64 { return &c.RetentionBytes }, -1, 1<<62),
	"segment.bytes":                   int64Def("segment.bytes", func(c *log.Config) *int64 { return &c.SegmentBytes }, 1024, log.MaxSegmentBytes),
	"segment.ms":                      segmentMsDef,
	"flush.messages":                  int64Def("flush.messages", func(c *log.Config) *int64 { return &c.FlushMessages }, 1, 1<<62),
	"flush.ms":                        durationDef("flush.ms", func(c *log.Config) *time.Duration { return &c.FlushInterval }, false),
	"index.interval.bytes":            int64Def("index.interval.bytes", func(c *log.Config) *int64 { return &c.IndexIntervalBytes }, 1, 1<<31-1),
	"max.message.bytes": {
		typ: kmsg.ConfigTypeInt,
		set: func(s *topicSettings, v string) error {
			n, err := parseBounded("max.message.bytes", v, 1, 1<<31-1)
			s.maxMessageBytes = int32(n)
			return err
		},
		get: func(s topicSettings) string { return strconv.Itoa(int(s.maxMessageBytes)) },
	},
	"message.timestamp.type": {
		typ: kmsg.ConfigTypeString,
		set: func(s *topicSettings, v string) error {
			switch v {
			case "CreateTime":
				s.logAppendTime = false
			case "LogAppendTime":
				s.logAppendTime = true
			default:
				return fmt.Errorf("config message.timestamp.type=%s: use CreateTime or LogAppendTime", v)
			}
			return nil
		},
		get: func(s topicSettings) string {
			if s.logAppendTime {
				return "LogAppendTime"
			}
			return "CreateTime"
		},
	},
	"cleanup.policy": {
		typ: kmsg.ConfigTypeList,
		set: func(s *topicSettings, v string) error {
			var compact, del bool
			for _, p := range strings.Split(v, ",") {
				switch strings.TrimSpace(p) {
				case "compact":
					compact = true
				case "delete":
					del = true
				default:
					return fmt.Errorf("config cleanup.policy=%s: use delete, compact or compact,delete", v)
				}
			}
			switch {
			case compact && del:
				s.log.CleanupPolicy = log.PolicyCompactDelete
			case compact:
				s.log.CleanupPolicy = log.PolicyCompact
			default:
				s.log.CleanupPolicy = log.PolicyDelete
			}
			return nil
		},
		get: func(s topicSettings) string { return s.log.CleanupPolicy.String() },
	},
	"min.cleanable.dirty.ratio": {
		typ: kmsg.ConfigTypeDouble,
		set: func(s *topicSettings, v string) error {
			r, err := strconv.ParseFloat(v, 64)
			if err != nil || !(r >= 0 && r <= 1) { // NaN fails both
				return fmt.Errorf("config min.cleanable.dirty.ratio=%q: must be a number between 0 and 1", v)
			}
			// log.Config reads zero as "default": the smallest positive
			// ratio cleans whenever anything is dirty, as Kafka's 0 does.
			s.log.MinCleanableDirtyRatio = max(r, 1e-9)
			return nil
		},
		get: func(s topicSettings) string {
			if s.log.MinCleanableDirtyRatio <= 1e-9 {
				return "0.0"
			}
			return strconv.FormatFloat(s.log.MinCleanableDirtyRatio, 'f', -1, 64)
		},
	},
	"min.compaction.lag.ms": durationDefFrom("min.compaction.lag.ms", func(c *log.Config) *time.Duration { return &c.MinCompactionLag }, 0),
	"delete.retention.ms":   durationDefFrom("delete.retention.ms", func(c *log.Config) *time.Duration { return &c.DeleteRetention }, 0),
	"max.compaction.lag.ms": {
		typ: kmsg.ConfigTypeLong,
		set: func(s *topicSettings, v string) error {
			n, err := parseBounded("max.compaction.lag.ms", v, 1, math.MaxInt64)
			switch {
			case err != nil:
				return err
			case n >= math.MaxInt64/int64(time.Millisecond):
				s.log.MaxCompactionLag = math.MaxInt64 // Kafka's default: never
			default:
				s.log.MaxCompactionLag = time.Duration(n) * time.Millisecond
			}
			return nil
		},
		get: func(s topicSettings) string {
			if s.log.MaxCompactionLag == math.MaxInt64 {
				return strconv.FormatInt(math.MaxInt64, 10)
			}
			return durationMs(s.log.MaxCompactionLag)
		},
	},
	"compression.type": {
		// log.Config.Compression: produce stores batches in it, the
		// cleaner rebuilds them in it, and Fetch v9 and older is refused
		// on a zstd topic (fetch.go).
		typ: kmsg.ConfigTypeString,
		set: func(s *topicSettings, v string) error {
			c, err := log.ParseCompression(v)
			if err != nil {
				return fmt.Errorf("config %w", err)
			}
			s.log.Compression = c
			return nil
		},
		get: func(s topicSettings) string { return s.log.Compression.String() },
	},
	"min.insync.replicas":            minISRDef,
	"unclean.leader.election.enable": boolDef("unclean.leader.election.enable", func(s *topicSettings) *bool { return &s.unclean }),
}

// segmentMsDef is segment.ms. A value below MinSegmentMs is refused when
// set (topicconfig_bounds.go); one stored before that floor existed reads
// as the floor, so a topic that rolled a segment per batch stops doing so.
var segmentMsDef = func() topicConfigDef {
	d := durationDef("segment.ms", func(c *log.Config) *time.Duration { return &c.SegmentAge }, false)
	set := d.set
	d.set = func(s *topicSettings, v string) error {
		err := set(s, v)
		s.log.SegmentAge = max(s.log.SegmentAge, MinSegmentMs*time.Millisecond)
		return err
	}
	return d
}()

// boolDef is a boolean: true or false in any case, as Kafka reads them.
func boolDef(name string, field func(*topicSettings) *bool) topicConfigDef {
	return topicConfigDef{
		typ: kmsg.ConfigTypeBoolean,
		set: func(s *topicSettings, v string) error {
			switch strings.ToLower(strings.TrimSpace(v)) {
			case "true":
				*field(s) = true
			case "false":
				*field(s) = false
			default:
				return fmt.Errorf("config %s=%q: must be true or false", name, v)
			}
			return nil
		},
		get: func(s topicSettings) string { return strconv.FormatBool(*field(&s)) },
	}
}

func durationDef(name string, field func(*log.Config) *time.Duration, forever bool) topicConfigDef {
	if forever {
		return durationDefFrom(name, field, -1)
	}
	return durationDefFrom(name, field, 1)
}

// durationDefFrom is a duration in ms of at least lo; -1 means forever.
func durationDefFrom(name string, field func(*log.Config) *time.Duration, lo int64) topicConfigDef {
	return topicConfigDef{
		typ: kmsg.ConfigTypeLong,
		set: func(s *topicSettings, v string) error {
			n, err := parseBounded(name, v, lo, 1<<62)
			switch {
			case err != nil:
				return err
			case n < 0:
				*field(&s.log) = -1
			case n == 0:
				// log.Config reads zero as "default"; a nanosecond reads
				// back as 0 ms and expires everything, as Kafka's 0 does.
				*field(&s.log) = time.Nanosecond
			default:
				*field(&s.log) = time.Duration(n) * time.Millisecond
			}
			return nil
		},
		get: func(s topicSettings) string { return durationMs(*field(&s.log)) },
	}
}

func int64Def(name string, field func(*log.Config) *int64, lo, hi int64) topicConfigDef {
	return topicConfigDef{
		typ: kmsg.ConfigTypeLong,
		set: func(s *topicSettings, v string) error {
			n, err := parseBounded(name, v, lo, hi)
			*field(&s.log) = n
			return err
		},
		get: func(s topicSettings) string { return strconv.FormatInt(*field(&s.log), 10) },
	}
}

func parseBounded(name, v string, lo, hi int64) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("config %s=%q: not an integer", name, v)
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("config %s=%d: must be between %d and %d", name, n, lo, hi)
	}
	return n, nil
}

func durationMs(d time.Duration) string {
	if d < 0 {
		return "-1"
	}
	return strconv.FormatInt(d.Milliseconds(), 10)
}

// brokerTopicDefaults are the settings of a topic that sets nothing: the
// dynamic broker configs over the broker's flags over the built-in
// defaults (dynamicconfig.go).
func (b *Broker) brokerTopicDefaults() topicSettings {
	if st := b.dyn.state.Load(); st != nil {
		return st.eff.topic
	}
	return b.staticBrokerSettings().topic // during New, before they are read
}

// builtinTopicDefaults are the settings of a broker started without flags:
// what decides whether a value is DEFAULT_CONFIG or STATIC_BROKER_CONFIG.
func builtinTopicDefaults() topicSettings {
	return topicSettings{log: log.Config{}.WithDefaults(), maxMessageBytes: Config{}.withDefaults().MaxMessageBytes}
}

// topicSettingsOf is a topic's settings: its configs over the broker's
// defaults (brokerTopicDefaults), or the broker's defaults alone if the
// configs do not apply (they were refused when set, so that means a
// broker of another version wrote them).
func (b *Broker) topicSettingsOf(configs map[string]string) topicSettings {
	base := b.brokerTopicDefaults()
	if len(configs) == 0 {
		return base
	}
	if s, err := applyTopicConfigs(base, configs); err == nil {
		return s
	}
	return base
}

// fetchCodecCheck is the error code of a Fetch older than v10 from a topic
// whose compression.type (its own or the broker's) is zstd: such clients
// predate zstd, so Kafka answers UNSUPPORTED_COMPRESSION_TYPE rather than
// send batches they cannot read. As in Kafka the topic's setting decides,
// not the batches, so the check costs no read; a producer topic holds zstd
// only from Produce v7+ clients, which fetch with v10+ themselves.
func (b *Broker) fetchCodecCheck(t cluster.Topic) int16 {
	if codec, ok := b.topicSettingsOf(t.Configs).log.Compression.Codec(); ok && codec == log.CodecZstd {
		return kerr.UnsupportedCompressionType.Code
	}
	return 0
}

// applyTopicConfigs applies a topic's configs on top of base, in name order,
// naming the first offending key.
func applyTopicConfigs(base topicSettings, configs map[string]string) (topicSettings, error) {
	s := base
	keys := make([]string, 0, len(configs))
	for k := range configs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		def, ok := topicConfigDefs[k]
		if !ok {
			return s, fmt.Errorf("unknown topic config %q (supported: %s)", k, supportedConfigNames())
		}
		if err := def.set(&s, configs[k]); err != nil {
			return s, err
		}
	}
	return s, nil
}

// checkTopicConfigs validates a topic's config set.
func checkTopicConfigs(configs map[string]string) error {
	_, err := applyTopicConfigs(builtinTopicDefaults(), configs)
	return err
}

// topicLogConfig applies a topic's configs to the broker's default storage
// configuration.
func topicLogConfig(base log.Config, configs map[string]string) (log.Config, error) {
	s, err := applyTopicConfigs(topicSettings{log: base, maxMessageBytes: 1}, configs)
	return s.log, err
}

func supportedConfigNames() string {
	names := make([]string, 0, len(topicConfigDefs))
	for k := range topicConfigDefs {
		names = append(names, k)
	}
	sort.Strings(names)
	return fmt.Sprint(names)
}

// configEntry is one reported setting.
type configEntry struct {
	name     string
	value    string
	typ      kmsg.ConfigType
	source   kmsg.ConfigSource
	readOnly bool
	// synonyms are the values of every level the setting has, highest
	// precedence first (DescribeConfigs' include_synonyms).
	synonyms []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym
}

// topicConfigEntries reports every topic setting with its effective value
// and where that value comes from: the topic (DYNAMIC_TOPIC_CONFIG), a
// dynamic broker config (DYNAMIC_BROKER_CONFIG, or
// DYNAMIC_DEFAULT_BROKER_CONFIG for the cluster-wide default), a broker
// flag (STATIC_BROKER_CONFIG) or the built-in default (DEFAULT_CONFIG).
// Sorted by name.
func (b *Broker) topicConfigEntries(configs map[string]string) ([]configEntry, error) {
	broker := b.brokerTopicDefaults()
	eff, err := applyTopicConfigs(broker, configs)
	if err != nil {
		return nil, err
	}
	st := b.dynamicNow()
	builtin := builtinTopicDefaults()
	out := make([]configEntry, 0, len(topicConfigDefs))
	for name, def := range topicConfigDefs {
		e := configEntry{name: name, value: def.get(eff), typ: def.typ, source: kmsg.ConfigSourceDefaultConfig}
		v, own := configs[name]
		if own {
			e.synonyms = append(e.synonyms, synonym(name, v, kmsg.ConfigSourceDynamicTopicConfig))
		}
		if d, ok := topicDefaultSetting(name); ok && st != nil {
			e.source = st.levelOf(d)
			e.synonyms = append(e.synonyms, st.synonyms(d, true)...)
		} else {
			if def.get(broker) != def.get(builtin) {
				e.source = kmsg.ConfigSourceStaticBrokerConfig
			}
			e.synonyms = append(e.synonyms, synonym(name, def.get(builtin), kmsg.ConfigSourceDefaultConfig))
		}
		if own {
			e.source = kmsg.ConfigSourceDynamicTopicConfig
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

func synonym(name, value string, src kmsg.ConfigSource) kmsg.DescribeConfigsResponseResourceConfigConfigSynonym {
	syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
	syn.Name, syn.Value, syn.Source = name, kmsg.StringPtr(value), src
	return syn
}
