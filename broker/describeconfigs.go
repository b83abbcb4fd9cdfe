package broker

// DescribeConfigs.
//
// Topics report the effective value of every setting of topicconfig.go with
// its source: the topic's own value (DYNAMIC_TOPIC_CONFIG), a dynamic
// broker config (DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG), a
// broker flag (STATIC_BROKER_CONFIG) or the built-in default
// (DEFAULT_CONFIG). A broker (resource name: its id) reports its settings
// under Kafka's names the same way, the dynamic ones (dynamicconfig.go)
// writable and the rest read-only; the resource "" (the cluster-wide
// default) reports the dynamic defaults set, as Kafka does. Synonyms, when
// asked for, list every level's value, highest precedence first.
// Documentation is not sent.

import (
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/brokerconfig"
	"github.com/tributary-io/tributary/broker/kafkaerr"
	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/topicconfig"
)

func init() {
	register(32, 0, 4, now((*Broker).describeConfigs))
}

func (b *Broker) describeConfigs(who *request, req *kmsg.DescribeConfigsRequest) *kmsg.DescribeConfigsResponse {
	var refused []kmsg.DescribeConfigsResponseResource
	req.Resources, refused = filterAuthorized(req.Resources, func(res kmsg.DescribeConfigsRequestResource) bool {
		switch res.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			return b.mayTopic(who, kmsg.ACLOperationDescribeConfigs, res.ResourceName)
		case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger:
			return b.mayCluster(who, kmsg.ACLOperationDescribeConfigs)
		}
		return true
	}, func(it kmsg.DescribeConfigsRequestResource) kmsg.DescribeConfigsResponseResource {
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = it.ResourceType, it.ResourceName
		rr.ErrorCode = topicRefused
		if it.ResourceType != kmsg.ConfigResourceTypeTopic {
			rr.ErrorCode = clusterRefused
		}
		return rr
	})
	resp := kmsg.NewPtrDescribeConfigsResponse()
	for _, rr := range req.Resources {
		sr := kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		var entries []configEntry
		switch rr.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			t, code := b.lookupTopic(rr.ResourceName, false)
			if code != 0 {
				sr.ErrorCode = code
				break
			}
			var err error
			if entries, err = b.topicConfigEntries(t.Configs); err != nil {
				sr.ErrorCode = kerr.InvalidConfig.Code
				msg := err.Error()
				sr.ErrorMessage = &msg
			}
		case kmsg.ConfigResourceTypeBroker:
			if err := b.checkBrokerResource(rr.ResourceName); err != nil {
				sr.ErrorCode = kafkaerr.Code(err)
				msg := err.Error()
				sr.ErrorMessage = &msg
				break
			}
			entries = b.brokerConfigEntries(rr.ResourceName != "")
		case kmsg.ConfigResourceTypeBrokerLogger:
			var err error
			if entries, err = b.brokerLoggerEntries(rr.ResourceName); err != nil {
				sr.ErrorCode = kafkaerr.Code(err)
				msg := err.Error()
				sr.ErrorMessage = &msg
			}
		default:
			sr.ErrorCode = kerr.InvalidRequest.Code
			msg := "Tributary describes topic, broker and broker logger configs only"
			sr.ErrorMessage = &msg
		}
		want := wantedNames(rr.ConfigNames)
		for _, e := range entries {
			if !want(e.name) {
				continue
			}
			rc := kmsg.NewDescribeConfigsResponseResourceConfig()
			rc.Name, rc.ConfigType, rc.Source, rc.ReadOnly = e.name, e.typ, e.source, e.readOnly
			v := e.value
			rc.Value = &v
			rc.IsDefault = e.source == kmsg.ConfigSourceDefaultConfig
			if req.IncludeSynonyms {
				rc.ConfigSynonyms = e.synonyms
			}
			sr.Configs = append(sr.Configs, rc)
		}
		resp.Resources = append(resp.Resources, sr)
	}
	resp.Resources = append(resp.Resources, refused...)
	return resp
}

// wantedNames filters by the names a request lists; nil lists all.
func wantedNames(names []string) func(string) bool {
	if names == nil {
		return func(string) bool { return true }
	}
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	return func(n string) bool { return want[n] }
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
