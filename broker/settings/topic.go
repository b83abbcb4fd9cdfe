package settings

// A topic's settings on this broker: its configs (the model is
// broker/topicconfig) over the broker's defaults, which the dynamic broker
// configs and the flags decide (dynamic.go), how each is reported with its
// source (DescribeConfigs, CreateTopics), and changing them
// (AlterTopicConfigs).

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/brokerconfig"
	"github.com/tributary-io/tributary/broker/configapi"
	"github.com/tributary-io/tributary/broker/internaltopic"
	"github.com/tributary-io/tributary/broker/kafkaerr"
	"github.com/tributary-io/tributary/broker/topicconfig"
	"github.com/tributary-io/tributary/cluster"
)

// TopicDefaults are the settings of a topic that sets nothing: the
// dynamic broker configs over the broker's flags over the built-in
// defaults (dynamic.go).
func (b *Broker) TopicDefaults() topicconfig.Settings {
	if st := b.dyn.state.Load(); st != nil {
		return st.Eff.Topic
	}
	return b.static.Topic // during the broker's New, before they are read
}

// TopicSettingsOf is a topic's settings: its configs over the broker's
// defaults (TopicDefaults), or the broker's defaults alone if the
// configs do not apply (they were refused when set, so that means a
// broker of another version wrote them).
func (b *Broker) TopicSettingsOf(configs map[string]string) topicconfig.Settings {
	base := b.TopicDefaults()
	if len(configs) == 0 {
		return base
	}
	if s, err := topicconfig.Apply(base, configs); err == nil {
		return s
	}
	return base
}

// TopicEntries reports every topic setting with its effective value
// and where that value comes from: the topic (DYNAMIC_TOPIC_CONFIG), a
// dynamic broker config (DYNAMIC_BROKER_CONFIG, or
// DYNAMIC_DEFAULT_BROKER_CONFIG for the cluster-wide default), a broker
// flag (STATIC_BROKER_CONFIG) or the built-in default (DEFAULT_CONFIG).
// Sorted by name.
func (b *Broker) TopicEntries(configs map[string]string) ([]configapi.Entry, error) {
	broker := b.TopicDefaults()
	eff, err := topicconfig.Apply(broker, configs)
	if err != nil {
		return nil, err
	}
	st := b.Now()
	builtin := topicconfig.Builtin()
	names := topicconfig.Names()
	out := make([]configapi.Entry, 0, len(names))
	for _, name := range names {
		typ, _ := topicconfig.Type(name)
		e := configapi.Entry{Name: name, Value: topicconfig.Get(eff, name), Type: typ, Source: kmsg.ConfigSourceDefaultConfig}
		v, own := configs[name]
		if own {
			e.Synonyms = append(e.Synonyms, brokerconfig.Synonym(name, v, kmsg.ConfigSourceDynamicTopicConfig))
		}
		if d, ok := brokerconfig.TopicDefault(name); ok && st != nil {
			e.Source = st.LevelOf(d)
			e.Synonyms = append(e.Synonyms, st.Synonyms(d, true)...)
		} else {
			if topicconfig.Get(broker, name) != topicconfig.Get(builtin, name) {
				e.Source = kmsg.ConfigSourceStaticBrokerConfig
			}
			e.Synonyms = append(e.Synonyms, brokerconfig.Synonym(name, topicconfig.Get(builtin, name), kmsg.ConfigSourceDefaultConfig))
		}
		if own {
			e.Source = kmsg.ConfigSourceDynamicTopicConfig
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// TopicConfigs implements configapi.Settings: an existing topic only,
// never created by being described.
func (b *Broker) TopicConfigs(name string) ([]configapi.Entry, int16, error) {
	t, code := b.lookup(name)
	if code != 0 {
		return nil, code, nil
	}
	entries, err := b.TopicEntries(t.Configs)
	if err != nil {
		return nil, 0, err
	}
	return entries, 0, nil
}

// AlterTopicConfigs changes topic name's configs to what change makes of
// the current ones, after checking the result as CreateTopics checks a new
// topic's (and an internal topic's required configs), stores them in the
// cluster metadata and applies them to the open partitions. An error is
// broker/kafkaerr's.
func (b *Broker) AlterTopicConfigs(name string, validateOnly bool, change func(map[string]string) (map[string]string, error)) error {
	t, ok := b.meta.Topic(name)
	if !ok {
		return kafkaerr.New(kerr.UnknownTopicOrPartition, "topic %q does not exist", name)
	}
	next, err := change(t.Configs)
	if err != nil {
		return err
	}
	if next, err = internaltopic.Configs(name, next); err != nil {
		return err
	}
	if err := topicconfig.Check(next); err != nil {
		return kafkaerr.New(kerr.InvalidConfig, "topic %s: %v", name, err)
	}
	if err := b.CheckTopicBounds(next, replicasOf(t.Replicas)); err != nil {
		return err
	}
	if validateOnly {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t, err = b.meta.SetTopicConfigs(ctx, name, next)
	switch {
	case errors.Is(err, cluster.ErrUnknownTopic):
		return kafkaerr.New(kerr.UnknownTopicOrPartition, "topic %q does not exist", name)
	case err != nil:
		b.logger.Error("storing topic configs", "topic", name, "err", err)
		return kafkaerr.New(kerr.UnknownServerError, "storing configs of topic %s: %v", name, err)
	}
	b.ReconfigureTopic(t)
	b.logger.Info("topic configs changed", "topic", name, "configs", next)
	return nil
}

// ReconfigureTopic applies a topic's current configs, over the broker's
// current defaults, to its open partitions.
func (b *Broker) ReconfigureTopic(t cluster.Topic) {
	b.dyn.applyMu.Lock()
	defer b.dyn.applyMu.Unlock()
	cfg, err := topicconfig.LogConfig(b.TopicDefaults().Log, t.Configs)
	if err != nil {
		b.logger.Error("topic configs cannot be applied; partitions keep their settings", "topic", t.Name, "err", err)
		return
	}
	for _, l := range b.logs.OpenLogsOf(t.Name) {
		l.Reconfigure(cfg)
	}
}

// ReconfigureAll applies every topic's configs to its open partitions: run
// on each change of the cluster view, which is how a change made through
// another broker of a cluster reaches this one.
func (b *Broker) ReconfigureAll() {
	for _, t := range b.meta.Topics() {
		b.ReconfigureTopic(t)
	}
}
