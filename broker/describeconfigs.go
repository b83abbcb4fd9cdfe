package broker

// DescribeConfigs.
//
// Topics report the effective value of every setting of topicconfig.go with
// its source: the topic's own value (DYNAMIC_TOPIC_CONFIG), a broker flag
// (STATIC_BROKER_CONFIG) or the built-in default (DEFAULT_CONFIG). A broker
// (resource name: its id) reports the settings its flags decide, under
// Kafka's names, all read-only: they change with a restart, not with
// AlterConfigs. Synonyms and documentation are not sent.

import (
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/log"
)

func init() {
	register(32, 0, 4, now((*Broker).describeConfigs))
}

func (b *Broker) describeConfigs(req *kmsg.DescribeConfigsRequest) *kmsg.DescribeConfigsResponse {
	resp := kmsg.NewPtrDescribeConfigsResponse()
	for _, rr := range req.Resources {
		sr := kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		var entries []configEntry
		readOnly := false
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
				sr.ErrorCode = errorCode(err)
				msg := err.Error()
				sr.ErrorMessage = &msg
				break
			}
			entries, readOnly = b.brokerConfigEntries(), true
		default:
			sr.ErrorCode = kerr.InvalidRequest.Code
			msg := "Tributary describes topic and broker configs only"
			sr.ErrorMessage = &msg
		}
		want := wantedNames(rr.ConfigNames)
		for _, e := range entries {
			if !want(e.name) {
				continue
			}
			rc := kmsg.NewDescribeConfigsResponseResourceConfig()
			rc.Name, rc.ConfigType, rc.Source, rc.ReadOnly = e.name, e.typ, e.source, readOnly
			v := e.value
			rc.Value = &v
			rc.IsDefault = e.source == kmsg.ConfigSourceDefaultConfig
			sr.Configs = append(sr.Configs, rc)
		}
		resp.Resources = append(resp.Resources, sr)
	}
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
	return coded(kerr.InvalidRequest, "broker %q: this broker is %d; ask each broker about itself", name, b.selfID)
}

// brokerConfigEntries are the broker's own settings under Kafka's names,
// each STATIC_BROKER_CONFIG when a flag changed it, else DEFAULT_CONFIG.
func (b *Broker) brokerConfigEntries() []configEntry {
	builtin := Config{}.withDefaults()
	have, def := b.cfg.Log.WithDefaults(), log.Config{}.WithDefaults()
	long := func(name string, v, d int64) configEntry {
		return configEntry{name: name, value: strconv.FormatInt(v, 10), typ: kmsg.ConfigTypeLong, source: sourceOf(v == d)}
	}
	ms := func(name string, v, d time.Duration) configEntry {
		e := long(name, v.Milliseconds(), d.Milliseconds())
		e.value = durationMs(v)
		return e
	}
	boolean := func(name string, v, d bool) configEntry {
		return configEntry{name: name, value: strconv.FormatBool(v), typ: kmsg.ConfigTypeBoolean, source: sourceOf(v == d)}
	}
	entries := []configEntry{
		long("broker.id", int64(b.selfID), 0),
		{name: "log.dirs", value: b.cfg.DataDir, typ: kmsg.ConfigTypeString, source: kmsg.ConfigSourceStaticBrokerConfig},
		boolean("auto.create.topics.enable", b.cfg.AutoCreateTopics, true),
		long("num.partitions", int64(b.cfg.DefaultPartitions), int64(builtin.DefaultPartitions)),
		long("message.max.bytes", int64(b.cfg.MaxMessageBytes), int64(builtin.MaxMessageBytes)),
		long("socket.request.max.bytes", int64(b.cfg.MaxRequestBytes), int64(builtin.MaxRequestBytes)),
		long("log.segment.bytes", have.SegmentBytes, def.SegmentBytes),
		ms("log.roll.ms", have.SegmentAge, def.SegmentAge),
		long("log.flush.interval.messages", have.FlushMessages, def.FlushMessages),
		ms("log.flush.interval.ms", have.FlushInterval, def.FlushInterval),
		ms("log.retention.ms", have.RetentionAge, def.RetentionAge),
		long("log.retention.bytes", have.RetentionBytes, def.RetentionBytes),
		long("log.index.interval.bytes", have.IndexIntervalBytes, def.IndexIntervalBytes),
		ms("log.retention.check.interval.ms", have.RetentionCheckInterval, def.RetentionCheckInterval),
		ms("producer.id.expiration.ms", have.ProducerIDExpiry, def.ProducerIDExpiry),
		{name: "log.cleanup.policy", value: "delete", typ: kmsg.ConfigTypeList, source: kmsg.ConfigSourceDefaultConfig},
		// The default of topics that set no compression.type of their own.
		{name: "compression.type", value: have.Compression.String(), typ: kmsg.ConfigTypeString,
			source: sourceOf(have.Compression == def.Compression)},
	}
	entries[4].typ = kmsg.ConfigTypeInt
	return entries
}

func sourceOf(isDefault bool) kmsg.ConfigSource {
	if isDefault {
		return kmsg.ConfigSourceDefaultConfig
	}
	return kmsg.ConfigSourceStaticBrokerConfig
}
