package broker

// Dynamic broker configs: the broker settings IncrementalAlterConfigs and
// AlterConfigs change at run time, as Kafka's dynamic broker configs do.
//
// A BROKER resource named "" is the cluster-wide default (Kafka's
// --entity-default); one named by a broker id is that broker's own. A
// setting's value is, highest precedence first: the broker's own dynamic
// value, the cluster-wide dynamic default, the command-line flag, the
// built-in default; a topic's own config still overrides all four for the
// settings that are topic defaults (log.retention.ms is retention.ms's).
// Where Kafka has several names for one setting (log.retention.ms,
// .minutes, .hours) the finest one set at the winning level decides.
//
// Only the settings in dynamicSettings change at run time; every other
// key, Kafka's or not, is refused with INVALID_CONFIG naming it. Values are
// checked as the matching topic config checks them. Log settings reach the
// open partitions of topics that do not set them through the partitions'
// Reconfigure, and partitions opened later; connection limits apply to
// the next connection accepted (max.connections.per.ip keeps its own
// value when only max.connections changes), replication throttle rates
// (replica_throttle.go) to the next replica fetch. Storage (dynamicconfig_store.go): the data
// directory, or ZooKeeper's /config/brokers nodes, which every broker
// watches.

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/kafkaerr"
	"github.com/tributary-io/tributary/broker/topicconfig"
	"github.com/tributary-io/tributary/cluster"
)

// brokerSettings is everything dynamic broker configs decide.
type brokerSettings struct {
	topic         topicconfig.Settings // what topics that set nothing get
	maxConns      int                  // max.connections
	maxConnsPerIP int                  // max.connections.per.ip
	// leader/follower.replication.throttled.rate, bytes a second
	// (replica_throttle.go); math.MaxInt64 is unthrottled.
	leaderThrottleRate, followerThrottleRate int64
	// replica.alter.log.dirs.io.max.bytes.per.second: kept and described,
	// and without effect, since a broker has one log directory and so no
	// moves between them. Kafka's reassignment tool sets and removes it
	// with the replication throttles; refusing it failed --verify.
	alterLogDirsRate int64
}

// dynamicSetting is one setting: the Kafka names that set it, finest
// first, and how a value applies.
type dynamicSetting struct {
	keys  []string
	topic string // the topic config this is the default of; "" for broker-only
	typ   kmsg.ConfigType
	// set applies the value v of key; get reports the effective value
	// (under keys[0]).
	set func(s *brokerSettings, key, v string) error
	get func(s brokerSettings) string
}

// topicDefault is a setting that is the broker-wide default of a topic
// config: its values are checked and applied as the topic config's.
func topicDefault(topic string, keys ...string) dynamicSetting {
	typ, _ := topicconfig.Type(topic)
	return dynamicSetting{
		keys: keys, topic: topic, typ: typ,
		set: func(s *brokerSettings, key, v string) error {
			if scale := unitMs(key); scale > 1 {
				n, err := topicconfig.ParseBounded(key, v, -1, (1<<62)/scale)
				if err != nil {
					return err
				}
				if n > 0 {
					n *= scale
				}
				v = strconv.FormatInt(n, 10)
			}
			if err := topicconfig.Set(&s.topic, topic, v); err != nil {
				return fmt.Errorf("broker config %s: %w", key, err)
			}
			return nil
		},
		get: func(s brokerSettings) string { return topicconfig.Get(s.topic, topic) },
	}
}

// unitMs is the milliseconds in one unit of a duration key by its suffix.
func unitMs(key string) int64 {
	switch {
	case strings.HasSuffix(key, ".hours"):
		return 3600_000
	case strings.HasSuffix(key, ".minutes"):
		return 60_000
	}
	return 1
}

func connLimit(key string, field func(*brokerSettings) *int) dynamicSetting {
	return dynamicSetting{
		keys: []string{key}, typ: kmsg.ConfigTypeInt,
		set: func(s *brokerSettings, _, v string) error {
			n, err := topicconfig.ParseBounded(key, v, 1, 1<<31-1)
			*field(s) = int(n)
			return err
		},
		get: func(s brokerSettings) string {
			if key == "max.connections.per.ip" {
				return strconv.Itoa(perIPLimit(s.maxConns, s.maxConnsPerIP))
			}
			return strconv.Itoa(*field(&s))
		},
	}
}

// throttleRate is a replication throttle's rate in bytes a second.
func throttleRate(key string, field func(*brokerSettings) *int64) dynamicSetting {
	return dynamicSetting{
		keys: []string{key}, typ: kmsg.ConfigTypeLong,
		set: func(s *brokerSettings, _, v string) error {
			n, err := topicconfig.ParseBounded(key, v, 1, math.MaxInt64)
			*field(s) = n
			return err
		},
		get: func(s brokerSettings) string { return strconv.FormatInt(*field(&s), 10) },
	}
}

// dynamicSettings are the settings that change at run time, in the order
// DescribeConfigs reports them.
var dynamicSettings = []dynamicSetting{
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
	connLimit("max.connections", func(s *brokerSettings) *int { return &s.maxConns }),
	connLimit("max.connections.per.ip", func(s *brokerSettings) *int { return &s.maxConnsPerIP }),
	throttleRate(cluster.LeaderThrottledRate, func(s *brokerSettings) *int64 { return &s.leaderThrottleRate }),
	throttleRate(cluster.FollowerThrottledRate, func(s *brokerSettings) *int64 { return &s.followerThrottleRate }),
	throttleRate("replica.alter.log.dirs.io.max.bytes.per.second", func(s *brokerSettings) *int64 { return &s.alterLogDirsRate }),
}

// dynamicSettingOf finds the setting a key names.
func dynamicSettingOf(key string) (dynamicSetting, bool) {
	for _, d := range dynamicSettings {
		if slices.Contains(d.keys, key) {
			return d, true
		}
	}
	return dynamicSetting{}, false
}

// topicDefaultSetting finds the dynamic setting that is the default of a
// topic config.
func topicDefaultSetting(topic string) (dynamicSetting, bool) {
	for _, d := range dynamicSettings {
		if d.topic == topic {
			return d, true
		}
	}
	return dynamicSetting{}, false
}

// dynamicKeyNames lists every key that changes at run time, for messages.
func dynamicKeyNames() string {
	var names []string
	for _, d := range dynamicSettings {
		names = append(names, d.keys...)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// errStaticKey refuses a key that does not change at run time.
func errStaticKey(key string) error {
	return kafkaerr.New(kerr.InvalidConfig, "broker config %s cannot change at run time: in Tributary it is static (a command-line flag, or not a setting at all); the dynamic broker configs are %s", key, dynamicKeyNames())
}

// applyLevel applies one level's configs over s, each setting by the
// first of its keys present, and returns every value that did not apply.
func applyLevel(s brokerSettings, configs map[string]string) (brokerSettings, []error) {
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(configs)) {
		if _, ok := dynamicSettingOf(k); !ok {
			errs = append(errs, errStaticKey(k))
		}
	}
	for _, d := range dynamicSettings {
		for _, k := range d.keys {
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

// checkBrokerConfigs validates one level's configs.
func checkBrokerConfigs(configs map[string]string) error {
	_, errs := applyLevel(builtinBrokerSettings(), configs)
	if len(errs) == 0 {
		return nil
	}
	if kafkaerr.Code(errs[0]) != kerr.UnknownServerError.Code {
		return errs[0]
	}
	return kafkaerr.New(kerr.InvalidConfig, "%v", errs[0])
}

// dynamicState is the configs as stored and what they make of the flags.
type dynamicState struct {
	def, own map[string]string // cluster-wide default, this broker's own
	static   brokerSettings    // flags over built-in defaults
	eff      brokerSettings    // what applies
}

// levelOf says where the value of d comes from.
func (st *dynamicState) levelOf(d dynamicSetting) kmsg.ConfigSource {
	for _, lv := range []struct {
		m   map[string]string
		src kmsg.ConfigSource
	}{{st.own, kmsg.ConfigSourceDynamicBrokerConfig}, {st.def, kmsg.ConfigSourceDynamicDefaultBrokerConfig}} {
		for _, k := range d.keys {
			if _, ok := lv.m[k]; ok {
				return lv.src
			}
		}
	}
	if d.get(st.static) != d.get(builtinBrokerSettings()) {
		return kmsg.ConfigSourceStaticBrokerConfig
	}
	return kmsg.ConfigSourceDefaultConfig
}

// synonyms lists every value of d in precedence order, as DescribeConfigs
// reports them with include_synonyms; withOwn includes this broker's own
// values, which the cluster-wide default resource does not show.
func (st *dynamicState) synonyms(d dynamicSetting, withOwn bool) []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym {
	var out []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym
	add := func(name, v string, src kmsg.ConfigSource) { out = append(out, synonym(name, v, src)) }
	if withOwn {
		for _, k := range d.keys {
			if v, ok := st.own[k]; ok {
				add(k, v, kmsg.ConfigSourceDynamicBrokerConfig)
			}
		}
	}
	for _, k := range d.keys {
		if v, ok := st.def[k]; ok {
			add(k, v, kmsg.ConfigSourceDynamicDefaultBrokerConfig)
		}
	}
	builtin := builtinBrokerSettings()
	if d.get(st.static) != d.get(builtin) {
		add(d.keys[0], d.get(st.static), kmsg.ConfigSourceStaticBrokerConfig)
	}
	add(d.keys[0], d.get(builtin), kmsg.ConfigSourceDefaultConfig)
	return out
}

// builtinBrokerSettings are those of a broker started without flags.
func builtinBrokerSettings() brokerSettings {
	c := Config{}.withDefaults()
	return brokerSettings{topic: topicconfig.Builtin(), maxConns: c.MaxConnections, maxConnsPerIP: c.MaxConnectionsPerIP,
		leaderThrottleRate: math.MaxInt64, followerThrottleRate: math.MaxInt64, alterLogDirsRate: math.MaxInt64}
}

// dynamicConfigs holds the current state and where it is stored.
type dynamicConfigs struct {
	store  brokerConfigStore
	loadMu sync.Mutex
	state  atomic.Pointer[dynamicState]
	// applyMu makes applying the state to the open partitions one at a
	// time, each reading the newest state once it holds the lock, so an
	// older state never lands after a newer one.
	applyMu sync.Mutex
}

// staticBrokerSettings are the settings the flags make.
func (b *Broker) staticBrokerSettings() brokerSettings {
	return brokerSettings{
		topic:         topicconfig.Settings{Log: b.staticLog.WithDefaults(), MaxMessageBytes: b.cfg.MaxMessageBytes, MinISR: b.cfg.MinInsyncReplicas, Unclean: b.cfg.UncleanLeaderElection},
		maxConns:      b.cfg.MaxConnections,
		maxConnsPerIP: b.cfg.MaxConnectionsPerIP,
		// Set at run time only, as Kafka's reassignment tool does.
		leaderThrottleRate: math.MaxInt64, followerThrottleRate: math.MaxInt64, alterLogDirsRate: math.MaxInt64,
	}
}

// loadDynamicConfigs reads the stored configs and makes them current,
// for the partitions opened from now on too. A value that does not apply
// (written by another version of Tributary) is skipped with a warning
// rather than keeping the broker from starting.
func (b *Broker) loadDynamicConfigs() error {
	// Reads and stores in one order, so the last stored is the last read
	// even when a watch and an alter reload at once.
	b.dyn.loadMu.Lock()
	defer b.dyn.loadMu.Unlock()
	def, own, err := b.dyn.store.load()
	if err != nil {
		return err
	}
	st := &dynamicState{def: def, own: own, static: b.staticBrokerSettings()}
	var errs, more []error
	st.eff, errs = applyLevel(st.static, def)
	st.eff, more = applyLevel(st.eff, own)
	for _, e := range append(errs, more...) {
		b.logger.Warn("ignoring a stored dynamic broker config", "err", e)
	}
	b.dyn.state.Store(st)
	b.logs.setBase(st.eff.topic.Log)
	if c, ok := b.meta.(uncleanElector); ok {
		c.SetUncleanLeaderElection(st.eff.topic.Unclean)
	}
	return nil
}

// uncleanElector is the cluster metadata whose controller elects leaders
// (cluster.ZooKeeper): it is told the broker-wide
// unclean.leader.election.enable, which only it acts on.
type uncleanElector interface{ SetUncleanLeaderElection(on bool) }

// connLimits are max.connections and max.connections.per.ip as they are
// now: a change applies to the next connection accepted.
func (b *Broker) connLimits() (maxConns, perIP int) {
	maxConns, perIP = b.cfg.MaxConnections, b.cfg.MaxConnectionsPerIP
	if st := b.dyn.state.Load(); st != nil {
		maxConns, perIP = st.eff.maxConns, st.eff.maxConnsPerIP
	}
	return maxConns, perIPLimit(maxConns, perIP)
}

// perIPLimit is max.connections.per.ip: as set, or when unset (0) a tenth
// of max.connections, so that one address (a leaking client, a flood of
// idle sockets) leaves nine tenths of the slots to everyone else.
func perIPLimit(maxConns, perIP int) int {
	if perIP > 0 {
		return perIP
	}
	return max(maxConns/10, 1)
}

// dynamicNow is the current state.
func (b *Broker) dynamicNow() *dynamicState { return b.dyn.state.Load() }

// reloadDynamicConfigs rereads the stored configs and applies them to the
// open partitions: after a change through this broker, or a ZooKeeper
// watch reporting one through another.
func (b *Broker) reloadDynamicConfigs() {
	if err := b.loadDynamicConfigs(); err != nil {
		b.logger.Error("reading dynamic broker configs failed; keeping the last ones read", "err", err)
		return
	}
	b.reconfigureAll()
}

// alterBrokerConfigs changes the configs of the broker resource name ("":
// the cluster-wide default) to what change makes of them.
func (b *Broker) alterBrokerConfigs(name string, validateOnly bool, change func(map[string]string) (map[string]string, error)) error {
	own := name != ""
	checked := func(cur map[string]string) (map[string]string, error) {
		next, err := change(maps.Clone(cur))
		if err != nil {
			return nil, err
		}
		if err := checkBrokerConfigs(next); err != nil {
			return nil, err
		}
		if err := b.checkBrokerConfigBounds(next); err != nil {
			return nil, err
		}
		return next, nil
	}
	if validateOnly {
		st := b.dynamicNow()
		cur := st.def
		if own {
			cur = st.own
		}
		_, err := checked(cur)
		return err
	}
	next, err := b.dyn.store.update(own, checked)
	if err != nil {
		if kafkaerr.Code(err) != kerr.UnknownServerError.Code {
			return err // refused by change or the checks
		}
		b.logger.Error("storing dynamic broker configs", "resource", name, "err", err)
		return kafkaerr.New(kerr.UnknownServerError, "storing broker configs: %v", err)
	}
	b.reloadDynamicConfigs()
	entity := "the cluster-wide default"
	if own {
		entity = "broker " + name
	}
	b.logger.Info("dynamic broker configs changed", "entity", entity, "configs", next)
	return nil
}
