package settings

// A broker's settings as DescribeConfigs reports them: the dynamic ones
// with their level, and the flags' (given by the broker as
// Config.StaticEntries). A topic's are in topic.go, the loggers' in
// loggers.go.

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/brokerconfig"
	"github.com/tributary-io/tributary/broker/configapi"
	"github.com/tributary-io/tributary/broker/kafkaerr"
)

// BrokerConfigs implements configapi.Settings.
func (b *Broker) BrokerConfigs(name string) ([]configapi.Entry, error) {
	if err := b.checkBrokerResource(name); err != nil {
		return nil, err
	}
	return b.brokerConfigEntries(name != ""), nil
}

// checkBrokerResource accepts this broker's id, or "" (the cluster-wide
// default, which Kafka's tools address as --entity-default).
func (b *Broker) checkBrokerResource(name string) error {
	if name == "" || name == strconv.Itoa(int(b.self)) {
		return nil
	}
	return kafkaerr.New(kerr.InvalidRequest, "broker %q: this broker is %d; ask each broker about itself", name, b.self)
}

// brokerConfigEntries are the broker's settings under Kafka's names: with
// own, this broker's (every setting, dynamic ones first); without, the
// cluster-wide dynamic defaults set.
func (b *Broker) brokerConfigEntries(own bool) []configapi.Entry {
	st := b.Now()
	if !own {
		var out []configapi.Entry
		for _, d := range brokerconfig.All {
			for _, k := range d.Keys {
				if v, ok := st.Def[k]; ok {
					out = append(out, configapi.Entry{Name: k, Value: v, Type: d.Type,
						Source: kmsg.ConfigSourceDynamicDefaultBrokerConfig, Synonyms: st.Synonyms(d, false)})
				}
			}
		}
		return out
	}
	var entries []configapi.Entry
	for _, d := range brokerconfig.All {
		src := st.LevelOf(d)
		syns := st.Synonyms(d, true)
		entries = append(entries, configapi.Entry{Name: d.Keys[0], Value: d.Get(st.Eff), Type: d.Type, Source: src, Synonyms: syns})
		// A coarser name set dynamically (log.retention.hours) is listed
		// too, so that tools filtering by source find it.
		for _, k := range d.Keys[1:] {
			if v, ok := st.Own[k]; ok {
				entries = append(entries, configapi.Entry{Name: k, Value: v, Type: d.Type, Source: kmsg.ConfigSourceDynamicBrokerConfig, Synonyms: syns})
			} else if v, ok := st.Def[k]; ok {
				entries = append(entries, configapi.Entry{Name: k, Value: v, Type: d.Type, Source: kmsg.ConfigSourceDynamicDefaultBrokerConfig, Synonyms: syns})
			}
		}
	}
	return append(entries, b.staticEntries...)
}
