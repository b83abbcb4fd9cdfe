package jobs

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tributary-io/tributary/internal/clientsec"
	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/warehouse"
)

// Spec is a load job, read from a YAML file:
//
//	name: pageviews                 # default: the file name without .yaml
//	brokers: [127.0.0.1:9092]       # a list, or "host:port,host:port"
//	registry: http://127.0.0.1:8081
//	topics: [pageviews, clicks]     # a list of names, or a regular expression: "page.*|clicks"
//	warehouse: hdfs://prod-ns/data  # or hdfs://namenode:8020/data, hdfs:///data (fs.defaultFS), file:///var/warehouse, s3://bucket/prefix
//	hdfs:                           # an HDFS warehouse's cluster (warehouse.HDFSOptions); paths are relative to this file
//	  hadoop_conf: /etc/hadoop/conf # core-site.xml, hdfs-site.xml; default HADOOP_CONF_DIR, else $HADOOP_HOME/etc/hadoop
//	  principal: etl@EXAMPLE.COM    # Kerberos: log in with keytab, or from the ticket cache kinit filled
//	  keytab: etl.keytab
//	  krb5_conf: /etc/krb5.conf     # default KRB5_CONFIG, else /etc/krb5.conf
//	  data_transfer_protection: privacy # authentication, integrity, privacy; default: the configuration's
//	s3:                             # an s3://bucket/prefix warehouse's store (warehouse.S3Options); credentials: the AWS SDK's chain
//	  endpoint: https://objects.example.com:9000 # default AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL, else Amazon S3
//	  path_style: true              # buckets in the path; always so for an IP endpoint
//	  region: eu-west-1             # default AWS_REGION, else the shared config's, else us-east-1
//	schedule: every 15m             # or a cron expression: "*/15 * * * *", "@hourly"
//	share:                          # daemons given this job run it at once and divide its topics (loader.Config.Share)
//	  max_topics: 4                 # the most topics one run takes; 0: every free one
//	  max_partitions: 0             # or share by partition: the most partitions one run leases
//	limits:
//	  max_records: 1000000          # per run; 0: up to the high watermark
//	  max_duration: 10m
//	  max_errors: 100               # undecodable records before the run fails; -1: no limit
//	files:
//	  max_bytes: 128MiB
//	  max_records: 5000000
//	  format: avro                  # avro or parquet (Hive partitions topic/dt=YYYY-MM-DD/hr=HH)
//	  codec: deflate                # avro: null, deflate (default), snappy; parquet: snappy (default), zstd, gzip, none
//	  compact: false                # parquet, local warehouse: merge each hour's files once it is marked _SUCCESS
//	  deflate_level: 6              # codec deflate only: 1 (fastest load, larger files) to 9 (smallest files)
//	success_grace: 10m              # _SUCCESS an hour this long after it ends
//	on_data_loss: earliest          # earliest, latest or fail
//	start_at: earliest              # where a new partition starts: earliest or latest
//	lock_ttl: 1m
//	audit: true                     # commit each run's counts with it and publish them as the audit's "warehouse" tier
//	complete:                       # what an hour's _SUCCESS certifies
//	  by: audit                     # audit (default with audit: true): every event the producers counted is loaded; progress: loaded past the hour + success_grace
//	  threshold: 100                # by audit: the percentage of counted events the hour must hold
//	  max_wait: 6h                  # by audit: after this long past the hour's end, _INCOMPLETE with the figures instead
//	header_field: header            # top-level field holding the events' header (its time files and counts them)
//	retry:
//	  attempts: 3                   # retries after a failed run
//	  backoff: 30s                  # first wait; doubles each time
//	  max_backoff: 10m
//	security:                       # secured brokers (clientsec.Kafka); paths are relative to this file
//	  tls_ca: ca.pem                # tls: true for the system's CAs; tls_cert/tls_key for a client certificate
//	  sasl_mechanism: SCRAM-SHA-512 # PLAIN, SCRAM-SHA-256, SCRAM-SHA-512
//	  sasl_user: loader
//	  sasl_password_file: loader.pw # the password on its first line
//	registry_security:              # a registry behind HTTPS and basic auth (clientsec.Registry)
//	  user_info_file: registry.auth # user:password on its first line
//	  tls_ca: ca.pem
type Spec struct {
	Name      string `yaml:"name"`
	Brokers   List   `yaml:"brokers"`
	Registry  string `yaml:"registry"`
	Topics    Topics `yaml:"topics"`
	Warehouse string `yaml:"warehouse"`
	Schedule  string `yaml:"schedule"`
	Limits    Limits `yaml:"limits"`
	Files     Files  `yaml:"files"`
	// Table loads each topic into the Iceberg table Table.<topic> of the
	// warehouse's file-system catalog (loader.Config.Table); files.format
	// is then parquet.
	Table string `yaml:"table"`
	// Catalog is the table's catalog (loader.Config.Catalog): type
	// hadoop (the default) or rest, with its uri.
	Catalog loader.CatalogConfig `yaml:"catalog"`
	// Expire expires the table's old snapshots after each run
	// (loader.Config.Expire).
	Expire       *ExpireSpec `yaml:"expire"`
	SuccessGrace Duration    `yaml:"success_grace"`
	OnDataLoss   string      `yaml:"on_data_loss"`
	StartAt      string      `yaml:"start_at"`
	LockTTL      Duration    `yaml:"lock_ttl"`
	// Audit publishes each committed run's counts to the _audit topic of
	// the job's brokers, through its registry (loader.AuditConfig).
	Audit bool `yaml:"audit"`
	// Complete says what an hour's _SUCCESS certifies
	// (loader.Config.CompleteBy, CompleteThreshold, CompleteMaxWait).
	Complete Complete `yaml:"complete"`
	// HeaderField names the top-level field holding the events' header,
	// for users whose schemas call it otherwise (loader.Config.HeaderField).
	HeaderField string `yaml:"header_field"`
	Retry       Retry  `yaml:"retry"`
	// Security and RegistrySecurity are how the job reaches secured
	// brokers and registry (loader.Config.Security, RegistrySecurity).
	Security         clientsec.Kafka    `yaml:"security"`
	RegistrySecurity clientsec.Registry `yaml:"registry_security"`
	// HDFS is how an HDFS warehouse's cluster is reached: its Hadoop
	// configuration and Kerberos credentials (loader.Config.WarehouseOptions).
	HDFS warehouse.HDFSOptions `yaml:"hdfs"`
	// S3 is how an S3 warehouse's store is reached (its credentials come
	// from the AWS SDK's chain).
	S3 warehouse.S3Options `yaml:"s3"`
	// Share, when present, lets daemons run the job at the same time,
	// dividing its topics through their locks (loader.Config.Share),
	// instead of one daemon at a time holding the job's lock.
	Share *Share `yaml:"share"`

	// File is where the spec was read from.
	File string `yaml:"-"`
	// Sched is the parsed Schedule.
	Sched Schedule `yaml:"-"`
}

// Complete says when an hour is complete.
type Complete struct {
	By        string   `yaml:"by"`
	Threshold float64  `yaml:"threshold"`
	MaxWait   Duration `yaml:"max_wait"`
}

// Share is how daemons sharing a job divide its topics.
type Share struct {
	// MaxTopics is the most topics one run takes (loader.Config.MaxTopics).
	MaxTopics int `yaml:"max_topics"`
	// MaxPartitions shares by partition instead: the most partitions one
	// run leases (loader.Config.MaxPartitions).
	MaxPartitions int `yaml:"max_partitions"`
}

// Limits bound one run.
type Limits struct {
	MaxRecords  int64    `yaml:"max_records"`
	MaxDuration Duration `yaml:"max_duration"`
	MaxErrors   *int64   `yaml:"max_errors"`
}

// Files says how data files are written.
type Files struct {
	MaxBytes   Size  `yaml:"max_bytes"`
	MaxRecords int64 `yaml:"max_records"`
	// Format is loader.Config.Format: avro (default) or parquet.
	Format string `yaml:"format"`
	Codec  string `yaml:"codec"`
	// Compact, with Format parquet on a local warehouse, merges each
	// hour's small files (loader.Compact) right after the run that marks
	// the hour _SUCCESS.
	Compact bool `yaml:"compact"`
	// DeflateLevel is the deflate codec's level (loader.Config.DeflateLevel);
	// 0 or absent: loader.DefaultDeflateLevel.
	DeflateLevel int `yaml:"deflate_level"`
}

// Retry says how a failed run is retried.
type Retry struct {
	Attempts   *int     `yaml:"attempts"`
	Backoff    Duration `yaml:"backoff"`
	MaxBackoff Duration `yaml:"max_backoff"`
}

// Defaults of a spec's optional fields.
const (
	DefaultRetryAttempts = 3
	DefaultBackoff       = 30 * time.Second
	DefaultMaxBackoff    = 10 * time.Minute
	DefaultLockTTL       = time.Minute
)

// SpecError is a mistake in a spec file, located as precisely as known.
type SpecError struct {
	File  string
	Line  int
	Field string // dotted path, e.g. limits.max_records
	Msg   string
}

func (e *SpecError) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	if e.Field != "" {
		return fmt.Sprintf("%s: field %s: %s", loc, e.Field, e.Msg)
	}
	return fmt.Sprintf("%s: %s", loc, e.Msg)
}

var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// ParseSpec reads one spec. file names it in errors and gives the default
// job name.
func ParseSpec(file string, data []byte) (*Spec, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, &SpecError{File: file, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, &SpecError{File: file, Msg: "empty spec"}
	}
	s := &Spec{File: file}
	if err := decodeStrict(file, "", doc.Content[0], reflect.ValueOf(s).Elem()); err != nil {
		return nil, err
	}
	if err := s.validate(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Spec) validate() error {
	fail := func(field, msg string, args ...any) error {
		return &SpecError{File: s.File, Field: field, Msg: fmt.Sprintf(msg, args...)}
	}
	if s.Name == "" {
		s.Name = strings.TrimSuffix(strings.TrimSuffix(filepath.Base(s.File), ".yaml"), ".yml")
	}
	if !namePattern.MatchString(s.Name) {
		return fail("name", "%q: use letters, digits, '.', '_' and '-'", s.Name)
	}
	if len(s.Brokers) == 0 {
		return fail("brokers", "required (host:port of at least one broker)")
	}
	if s.Registry == "" {
		return fail("registry", "required (the schema registry's URL)")
	}
	if len(s.Topics.Names) == 0 && s.Topics.Regex == "" {
		return fail("topics", "required (a list of names or a regular expression)")
	}
	if s.Warehouse == "" {
		return fail("warehouse", "required (file:///path, hdfs://namenode:port/path, hdfs://nameservice/path or s3://bucket/prefix)")
	}
	if !strings.HasPrefix(s.Warehouse, "file://") && !strings.HasPrefix(s.Warehouse, "hdfs://") && !strings.HasPrefix(s.Warehouse, "s3://") && strings.Contains(s.Warehouse, "://") {
		return fail("warehouse", "%q: use file:///path, hdfs://namenode:port/path, hdfs://nameservice/path or s3://bucket/prefix", s.Warehouse)
	}
	if s.HDFS != (warehouse.HDFSOptions{}) && !strings.HasPrefix(s.Warehouse, "hdfs://") {
		return fail("hdfs", "the warehouse %q is not in HDFS", s.Warehouse)
	}
	if s.HDFS.Keytab != "" && s.HDFS.Principal == "" {
		return fail("hdfs.principal", "required with hdfs.keytab (the principal whose keys it holds, user@REALM)")
	}
	if err := warehouse.CheckDataTransferProtection(s.HDFS.DataTransferProtection); err != nil {
		return fail("hdfs.data_transfer_protection", "%v", err)
	}
	if s.Schedule == "" {
		return fail("schedule", `required ("every 15m" or a cron expression such as "*/15 * * * *")`)
	}
	sched, err := ParseSchedule(s.Schedule)
	if err != nil {
		return fail("schedule", "%v", err)
	}
	s.Sched = sched
	if err := loader.CheckFormatCodec(s.Files.Format, ""); err != nil {
		return fail("files.format", "%v", err)
	}
	if err := loader.CheckFormatCodec(s.Files.Format, s.Files.Codec); err != nil {
		return fail("files.codec", "%v", err)
	}
	if s.Table != "" {
		if err := loader.CheckTableName(s.Table); err != nil {
			return fail("table", "%v", err)
		}
		if err := s.Catalog.Check(); err != nil {
			return fail("catalog", "%v", err)
		}
		if e := s.Expire; e != nil && (e.OlderThan < 0 || e.RetainLast < 0 || e.OlderThan == 0 && e.RetainLast == 0) {
			return fail("expire", "give older_than (a duration), retain_last (a count), or both")
		}
		if s.Files.Format == "" {
			s.Files.Format = loader.FormatParquet
		}
		if s.Files.Format != loader.FormatParquet {
			return fail("files.format", "an Iceberg table's files are parquet")
		}
		if s.Files.Compact {
			return fail("files.compact", "compacts Parquet hour directories, not Iceberg tables")
		}
	}
	if s.Table == "" && s.Expire != nil {
		return fail("expire", "expires Iceberg table snapshots: give table too")
	}
	if s.Files.Compact && s.Files.Format != loader.FormatParquet {
		return fail("files.compact", "compacts Parquet files only: add files.format: parquet")
	}
	if s.S3 != (warehouse.S3Options{}) && !strings.HasPrefix(s.Warehouse, "s3://") {
		return fail("s3", "the warehouse %q is not in S3", s.Warehouse)
	}
	if s.Share != nil && s.Share.MaxTopics < 0 {
		return fail("share.max_topics", "%d: want 0 (every free topic) or more", s.Share.MaxTopics)
	}
	if s.Share != nil && (s.Share.MaxPartitions < 0 || (s.Share.MaxPartitions > 0 && (s.Share.MaxTopics > 0 || s.Audit))) {
		return fail("share.max_partitions", "%d: want 0 or more, and neither max_topics nor audit with it", s.Share.MaxPartitions)
	}
	if s.Files.Compact && strings.HasPrefix(s.Warehouse, "s3://") {
		return fail("files.compact", "needs a local warehouse: S3 has no atomic exchange of two directories")
	}
	if s.Files.Compact && strings.HasPrefix(s.Warehouse, "hdfs://") {
		return fail("files.compact", "needs a local warehouse: HDFS has no atomic exchange of two directories")
	}
	if s.Files.DeflateLevel != 0 {
		if err := loader.CheckDeflateLevel(s.Files.DeflateLevel); err != nil {
			return fail("files.deflate_level", "%v", err)
		}
		if s.Files.Format == loader.FormatParquet && s.Files.DeflateLevel != loader.DefaultDeflateLevel {
			return fail("files.deflate_level", "applies to files.format avro only")
		}
		if err := loader.CheckCodecLevel(s.Files.Codec, s.Files.DeflateLevel); err != nil && s.Files.Format != loader.FormatParquet {
			return fail("files.deflate_level", "%v", err)
		}
	}
	switch s.OnDataLoss {
	case "", loader.Earliest, loader.Latest, loader.Fail:
	default:
		return fail("on_data_loss", "%q: use earliest, latest or fail", s.OnDataLoss)
	}
	switch s.StartAt {
	case "", loader.Earliest, loader.Latest:
	default:
		return fail("start_at", "%q: use earliest or latest", s.StartAt)
	}
	switch s.Complete.By {
	case "", loader.CompleteByProgress:
	case loader.CompleteByAudit:
		if !s.Audit {
			return fail("complete.by", "audit needs audit: true (the runs must count for the audit)")
		}
	default:
		return fail("complete.by", "%q: use audit or progress", s.Complete.By)
	}
	if s.Complete.Threshold < 0 || s.Complete.Threshold > 100 {
		return fail("complete.threshold", "%v: a percentage, above 0 and at most 100", s.Complete.Threshold)
	}
	if s.Limits.MaxRecords < 0 {
		return fail("limits.max_records", "must not be negative")
	}
	if s.Files.MaxRecords < 0 {
		return fail("files.max_records", "must not be negative")
	}
	if s.Retry.Attempts != nil && *s.Retry.Attempts < 0 {
		return fail("retry.attempts", "must not be negative")
	}
	// Files named in a spec are found beside it, wherever the daemon runs.
	for _, p := range []*string{&s.Security.TLSCA, &s.Security.TLSCert, &s.Security.TLSKey, &s.Security.SASLPasswordFile,
		&s.RegistrySecurity.UserInfoFile, &s.RegistrySecurity.TLSCA,
		&s.HDFS.HadoopConf, &s.HDFS.Keytab, &s.HDFS.Krb5Conf} {
		if *p != "" && !filepath.IsAbs(*p) && s.File != "" {
			*p = filepath.Join(filepath.Dir(s.File), *p)
		}
	}
	if _, err := s.Security.Opts(); err != nil {
		return fail("security", "%v", err)
	}
	if _, err := s.RegistrySecurity.Opts(); err != nil {
		return fail("registry_security", "%v", err)
	}
	return nil
}

// LoadConfig is the loader configuration of one run of the job.
func (s *Spec) LoadConfig() loader.Config {
	cfg := loader.Config{
		Brokers:           s.Brokers,
		RegistryURL:       s.Registry,
		Topics:            s.Topics.Names,
		TopicRegex:        s.Topics.Regex,
		Warehouse:         s.Warehouse,
		MaxRecords:        s.Limits.MaxRecords,
		MaxDuration:       time.Duration(s.Limits.MaxDuration),
		FileMaxBytes:      int64(s.Files.MaxBytes),
		FileMaxRecords:    s.Files.MaxRecords,
		Format:            s.Files.Format,
		Table:             s.Table,
		Catalog:           s.Catalog,
		Expire:            s.Expire.policy(),
		Codec:             s.Files.Codec,
		DeflateLevel:      s.Files.DeflateLevel,
		SuccessGrace:      time.Duration(s.SuccessGrace),
		CompleteBy:        s.Complete.By,
		CompleteThreshold: s.Complete.Threshold,
		CompleteMaxWait:   time.Duration(s.Complete.MaxWait),
		OnDataLoss:        s.OnDataLoss,
		StartAt:           s.StartAt,
		LockTTL:           s.lockTTL(),
		Holder:            "job " + s.Name,
		HeaderField:       s.HeaderField,

		Security:         s.Security,
		RegistrySecurity: s.RegistrySecurity,
		WarehouseOptions: warehouse.Options{HDFS: s.HDFS, S3: s.S3},
	}
	if s.Audit {
		cfg.Audit = &loader.AuditConfig{}
	}
	if s.Share != nil {
		cfg.Share, cfg.MaxTopics, cfg.MaxPartitions = true, s.Share.MaxTopics, s.Share.MaxPartitions
	}
	cfg.MaxErrors = loader.DefaultMaxErrors
	if s.Limits.MaxErrors != nil {
		cfg.MaxErrors = *s.Limits.MaxErrors
	}
	return cfg
}

func (s *Spec) lockTTL() time.Duration {
	if s.LockTTL > 0 {
		return time.Duration(s.LockTTL)
	}
	return DefaultLockTTL
}

func (s *Spec) retries() (attempts int, backoff, maxBackoff time.Duration) {
	attempts, backoff, maxBackoff = DefaultRetryAttempts, DefaultBackoff, DefaultMaxBackoff
	if s.Retry.Attempts != nil {
		attempts = *s.Retry.Attempts
	}
	if s.Retry.Backoff > 0 {
		backoff = time.Duration(s.Retry.Backoff)
	}
	if s.Retry.MaxBackoff > 0 {
		maxBackoff = time.Duration(s.Retry.MaxBackoff)
	}
	return
}

// LoadDir reads every *.yaml and *.yml spec in dir. Job names must be
// unique.
func LoadDir(dir string) ([]*Spec, error) {
	var files []string
	for _, pat := range []string{"*.yaml", "*.yml"} {
		m, err := filepath.Glob(filepath.Join(dir, pat))
		if err != nil {
			return nil, err
		}
		files = append(files, m...)
	}
	sort.Strings(files)
	if len(files) == 0 {
		if _, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("jobs directory: %w", err)
		}
	}
	var specs []*Spec
	byName := map[string]string{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		s, err := ParseSpec(f, data)
		if err != nil {
			return nil, err
		}
		if other, dup := byName[s.Name]; dup {
			return nil, &SpecError{File: f, Field: "name", Msg: fmt.Sprintf("job %q is also defined in %s", s.Name, other)}
		}
		byName[s.Name] = f
		specs = append(specs, s)
	}
	return specs, nil
}

// Find returns the job called name among specs.
func Find(specs []*Spec, name string) (*Spec, error) {
	var names []string
	for _, s := range specs {
		if s.Name == name {
			return s, nil
		}
		names = append(names, s.Name)
	}
	return nil, fmt.Errorf("no job named %q (jobs: %s)", name, strings.Join(names, ", "))
}

// ExpireSpec is a job's snapshot expiry (loader.ExpirePolicy).
type ExpireSpec struct {
	OlderThan  Duration `yaml:"older_than"`
	RetainLast int      `yaml:"retain_last"`
}

func (e *ExpireSpec) policy() *loader.ExpirePolicy {
	if e == nil {
		return nil
	}
	return &loader.ExpirePolicy{OlderThan: time.Duration(e.OlderThan), RetainLast: e.RetainLast}
}
