// Package configapi serves the config APIs: DescribeConfigs,
// AlterConfigs and IncrementalAlterConfigs.
//
// One file per API holds its versions, its handler and its ACL rule
// (DescribeConfigs or AlterConfigs on the topic, or on the cluster for a
// broker or its loggers). What a setting's value is, where it comes from
// and what a change must respect is broker/settings': the broker's flags,
// its dynamic broker configs and a topic's own configs meet there, and the
// broker gives the handlers it as a Settings. A handler checks and filters
// the request, asks Settings, and shapes the answer for the request's
// version.
//
// The broker builds Handlers with New from what they use and adds them to
// its registry with Register; nothing here imports the root broker.
package configapi

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/kafkaapi"
)

// Config is what the config APIs use from the broker.
type Config struct {
	// Authz decides each request (broker/acl's helper); nil allows
	// everything.
	Authz *acl.Authorizer
	// Settings reports the settings described.
	Settings Settings
}

// Settings is where the described settings come from and where changes
// go: the broker's defaults, flags and dynamic configs, and a topic's own
// configs (broker/settings).
type Settings interface {
	// TopicConfigs reports topic name's settings. A code refuses the
	// lookup (UNKNOWN_TOPIC_OR_PARTITION); an error says why its stored
	// configs do not apply (INVALID_CONFIG).
	TopicConfigs(name string) (entries []Entry, code int16, err error)
	// BrokerConfigs reports the settings of broker resource name: this
	// broker's id, or "" for the cluster-wide defaults set. An error
	// (broker/kafkaerr) refuses name.
	BrokerConfigs(name string) ([]Entry, error)
	// LoggerConfigs reports the loggers of broker resource name (its id);
	// an error (broker/kafkaerr) refuses name.
	LoggerConfigs(name string) ([]Entry, error)

	// AlterTopicConfigs, AlterBrokerConfigs and AlterLoggerConfigs change
	// a resource's configs to what change makes of the current ones (a
	// topic's, a broker's or "" for the cluster-wide default, a broker's
	// loggers), checked, stored and applied unless validateOnly. An error
	// (broker/kafkaerr) refuses the change.
	AlterTopicConfigs(name string, validateOnly bool, change func(map[string]string) (map[string]string, error)) error
	AlterBrokerConfigs(name string, validateOnly bool, change func(map[string]string) (map[string]string, error)) error
	AlterLoggerConfigs(name string, validateOnly bool, change func(map[string]string) (map[string]string, error)) error
}

// Entry is one reported setting.
type Entry struct {
	Name     string
	Value    string
	Type     kmsg.ConfigType
	Source   kmsg.ConfigSource
	ReadOnly bool
	// Synonyms are the values of every level the setting has, highest
	// precedence first (DescribeConfigs' include_synonyms).
	Synonyms []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym
}

// Handlers serves the config APIs of one broker.
type Handlers struct {
	authz    *acl.Authorizer
	settings Settings
}

// New returns the config APIs over cfg. It only keeps cfg: the broker may
// build them before it serves.
func New(cfg Config) *Handlers {
	return &Handlers{authz: cfg.Authz, settings: cfg.Settings}
}

// apis are this package's APIs, each declared in its file's init.
var apis kafkaapi.APIs[*Handlers]

// add declares, from an API file's init, that h serves key in versions
// min..max with serve(h).
func add(key, min, max int16, serve func(*Handlers) kafkaapi.Serve) { apis.Add(key, min, max, serve) }

// Register adds every config API of this package to r.
func (h *Handlers) Register(r *kafkaapi.Registry) {
	apis.Register(r, h)
}
