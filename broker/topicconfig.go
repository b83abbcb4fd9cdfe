package broker

// A topic's settings on this broker: its configs (the model is
// broker/topicconfig) over the broker's defaults, which the dynamic broker
// configs and the flags decide (dynamicconfig.go), and how each is reported
// with its source (DescribeConfigs).

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/brokerconfig"
	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/topicconfig"
	"github.com/tributary-io/tributary/cluster"
)

// brokerTopicDefaults are the settings of a topic that sets nothing: the
// dynamic broker configs over the broker's flags over the built-in
// defaults (dynamicconfig.go).
func (b *Broker) brokerTopicDefaults() topicconfig.Settings {
	if st := b.dyn.state.Load(); st != nil {
		return st.Eff.Topic
	}
	return b.staticBrokerSettings().Topic // during New, before they are read
}

// topicSettingsOf is a topic's settings: its configs over the broker's
// defaults (brokerTopicDefaults), or the broker's defaults alone if the
// configs do not apply (they were refused when set, so that means a
// broker of another version wrote them).
func (b *Broker) topicSettingsOf(configs map[string]string) topicconfig.Settings {
	base := b.brokerTopicDefaults()
	if len(configs) == 0 {
		return base
	}
	if s, err := topicconfig.Apply(base, configs); err == nil {
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
	if codec, ok := b.topicSettingsOf(t.Configs).Log.Compression.Codec(); ok && codec == log.CodecZstd {
		return kerr.UnsupportedCompressionType.Code
	}
	return 0
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
	eff, err := topicconfig.Apply(broker, configs)
	if err != nil {
		return nil, err
	}
	st := b.dynamicNow()
	builtin := topicconfig.Builtin()
	names := topicconfig.Names()
	out := make([]configEntry, 0, len(names))
	for _, name := range names {
		typ, _ := topicconfig.Type(name)
		e := configEntry{name: name, value: topicconfig.Get(eff, name), typ: typ, source: kmsg.ConfigSourceDefaultConfig}
		v, own := configs[name]
		if own {
			e.synonyms = append(e.synonyms, brokerconfig.Synonym(name, v, kmsg.ConfigSourceDynamicTopicConfig))
		}
		if d, ok := brokerconfig.TopicDefault(name); ok && st != nil {
			e.source = st.LevelOf(d)
			e.synonyms = append(e.synonyms, st.Synonyms(d, true)...)
		} else {
			if topicconfig.Get(broker, name) != topicconfig.Get(builtin, name) {
				e.source = kmsg.ConfigSourceStaticBrokerConfig
			}
			e.synonyms = append(e.synonyms, brokerconfig.Synonym(name, topicconfig.Get(builtin, name), kmsg.ConfigSourceDefaultConfig))
		}
		if own {
			e.source = kmsg.ConfigSourceDynamicTopicConfig
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}
