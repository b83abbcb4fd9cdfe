// Package brokerconfig is the model of dynamic broker configs: the broker
// settings IncrementalAlterConfigs and AlterConfigs change at run time, as
// Kafka's dynamic broker configs do.
//
// A BROKER resource named "" is the cluster-wide default (Kafka's
// --entity-default); one named by a broker id is that broker's own. A
// setting's value is, highest precedence first: the broker's own dynamic
// value, the cluster-wide dynamic default, the command-line flag, the
// built-in default; a topic's own config still overrides all four for the
// settings that are topic defaults (log.retention.ms is retention.ms's).
// Where Kafka has several names for one setting (log.retention.ms, .minutes,
// .hours) the finest one set at the winning level decides.
//
// Only the settings in All change at run time; every other key, Kafka's or
// not, is refused with INVALID_CONFIG naming it. Values are checked as the
// matching topic config checks them. Log settings reach the open partitions
// of topics that do not set them through the partitions' Reconfigure, and
// partitions opened later; connection limits apply to the next connection
// accepted (max.connections.per.ip keeps its own value when only
// max.connections changes), replication throttle rates
// (broker/replication/throttle.go) to the next replica fetch. Storage
// (store.go): the data directory, or ZooKeeper's /config/brokers nodes,
// which every broker watches.
package brokerconfig

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/kafkaerr"
	"github.com/tributary-io/tributary/broker/topicconfig"
	"github.com/tributary-io/tributary/cluster"
)

// DefaultMaxConnections is max.connections when nothing sets it;
// max.connections.per.ip is unset (0) by default and then follows it.
const DefaultMaxConnections = 10000

// Settings is everything dynamic broker configs decide.
type Settings struct {
	Topic         topicconfig.Settings // what topics that set nothing get
	MaxConns      int                  // max.connections
	MaxConnsPerIP int                  // max.connections.per.ip
	// leader/follower.replication.throttled.rate, bytes a second
	// (broker/replication/throttle.go); math.MaxInt64 is unthrottled.
	LeaderThrottleRate, FollowerThrottleRate int64
	// replica.alter.log.dirs.io.max.bytes.per.second: kept and described,
	// and without effect, since a broker has one log directory and so no
	// moves between them. Kafka's reassignment tool sets and removes it
	// with the replication throttles; refusing it failed --verify.
	AlterLogDirsRate int64
}

// Setting is one setting: the Kafka names that set it, finest
// first, and how a value applies.
type Setting struct {
	Keys  []string
	Topic string // the topic config this is the default of; "" for broker-only
	Type  kmsg.ConfigType
	// set applies the value v of key; get reports the effective value
	// (under keys[0]).
	set func(s *Settings, key, v string) error
	Get func(s Settings) string
}

// topicDefault is a setting that is the broker-wide default of a topic
// config: its values are checked and applied as the topic config's.
func topicDefault(topic string, keys ...string) Setting {
	typ, _ := topicconfig.Type(topic)
	return Setting{
		Keys: keys, Topic: topic, Type: typ,
		set: func(s *Settings, key, v string) error {
			if scale := UnitMs(key); scale > 1 {
				n, err := topicconfig.ParseBounded(key, v, -1, (1<<62)/scale)
				if err != nil {
					return err
				}
				if n > 0 {
					n *= scale
				}
				v = strconv.FormatInt(n, 10)
			}
			if err := topicconfig.Set(&s.Topic, topic, v); err != nil {
				return fmt.Errorf("broker config %s: %w", key, err)
			}
			return nil
		},
		Get: func(s Settings) string { return topicconfig.Get(s.Topic, topic) },
	}
}

// UnitMs is the milliseconds in one unit of a duration key by its suffix.
func UnitMs(key string) int64 {
	switch {
	case strings.HasSuffix(key, ".hours"):
		return 3600_000
	case strings.HasSuffix(key, ".minutes"):
		return 60_000
	}
	return 1
}

func connLimit(key string, field func(*Settings) *int) Setting {
	return Setting{
		Keys: []string{key}, Type: kmsg.ConfigTypeInt,
		set: func(s *Settings, _, v string) error {
			n, err := topicconfig.ParseBounded(key, v, 1, 1<<31-1)
			*field(s) = int(n)
			return err
		},
		Get: func(s Settings) string {
			if key == "max.connections.per.ip" {
				return strconv.Itoa(PerIPLimit(s.MaxConns, s.MaxConnsPerIP))
			}
			return strconv.Itoa(*field(&s))
		},
	}
}

// throttleRate is a replication throttle's rate in bytes a second.
func throttleRate(key string, field func(*Settings) *int64) Setting {
	return Setting{
		Keys: []string{key}, Type: kmsg.ConfigTypeLong,
		set: func(s *Settings, _, v string) error {
			n, err := topicconfig.ParseBounded(key, v, 1, math.MaxInt64)
			*field(s) = n
			return err
		},
		Get: func(s Settings) string { return strconv.FormatInt(*field(&s), 10) },
	}
}

// All are the settings that change at run time, in the order
// DescribeConfigs reports them.
var All = []Setting{
	topicDefault("retention.ms", "log.retention.ms", "log.retention.minutes", "log.retention.hours"),
	topicDefault("retention.bytes", "log.retention.bytes"),
	topicDefault("segment.bytes", "log.segment.bytes"),
	topicDefault("segment.ms", "log.roll.ms", "log.roll.hours"),
	topicDefault("flush.messages", "log.flush.interval.messages"),
	topicDefault("flush.ms", "log.flush.interval.ms"),
	topicDefault("index.interval.bytes", "log.index.interval.bytes"),
	topicDefault("cleanup.policy", "log.cleanup.policy"),
	topicDefault("min.cleanable.dirty.ratio", "log.cleaner.min.cleanable.ratio"),
	topicDefault("min.compaction.lag.ms", "log.cleaner.min.compaction.lag.ms"),
	topicDefault("max.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms"),
	topicDefault("delete.retention.ms", "log.cleaner.delete.retention.ms"),
	topicDefault("message.timestamp.type", "log.message.timestamp.type"),
	topicDefault("max.message.bytes", "message.max.bytes"),
	topicDefault("compression.type", "compression.type"),
	topicDefault("min.insync.replicas", "min.insync.replicas"),
	topicDefault("unclean.leader.election.enable", "unclean.leader.election.enable"),
	connLimit("max.connections", func(s *Settings) *int { return &s.MaxConns }),
	connLimit("max.connections.per.ip", func(s *Settings) *int { return &s.MaxConnsPerIP }),
	throttleRate(cluster.LeaderThrottledRate, func(s *Settings) *int64 { return &s.LeaderThrottleRate }),
	throttleRate(cluster.FollowerThrottledRate, func(s *Settings) *int64 { return &s.FollowerThrottleRate }),
	throttleRate("replica.alter.log.dirs.io.max.bytes.per.second", func(s *Settings) *int64 { return &s.AlterLogDirsRate }),
}

// Of finds the setting a key names.
func Of(key string) (Setting, bool) {
	for _, d := range All {
		if slices.Contains(d.Keys, key) {
			return d, true
		}
	}
	return Setting{}, false
}

// TopicDefault finds the dynamic setting that is the default of a
// topic config.
func TopicDefault(topic string) (Setting, bool) {
	for _, d := range All {
		if d.Topic == topic {
			return d, true
		}
	}
	return Setting{}, false
}

// KeyNames lists every key that changes at run time, for messages.
func KeyNames() string {
	var names []string
	for _, d := range All {
		names = append(names, d.Keys...)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// ErrStatic refuses a key that does not change at run time.
func ErrStatic(key string) error {
	return kafkaerr.New(kerr.InvalidConfig, "broker config %s cannot change at run time: in Tributary it is static (a command-line flag, or not a setting at all); the dynamic broker configs are %s", key, KeyNames())
}

// ApplyLevel applies one level's configs over s, each setting by the
// first of its keys present, and returns every value that did not apply.
func ApplyLevel(s Settings, configs map[string]string) (Settings, []error) {
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(configs)) {
		if _, ok := Of(k); !ok {
			errs = append(errs, ErrStatic(k))
		}
	}
	for _, d := range All {
		for _, k := range d.Keys {
			if v, ok := configs[k]; ok {
				if err := d.set(&s, k, v); err != nil {
					errs = append(errs, err)
				}
				break
			}
		}
	}
	return s, errs
}

// Check validates one level's configs.
func Check(configs map[string]string) error {
	_, errs := ApplyLevel(Builtin(), configs)
	if len(errs) == 0 {
		return nil
	}
	if kafkaerr.Code(errs[0]) != kerr.UnknownServerError.Code {
		return errs[0]
	}
	return kafkaerr.New(kerr.InvalidConfig, "%v", errs[0])
}

// State is the configs as stored and what they make of the flags.
type State struct {
	Def, Own map[string]string // cluster-wide default, this broker's own
	Static   Settings          // flags over built-in defaults
	Eff      Settings          // what applies
}

// levelOf says where the value of d comes from.
func (st *State) LevelOf(d Setting) kmsg.ConfigSource {
	for _, lv := range []struct {
		m   map[string]string
		src kmsg.ConfigSource
	}{{st.Own, kmsg.ConfigSourceDynamicBrokerConfig}, {st.Def, kmsg.ConfigSourceDynamicDefaultBrokerConfig}} {
		for _, k := range d.Keys {
			if _, ok := lv.m[k]; ok {
				return lv.src
			}
		}
	}
	if d.Get(st.Static) != d.Get(Builtin()) {
		return kmsg.ConfigSourceStaticBrokerConfig
	}
	return kmsg.ConfigSourceDefaultConfig
}

// synonyms lists every value of d in precedence order, as DescribeConfigs
// reports them with include_synonyms; withOwn includes this broker's own
// values, which the cluster-wide default resource does not show.
func (st *State) Synonyms(d Setting, withOwn bool) []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym {
	var out []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym
	add := func(name, v string, src kmsg.ConfigSource) { out = append(out, Synonym(name, v, src)) }
	if withOwn {
		for _, k := range d.Keys {
			if v, ok := st.Own[k]; ok {
				add(k, v, kmsg.ConfigSourceDynamicBrokerConfig)
			}
		}
	}
	for _, k := range d.Keys {
		if v, ok := st.Def[k]; ok {
			add(k, v, kmsg.ConfigSourceDynamicDefaultBrokerConfig)
		}
	}
	builtin := Builtin()
	if d.Get(st.Static) != d.Get(builtin) {
		add(d.Keys[0], d.Get(st.Static), kmsg.ConfigSourceStaticBrokerConfig)
	}
	add(d.Keys[0], d.Get(builtin), kmsg.ConfigSourceDefaultConfig)
	return out
}

// Builtin are those of a broker started without flags.
func Builtin() Settings {
	return Settings{Topic: topicconfig.Builtin(), MaxConns: DefaultMaxConnections,
		LeaderThrottleRate: math.MaxInt64, FollowerThrottleRate: math.MaxInt64, AlterLogDirsRate: math.MaxInt64}
}

// Synonym is one level's value of a setting, as DescribeConfigs reports it.
func Synonym(name, value string, src kmsg.ConfigSource) kmsg.DescribeConfigsResponseResourceConfigConfigSynonym {
	syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
	syn.Name, syn.Value, syn.Source = name, kmsg.StringPtr(value), src
	return syn
}

// PerIPLimit is max.connections.per.ip: as set, or when unset (0) a tenth
// of max.connections, so that one address (a leaking client, a flood of
// idle sockets) leaves nine tenths of the slots to everyone else.
func PerIPLimit(maxConns, perIP int) int {
	if perIP > 0 {
		return perIP
	}
	return max(maxConns/10, 1)
}
