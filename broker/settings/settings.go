// Package settings is what each setting is now on one broker: the
// dynamic broker configs over the flags (the model and its stores are
// broker/brokerconfig), a topic's own configs over those (the model is
// broker/topicconfig), and the log level (broker/brokerlogger).
//
// It promises: a setting is read from one place (TopicSettingsOf,
// TopicDefaults, ConnLimits, ThrottleRates); a change, made through this
// broker (AlterTopicConfigs, AlterBrokerConfigs, AlterLoggerConfigs) or
// another of the cluster (Reload, ReconfigureAll), reaches the open
// partitions without a restart, newer states never overtaken by older
// ones; a value outside its safe range (bounds.go) is refused when it is
// set, and a stored value that does not apply is skipped, never keeping a
// broker from starting. Settings are reported with their source as
// broker/configapi's Entry, which DescribeConfigs and CreateTopics answer
// with; *Broker is configapi's Settings.
//
// The broker builds it with New in its New, and nothing here imports the
// root broker.
package settings

import (
	"log/slog"

	"github.com/tributary-io/tributary/broker/brokerconfig"
	"github.com/tributary-io/tributary/broker/brokerlogger"
	"github.com/tributary-io/tributary/broker/configapi"
	"github.com/tributary-io/tributary/broker/partition"
	"github.com/tributary-io/tributary/cluster"
)

// Config is what the settings use from the broker.
type Config struct {
	Self     int32 // this broker's id: the BROKER resource it answers for
	Metadata cluster.Metadata
	// Store keeps the dynamic broker configs (a file, or ZooKeeper).
	Store brokerconfig.Store
	// Static are the settings the flags make; StaticEntries the settings
	// only flags change, reported read-only.
	Static        brokerconfig.Settings
	StaticEntries []configapi.Entry
	// Partitions are the open partitions a change applies to.
	Partitions *partition.Table
	// MaxRequestBytes bounds max.message.bytes: a larger batch could never
	// be sent.
	MaxRequestBytes int32
	Loggers         brokerlogger.Loggers
	Logger          *slog.Logger
	// Lookup finds an existing topic (never creating it): the code refuses
	// the name.
	Lookup func(name string) (cluster.Topic, int16)
}

// Broker is one broker's settings.
type Broker struct {
	self            int32
	meta            cluster.Metadata
	static          brokerconfig.Settings
	staticEntries   []configapi.Entry
	logs            *partition.Table
	maxRequestBytes int32
	loggers         brokerlogger.Loggers
	logger          *slog.Logger
	lookup          func(string) (cluster.Topic, int16)
	dyn             dynamicConfigs
}

// New returns the settings over cfg, the flags' alone until Load reads
// the dynamic ones.
func New(cfg Config) *Broker {
	b := &Broker{
		self: cfg.Self, meta: cfg.Metadata, static: cfg.Static, staticEntries: cfg.StaticEntries,
		logs: cfg.Partitions, maxRequestBytes: cfg.MaxRequestBytes, loggers: cfg.Loggers,
		logger: cfg.Logger, lookup: cfg.Lookup,
	}
	b.dyn.store = cfg.Store
	return b
}

// Follow reloads the dynamic broker configs on every change its store
// reports, until stop is closed.
func (b *Broker) Follow(stop <-chan struct{}) { brokerconfig.Follow(b.dyn.store, stop, b.Reload) }
