package mirror

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/consumer"
)

// OriginHeader is the record header the mirror adds: the hops of a copy,
// "NAME/PARTITION/OFFSET" of each cluster it was copied from, comma
// separated, the first naming the cluster it was produced in (see
// origin.go).
const OriginHeader = "tributary.origin"

// Source is one live cluster to copy from.
type Source struct {
	// Name identifies the cluster in origin headers, logs and the status,
	// e.g. "dc1". Another mirror copying out of the target uses the target's
	// name (Config.TargetName) the same way, which is how loops are broken.
	Name string
	// Bootstrap lists brokers of the cluster, host:port: any
	// Kafka-protocol cluster (Tributary standalone or clustered, Apache
	// Kafka).
	Bootstrap []string
	// ZooKeeper is a Tributary cluster's connect string,
	// host:port[,...]/chroot, from which its brokers are read instead
	// (the older form). Exactly one of Bootstrap and ZooKeeper is set.
	ZooKeeper string
	// Registry is the URL of the schema registry the cluster's producers
	// use. Empty, or equal to Config.TargetRegistry: ids are copied as they
	// are (one shared registry).
	Registry string
}

// UnknownSchemaPolicy says what to do with a value whose schema id the
// source registry cannot resolve.
type UnknownSchemaPolicy int

const (
	// StopOnUnknown stops the record's partition (the others go on), with
	// an error naming source, topic, partition and offset in the log and
	// the status. Nothing after the record is copied, so the partition
	// resumes there once the registry is fixed and the mirror restarts.
	StopOnUnknown UnknownSchemaPolicy = iota
	// CopyUnknown copies the record unchanged and counts it in the status
	// (PartitionStatus.UnknownSchemas); a log line names the first one of
	// each partition.
	CopyUnknown
)

// Config describes one mirror process.
type Config struct {
	// Sources are the clusters to copy from; names must be unique.
	Sources []Source
	// Target lists seed brokers of the analysis cluster, host:port.
	Target []string
	// TargetName is the target cluster's name as other mirrors know it
	// (their Source.Name for it): records whose origin header carries it
	// are not copied back. Default "analysis".
	TargetName string
	// TargetRegistry is the URL of the target datacenter's schema registry.
	TargetRegistry string
	// KeepSchemaIDs copies schema-registry envelopes unchanged when no
	// TargetRegistry is given: the datacenters share one registry. Without
	// it (and without a target registry) the mirror refuses envelopes.
	KeepSchemaIDs bool
	// Topics selects the topics to copy (a regular expression, matched
	// anywhere in the name; anchor it with ^...$ for exact names).
	// Default: every topic.
	Topics string
	// Exclude removes topics that Topics selected. Default "^_schemas$":
	// each datacenter's registry keeps its own _schemas topic.
	Exclude string
	// Group names the broker-side consumer group in every source; mirror
	// processes with the same group share the work. The group is used for
	// assignment only: nothing is committed. Default "tributary-mirror".
	Group string
	// InstanceID makes this process a static member of the groups
	// (KIP-345): restarted with the same id within the session timeout,
	// it gets its partitions back without a rebalance. Unique per process.
	InstanceID string
	// Start applies to source partitions of which the target holds no
	// copy. Default consumer.Smallest (everything retained).
	Start consumer.Start
	// CommitInterval is ignored: the mirror commits nothing (kept so that
	// older configurations still load).
	CommitInterval time.Duration
	// SessionTimeout is the group session timeout: how long after a crash
	// the process's partitions are taken over. Default 10s.
	SessionTimeout time.Duration
	// Rename gives the target topic's name from the source's: "{source}"
	// and "{topic}" are replaced, e.g. "{source}.{topic}". Default
	// "{topic}".
	Rename string
	// Groups selects the source consumer groups whose committed offsets
	// are translated into the target every GroupSyncInterval (default
	// 10s), so that their consumers can fail over to the analysis
	// datacenter (a regular expression; empty: none).
	Groups            string
	GroupSyncInterval time.Duration
	// SyncACLs copies the sources' ACLs on the selected topics into the
	// target every ACLSyncInterval (default 1m), read-only: Read and
	// Describe grants, never Write (see acls.go for the rules).
	SyncACLs        bool
	ACLSyncInterval time.Duration
	// TopicSyncInterval is how often topic config changes and partition
	// increases in the sources are carried to the target. Default 30s.
	TopicSyncInterval time.Duration
	// FetchMaxPartitionBytes and FetchMaxBytes bound one fetch from a
	// source, per partition and in all. One fetch per source broker is in
	// flight, so across a WAN a partition gets at most one fetch's bytes
	// per round trip. Defaults 32 MiB and 64 MiB.
	FetchMaxPartitionBytes int32
	FetchMaxBytes          int32
	// ConnectTimeout bounds the wait for each source's ZooKeeper and
	// brokers at start, so that a wrong address fails instead of hanging.
	// Default 30s.
	ConnectTimeout time.Duration
	// ShutdownTimeout bounds the wait for the target's acknowledgements on
	// shutdown; whatever is unacknowledged then is found missing in the
	// target and copied by the next run. Default 30s.
	ShutdownTimeout time.Duration
	// StrictPartitions refuses to copy a topic whose target has a different
	// partition count, instead of placing its records by key hash.
	StrictPartitions bool
	// NoTransactions copies with one idempotent producer instead of a
	// transactional producer per source partition (txn.go): for a target
	// that cannot do transactions (or whose ACLs grant the mirror no
	// transactional id). Resuming from the target still copies each
	// record once across kills, except in the windows the package doc
	// names, where what was in flight can be copied twice.
	NoTransactions bool
	// TransactionInterval is how long a source partition's transaction
	// stays open from its first record (default 1s): the records it
	// holds become visible to the target's read_committed consumers at its
	// commit, so it bounds the latency transactions add; shorter costs
	// more commits (see txn.go). An idle partition has none open.
	TransactionInterval time.Duration
	// TransactionTimeout is the coordinator's limit on one transaction
	// (default 60s): a transaction its owner leaves open longer (a paused
	// process nobody took over from) is aborted by the target.
	TransactionTimeout time.Duration
	// UnknownSchemas is the policy for unresolvable schema ids.
	UnknownSchemas UnknownSchemaPolicy
	// LogInterval is how often a progress line per source is logged.
	// Default 30s; negative disables.
	LogInterval time.Duration
	// Auditor, if set, is told of every record the target acknowledged.
	Auditor Auditor
	// Logger receives progress, rebalances and errors. Default slog.Default().
	Logger *slog.Logger
	// ProducerOptions are extra kgo options for the target producer, and
	// FetchOptions for the source clients: the group's fetcher and the
	// client that reads watermarks (sizes, TLS, ...).
	ProducerOptions []kgo.Opt
	FetchOptions    []kgo.Opt
	// SourceRegistryOptions and TargetRegistryOptions are extra pkg/sr
	// options for the source registries' clients and the target
	// registry's (basic auth, TLS): each side is secured on its own.
	SourceRegistryOptions []sr.ClientOpt
	TargetRegistryOptions []sr.ClientOpt
	// SourceListener is the listener of the sources' brokers the mirror
	// connects to: the security protocol FetchOptions speak (PLAINTEXT,
	// SSL, SASL_PLAINTEXT, SASL_SSL). Default PLAINTEXT.
	SourceListener string
}

// compiled is a validated Config with its defaults filled in.
type compiled struct {
	Config
	topics, exclude *regexp.Regexp
	groups          *regexp.Regexp // nil: no offsets translated
}

func (c Config) compile() (*compiled, error) {
	if len(c.Sources) == 0 {
		return nil, errors.New("mirror: no source cluster: give at least one, e.g. --source dc1=zk1:2181/tributary")
	}
	if len(c.Target) == 0 {
		return nil, errors.New("mirror: no target brokers: give the analysis cluster's brokers, e.g. --target 127.0.0.1:9092")
	}
	if c.TargetName == "" {
		c.TargetName = "analysis"
	}
	if err := validName("target name", c.TargetName); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, s := range c.Sources {
		if err := validName("source name", s.Name); err != nil {
			return nil, err
		}
		if seen[s.Name] {
			return nil, fmt.Errorf("mirror: source %q is given twice", s.Name)
		}
		seen[s.Name] = true
		if s.Name == c.TargetName {
			return nil, fmt.Errorf("mirror: source %q has the target's name: every record from it would look like one of the target's own and be skipped; name the target differently (--target-name)", s.Name)
		}
		switch {
		case s.ZooKeeper == "" && len(s.Bootstrap) == 0:
			return nil, fmt.Errorf("mirror: source %s: give its brokers (host:port[,host:port]) or its ZooKeeper connect string (host:port/chroot)", s.Name)
		case s.ZooKeeper != "" && len(s.Bootstrap) > 0:
			return nil, fmt.Errorf("mirror: source %s: give its brokers or its ZooKeeper connect string, not both", s.Name)
		case s.ZooKeeper != "":
			if _, _, err := cluster.ParseZKConnect(s.ZooKeeper); err != nil {
				return nil, fmt.Errorf("mirror: source %s: ZooKeeper connect string %q: want host:port[,host:port]/chroot (%v)", s.Name, s.ZooKeeper, err)
			}
		}
		if err := validURL(s.Registry); err != nil {
			return nil, fmt.Errorf("mirror: source %s: registry: %w", s.Name, err)
		}
		if s.Registry != "" && c.TargetRegistry == "" {
			return nil, fmt.Errorf("mirror: source %s has its own schema registry but no target registry is given: set the target's too (--target-registry), or neither when the datacenters share one", s.Name)
		}
	}
	if err := validURL(c.TargetRegistry); err != nil {
		return nil, fmt.Errorf("mirror: target registry: %w", err)
	}
	if c.Topics == "" {
		c.Topics = ".*"
	}
	topics, err := regexp.Compile(c.Topics)
	if err != nil {
		return nil, fmt.Errorf("mirror: --topics %q is not a valid regular expression: %w", c.Topics, err)
	}
	if c.Exclude == "" {
		c.Exclude = "^_schemas$"
	}
	exclude, err := regexp.Compile(c.Exclude)
	if err != nil {
		return nil, fmt.Errorf("mirror: --exclude %q is not a valid regular expression: %w", c.Exclude, err)
	}
	if c.Group == "" {
		c.Group = "tributary-mirror"
	}
	if err := cluster.ValidateName("group", c.Group); err != nil {
		return nil, fmt.Errorf("mirror: %w", err)
	}
	if c.Rename == "" {
		c.Rename = "{topic}"
	}
	if !strings.Contains(c.Rename, "{topic}") {
		return nil, fmt.Errorf("mirror: --rename %q must contain {topic}, e.g. {source}.{topic}", c.Rename)
	}
	if c.FetchMaxPartitionBytes <= 0 {
		c.FetchMaxPartitionBytes = 32 << 20
	}
	if c.FetchMaxBytes <= 0 {
		c.FetchMaxBytes = max(64<<20, c.FetchMaxPartitionBytes)
	}
	if c.Start != consumer.Smallest && c.Start != consumer.Largest {
		return nil, fmt.Errorf("mirror: unknown Start %d", c.Start)
	}
	if c.UnknownSchemas != StopOnUnknown && c.UnknownSchemas != CopyUnknown {
		return nil, fmt.Errorf("mirror: unknown UnknownSchemas policy %d", c.UnknownSchemas)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.SessionTimeout, 10*time.Second)
	def(&c.TopicSyncInterval, 30*time.Second)
	def(&c.ConnectTimeout, 30*time.Second)
	def(&c.ShutdownTimeout, 30*time.Second)
	def(&c.TransactionInterval, time.Second)
	def(&c.TransactionTimeout, time.Minute)
	if c.LogInterval == 0 {
		c.LogInterval = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	var groups *regexp.Regexp
	if c.Groups != "" {
		if groups, err = regexp.Compile(c.Groups); err != nil {
			return nil, fmt.Errorf("mirror: --groups %q is not a valid regular expression: %w", c.Groups, err)
		}
	}
	def(&c.GroupSyncInterval, 10*time.Second)
	def(&c.ACLSyncInterval, time.Minute)
	return &compiled{Config: c, topics: topics, exclude: exclude, groups: groups}, nil
}

// selects reports whether a topic is to be mirrored.
func (c *compiled) selects(topic string) bool {
	return c.topics.MatchString(topic) && !c.exclude.MatchString(topic)
}

// targetTopic is the name of a source topic in the target.
func (c *compiled) targetTopic(source, topic string) string {
	return strings.NewReplacer("{source}", source, "{topic}", topic).Replace(c.Rename)
}

// validName keeps cluster names printable and short: they travel in every
// record's origin header.
func validName(kind, name string) error {
	if name == "" {
		return fmt.Errorf("mirror: %s is empty", kind)
	}
	if len(name) > 64 || strings.ContainsFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.')
	}) {
		return fmt.Errorf("mirror: %s %q: use up to 64 letters, digits, '-', '_' or '.'", kind, name)
	}
	return nil
}

func validURL(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL", s)
	}
	return nil
}

// ParseSource parses the command line's NAME=BROKERS form, e.g.
// "dc1=kafka1:9092,kafka2:9092", or NAME=ZOOKEEPER for a Tributary cluster,
// e.g. "dc1=zk1:2181/tributary" (told apart by the chroot's '/').
func ParseSource(s string) (Source, error) {
	name, connect, ok := strings.Cut(s, "=")
	if !ok || name == "" || connect == "" {
		return Source{}, fmt.Errorf("source %q: want NAME=host:port[,host:port] (its brokers) or NAME=host:port/chroot (its ZooKeeper), e.g. dc1=kafka1:9092", s)
	}
	if strings.Contains(connect, "/") {
		return Source{Name: name, ZooKeeper: connect}, nil
	}
	var brokers []string
	for b := range strings.SplitSeq(connect, ",") {
		if b = strings.TrimSpace(b); b != "" {
			brokers = append(brokers, b)
		}
	}
	return Source{Name: name, Bootstrap: brokers}, nil
}
