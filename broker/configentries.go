package broker

// The settings DescribeConfigs describes (broker/configapi serves it):
// configSettings is its configapi.Settings, over a topic's settings on the
// broker's defaults (topicconfig.go), the broker's dynamic configs
// (dynamicconfig.go), its flags, and its log level (brokerlogger.go).

import (
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/brokerconfig"
	"github.com/tributary-io/tributary/broker/configapi"
	"github.com/tributary-io/tributary/broker/kafkaerr"
	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/topicconfig"
)

// configSettings is the broker's configapi.Settings.
type configSettings struct{ b *Broker }

// TopicConfigs implements configapi.Settings: an existing topic only,
// never created by being described.
func (s configSettings) TopicConfigs(name string) ([]configapi.Entry, int16, error) {
	t, code := s.b.lookupTopic(name, false)
	if code != 0 {
		return nil, code, nil
	}
	entries, err := s.b.topicConfigEntries(t.Configs)
	if err != nil {
		return nil, 0, err
	}
	return apiEntries(entries), 0, nil
}

// BrokerConfigs implements configapi.Settings.
func (s configSettings) BrokerConfigs(name string) ([]configapi.Entry, error) {
	if err := s.b.checkBrokerResource(name); err != nil {
		return nil, err
	}
	return apiEntries(s.b.brokerConfigEntries(name != "")), nil
}

// LoggerConfigs implements configapi.Settings.
func (s configSettings) LoggerConfigs(name string) ([]configapi.Entry, error) {
	entries, err := s.b.brokerLoggerEntries(name)
	return apiEntries(entries), err
}

// apiEntries are entries as broker/configapi reports them (DescribeConfigs,
// and CreateTopics in broker/topicapi).
func apiEntries(entries []configEntry) []configapi.Entry {
	if entries == nil {
		return nil
	}
	out := make([]configapi.Entry, len(entries))
	for i, e := range entries {
		out[i] = configapi.Entry{Name: e.name, Value: e.value, Type: e.typ, Source: e.source, ReadOnly: e.readOnly, Synonyms: e.synonyms}
	}
	return out
}

// checkBrokerResource accepts this broker's id, or "" (the cluster-wide
// default, which Kafka's tools address as --entity-default).
func (b *Broker) checkBrokerResource(name string) error {
	if name == "" || name == strconv.Itoa(int(b.selfID)) {
		return nil
	}
	return kafkaerr.New(kerr.InvalidRequest, "broker %q: this broker is %d; ask each broker about itself", name, b.selfID)
}

// brokerConfigEntries are the broker's settings under Kafka's names: with
// own, this broker's (every setting, dynamic ones first); without, the
// cluster-wide dynamic defaults set.
func (b *Broker) brokerConfigEntries(own bool) []configEntry {
	st := b.dynamicNow()
	if !own {
		var out []configEntry
		for _, d := range brokerconfig.All {
			for _, k := range d.Keys {
				if v, ok := st.Def[k]; ok {
					out = append(out, configEntry{name: k, value: v, typ: d.Type,
						source: kmsg.ConfigSourceDynamicDefaultBrokerConfig, synonyms: st.Synonyms(d, false)})
				}
			}
		}
		return out
	}
	var entries []configEntry
	for _, d := range brokerconfig.All {
		src := st.LevelOf(d)
		syns := st.Synonyms(d, true)
		entries = append(entries, configEntry{name: d.Keys[0], value: d.Get(st.Eff), typ: d.Type, source: src, synonyms: syns})
		// A coarser name set dynamically (log.retention.hours) is listed
		// too, so that tools filtering by source find it.
		for _, k := range d.Keys[1:] {
			if v, ok := st.Own[k]; ok {
				entries = append(entries, configEntry{name: k, value: v, typ: d.Type, source: kmsg.ConfigSourceDynamicBrokerConfig, synonyms: syns})
			} else if v, ok := st.Def[k]; ok {
				entries = append(entries, configEntry{name: k, value: v, typ: d.Type, source: kmsg.ConfigSourceDynamicDefaultBrokerConfig, synonyms: syns})
			}
		}
	}
	return append(entries, b.staticConfigEntries()...)
}

// staticConfigEntries are the settings only flags change, read-only: each
// STATIC_BROKER_CONFIG when a flag changed it, else DEFAULT_CONFIG.
func (b *Broker) staticConfigEntries() []configEntry {
	builtin := Config{}.withDefaults()
	have, def := b.cfg.Log.WithDefaults(), log.Config{}.WithDefaults()
	long := func(name string, v, d int64) configEntry {
		return configEntry{name: name, value: strconv.FormatInt(v, 10), typ: kmsg.ConfigTypeLong, source: sourceOf(v == d)}
	}
	ms := func(name string, v, d time.Duration) configEntry {
		e := long(name, v.Milliseconds(), d.Milliseconds())
		e.value = topicconfig.DurationMs(v)
		return e
	}
	entries := []configEntry{
		long("broker.id", int64(b.selfID), 0),
		{name: "log.dirs", value: b.cfg.DataDir, typ: kmsg.ConfigTypeString, source: kmsg.ConfigSourceStaticBrokerConfig},
		{name: "auto.create.topics.enable", value: strconv.FormatBool(b.cfg.AutoCreateTopics), typ: kmsg.ConfigTypeBoolean,
			source: sourceOf(b.cfg.AutoCreateTopics)},
		long("num.partitions", int64(b.cfg.DefaultPartitions), int64(builtin.DefaultPartitions)),
		long("socket.request.max.bytes", int64(b.cfg.MaxRequestBytes), int64(builtin.MaxRequestBytes)),
		ms("log.retention.check.interval.ms", have.RetentionCheckInterval, def.RetentionCheckInterval),
		ms("producer.id.expiration.ms", have.ProducerIDExpiry, def.ProducerIDExpiry),
	}
	for i := range entries {
		entries[i].readOnly = true
		entries[i].synonyms = []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{brokerconfig.Synonym(entries[i].name, entries[i].value, entries[i].source)}
	}
	return entries
}

func sourceOf(isDefault bool) kmsg.ConfigSource {
	if isDefault {
		return kmsg.ConfigSourceDefaultConfig
	}
	return kmsg.ConfigSourceStaticBrokerConfig
}
