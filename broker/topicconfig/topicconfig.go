// Package topicconfig is the model of a topic's configs: the Kafka names a
// user may set per topic (CreateTopics, AlterConfigs,
// IncrementalAlterConfigs), what each changes in a topic's Settings, and
// the value each reports (CreateTopics, DescribeConfigs). It knows nothing
// of the broker's defaults or of where configs are stored; the broker
// applies a topic's configs over its own defaults (broker/settings).
//
// What a caller may rely on:
//   - A name Tributary does not implement, or a value it cannot honour,
//     fails with an error naming the key, so nobody believes they got what
//     they asked for (the broker answers INVALID_CONFIG with it).
//   - Apply is deterministic: configs apply in name order and the first
//     offending key is the one named.
//   - A value stored before a floor existed still applies, read as the
//     floor (segment.ms; see MinSegmentMs).
package topicconfig

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/cluster"
)

// Settings is everything a topic's configs decide: its partitions'
// storage configuration and the checks the broker makes on produce.
type Settings struct {
	Log             log.Config
	MaxMessageBytes int32 // largest record batch (max.message.bytes)
	LogAppendTime   bool  // the broker stamps batches with its own clock
	MinISR          int   // min.insync.replicas (0 reads as 1)
	// unclean is unclean.leader.election.enable. The controller acts on
	// it (cluster.ZooKeeper.SetUncleanLeaderElection takes the broker
	// default; a topic's own value is read from its configs there).
	Unclean bool
	// leader/follower.replication.throttled.replicas as set
	// (broker/replication/throttle.go reads them from the topic's configs).
	LeaderThrottled, FollowerThrottled string
}

// def is one topic setting: its type as DescribeConfigs reports
// it, how a value changes the settings, and the effective value.
type def struct {
	typ kmsg.ConfigType
	set func(s *Settings, v string) error
	get func(s Settings) string
}

var defs = map[string]def{
	cluster.LeaderThrottledReplicas:   throttledReplicasDef(cluster.LeaderThrottledReplicas, func(s *Settings) *string { return &s.LeaderThrottled }),
	cluster.FollowerThrottledReplicas: throttledReplicasDef(cluster.FollowerThrottledReplicas, func(s *Settings) *string { return &s.FollowerThrottled }),
	"retention.ms":                    durationDef("retention.ms", func(c *log.Config) *time.Duration { return &c.RetentionAge }, true),
	"retention.bytes":                 int64Def("retention.bytes", func(c *log.Config) *int64 { return &c.RetentionBytes }, -1, 1<<62),
	"segment.bytes":                   int64Def("segment.bytes", func(c *log.Config) *int64 { return &c.SegmentBytes }, 1024, log.MaxSegmentBytes),
	"segment.ms":                      segmentMsDef,
	"flush.messages":                  int64Def("flush.messages", func(c *log.Config) *int64 { return &c.FlushMessages }, 1, 1<<62),
	"flush.ms":                        durationDef("flush.ms", func(c *log.Config) *time.Duration { return &c.FlushInterval }, false),
	"index.interval.bytes":            int64Def("index.interval.bytes", func(c *log.Config) *int64 { return &c.IndexIntervalBytes }, 1, 1<<31-1),
	"max.message.bytes": {
		typ: kmsg.ConfigTypeInt,
		set: func(s *Settings, v string) error {
			n, err := ParseBounded("max.message.bytes", v, 1, 1<<31-1)
			s.MaxMessageBytes = int32(n)
			return err
		},
		get: func(s Settings) string { return strconv.Itoa(int(s.MaxMessageBytes)) },
	},
	"message.timestamp.type": {
		typ: kmsg.ConfigTypeString,
		set: func(s *Settings, v string) error {
			switch v {
			case "CreateTime":
				s.LogAppendTime = false
			case "LogAppendTime":
				s.LogAppendTime = true
			default:
				return fmt.Errorf("config message.timestamp.type=%s: use CreateTime or LogAppendTime", v)
			}
			return nil
		},
		get: func(s Settings) string {
			if s.LogAppendTime {
				return "LogAppendTime"
			}
			return "CreateTime"
		},
	},
	"cleanup.policy": {
		typ: kmsg.ConfigTypeList,
		set: func(s *Settings, v string) error {
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
				s.Log.CleanupPolicy = log.PolicyCompactDelete
			case compact:
				s.Log.CleanupPolicy = log.PolicyCompact
			default:
				s.Log.CleanupPolicy = log.PolicyDelete
			}
			return nil
		},
		get: func(s Settings) string { return s.Log.CleanupPolicy.String() },
	},
	"min.cleanable.dirty.ratio": {
		typ: kmsg.ConfigTypeDouble,
		set: func(s *Settings, v string) error {
			r, err := strconv.ParseFloat(v, 64)
			if err != nil || !(r >= 0 && r <= 1) { // NaN fails both
				return fmt.Errorf("config min.cleanable.dirty.ratio=%q: must be a number between 0 and 1", v)
			}
			// log.Config reads zero as "default": the smallest positive
			// ratio cleans whenever anything is dirty, as Kafka's 0 does.
			s.Log.MinCleanableDirtyRatio = max(r, 1e-9)
			return nil
		},
		get: func(s Settings) string {
			if s.Log.MinCleanableDirtyRatio <= 1e-9 {
				return "0.0"
			}
			return strconv.FormatFloat(s.Log.MinCleanableDirtyRatio, 'f', -1, 64)
		},
	},
	"min.compaction.lag.ms": durationDefFrom("min.compaction.lag.ms", func(c *log.Config) *time.Duration { return &c.MinCompactionLag }, 0),
	"delete.retention.ms":   durationDefFrom("delete.retention.ms", func(c *log.Config) *time.Duration { return &c.DeleteRetention }, 0),
	"max.compaction.lag.ms": {
		typ: kmsg.ConfigTypeLong,
		set: func(s *Settings, v string) error {
			n, err := ParseBounded("max.compaction.lag.ms", v, 1, math.MaxInt64)
			switch {
			case err != nil:
				return err
			case n >= math.MaxInt64/int64(time.Millisecond):
				s.Log.MaxCompactionLag = math.MaxInt64 // Kafka's default: never
			default:
				s.Log.MaxCompactionLag = time.Duration(n) * time.Millisecond
			}
			return nil
		},
		get: func(s Settings) string {
			if s.Log.MaxCompactionLag == math.MaxInt64 {
				return strconv.FormatInt(math.MaxInt64, 10)
			}
			return DurationMs(s.Log.MaxCompactionLag)
		},
	},
	"compression.type": {
		// log.Config.Compression: produce stores batches in it, the
		// cleaner rebuilds them in it, and Fetch v9 and older is refused
		// on a zstd topic (broker/dataapi's fetch.go).
		typ: kmsg.ConfigTypeString,
		set: func(s *Settings, v string) error {
			c, err := log.ParseCompression(v)
			if err != nil {
				return fmt.Errorf("config %w", err)
			}
			s.Log.Compression = c
			return nil
		},
		get: func(s Settings) string { return s.Log.Compression.String() },
	},
	"min.insync.replicas":            minISRDef,
	"unclean.leader.election.enable": boolDef("unclean.leader.election.enable", func(s *Settings) *bool { return &s.Unclean }),
}

// segmentMsDef is segment.ms. A value below MinSegmentMs is refused when
// set (broker/settings/bounds.go); one stored before that floor existed reads
// as the floor, so a topic that rolled a segment per batch stops doing so.
var segmentMsDef = func() def {
	d := durationDef("segment.ms", func(c *log.Config) *time.Duration { return &c.SegmentAge }, false)
	set := d.set
	d.set = func(s *Settings, v string) error {
		err := set(s, v)
		s.Log.SegmentAge = max(s.Log.SegmentAge, MinSegmentMs*time.Millisecond)
		return err
	}
	return d
}()

// boolDef is a boolean: true or false in any case, as Kafka reads them.
func boolDef(name string, field func(*Settings) *bool) def {
	return def{
		typ: kmsg.ConfigTypeBoolean,
		set: func(s *Settings, v string) error {
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
		get: func(s Settings) string { return strconv.FormatBool(*field(&s)) },
	}
}

func durationDef(name string, field func(*log.Config) *time.Duration, forever bool) def {
	if forever {
		return durationDefFrom(name, field, -1)
	}
	return durationDefFrom(name, field, 1)
}

// durationDefFrom is a duration in ms of at least lo; -1 means forever.
func durationDefFrom(name string, field func(*log.Config) *time.Duration, lo int64) def {
	return def{
		typ: kmsg.ConfigTypeLong,
		set: func(s *Settings, v string) error {
			n, err := ParseBounded(name, v, lo, 1<<62)
			switch {
			case err != nil:
				return err
			case n < 0:
				*field(&s.Log) = -1
			case n == 0:
				// log.Config reads zero as "default"; a nanosecond reads
				// back as 0 ms and expires everything, as Kafka's 0 does.
				*field(&s.Log) = time.Nanosecond
			default:
				*field(&s.Log) = time.Duration(n) * time.Millisecond
			}
			return nil
		},
		get: func(s Settings) string { return DurationMs(*field(&s.Log)) },
	}
}

func int64Def(name string, field func(*log.Config) *int64, lo, hi int64) def {
	return def{
		typ: kmsg.ConfigTypeLong,
		set: func(s *Settings, v string) error {
			n, err := ParseBounded(name, v, lo, hi)
			*field(&s.Log) = n
			return err
		},
		get: func(s Settings) string { return strconv.FormatInt(*field(&s.Log), 10) },
	}
}

func ParseBounded(name, v string, lo, hi int64) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("config %s=%q: not an integer", name, v)
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("config %s=%d: must be between %d and %d", name, n, lo, hi)
	}
	return n, nil
}

func DurationMs(d time.Duration) string {
	if d < 0 {
		return "-1"
	}
	return strconv.FormatInt(d.Milliseconds(), 10)
}

// minISRDef is the topic config min.insync.replicas (its bound by the
// replication factor is broker/settings/bounds.go's).
var minISRDef = def{
	typ: kmsg.ConfigTypeInt,
	set: func(s *Settings, v string) error {
		n, err := ParseBounded("min.insync.replicas", v, 1, 1000)
		s.MinISR = int(n)
		return err
	},
	get: func(s Settings) string { return strconv.Itoa(max(s.MinISR, 1)) },
}

// throttledReplicasDef is the topic config key: "*", or a comma-separated
// list of partition:broker pairs; empty throttles nothing.
func throttledReplicasDef(key string, field func(*Settings) *string) def {
	return def{
		typ: kmsg.ConfigTypeList,
		set: func(s *Settings, v string) error {
			if t := strings.TrimSpace(v); t != "" && t != "*" {
				for _, e := range strings.Split(t, ",") {
					ps, bs, ok := strings.Cut(strings.TrimSpace(e), ":")
					_, perr := strconv.ParseUint(strings.TrimSpace(ps), 10, 31)
					_, berr := strconv.ParseUint(strings.TrimSpace(bs), 10, 31)
					if !ok || perr != nil || berr != nil {
						return fmt.Errorf("config %s=%s: %q is not partition:broker; use a comma-separated list of them, or *", key, v, e)
					}
				}
			}
			*field(s) = v
			return nil
		},
		get: func(s Settings) string { return *field(&s) },
	}
}

// Builtin are the settings of a broker started without flags:
// what decides whether a value is DEFAULT_CONFIG or STATIC_BROKER_CONFIG.
func Builtin() Settings {
	return Settings{Log: log.Config{}.WithDefaults(), MaxMessageBytes: DefaultMaxMessageBytes}
}

// Apply applies a topic's configs on top of base, in name order,
// naming the first offending key.
func Apply(base Settings, configs map[string]string) (Settings, error) {
	s := base
	keys := make([]string, 0, len(configs))
	for k := range configs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		def, ok := defs[k]
		if !ok {
			return s, fmt.Errorf("unknown topic config %q (supported: %s)", k, Supported())
		}
		if err := def.set(&s, configs[k]); err != nil {
			return s, err
		}
	}
	return s, nil
}

// Check validates a topic's config set.
func Check(configs map[string]string) error {
	_, err := Apply(Builtin(), configs)
	return err
}

// LogConfig applies a topic's configs to the broker's default storage
// configuration.
func LogConfig(base log.Config, configs map[string]string) (log.Config, error) {
	s, err := Apply(Settings{Log: base, MaxMessageBytes: 1}, configs)
	return s.Log, err
}

// Supported lists the topic configs Tributary implements, for messages.
func Supported() string { return fmt.Sprint(Names()) }

// DefaultMaxMessageBytes is max.message.bytes when nothing sets it, as in
// Kafka: 1 MiB and a batch header.
const DefaultMaxMessageBytes = 1<<20 + 12

// MinSegmentMs is the smallest segment.ms (log.roll.ms) accepted: one
// segment a minute, as Kafka's KIP-1030 floor.
const MinSegmentMs = 60_000

// Type is the type DescribeConfigs reports for the topic config name;
// false for a name that is not one.
func Type(name string) (kmsg.ConfigType, bool) {
	d, ok := defs[name]
	return d.typ, ok
}

// Set applies the value v of the topic config name to s.
func Set(s *Settings, name, v string) error {
	d, ok := defs[name]
	if !ok {
		return fmt.Errorf("unknown topic config %q (supported: %s)", name, Supported())
	}
	return d.set(s, v)
}

// Get is the value s has for the topic config name, as reported.
func Get(s Settings, name string) string { return defs[name].get(s) }

// Names are the topic configs Tributary implements, sorted.
func Names() []string {
	names := make([]string, 0, len(defs))
	for k := range defs {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}
