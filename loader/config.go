package loader

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tributary-io/tributary/audit"
	"github.com/tributary-io/tributary/internal/clientsec"
	"github.com/tributary-io/tributary/loader/warehouse"
	"github.com/tributary-io/tributary/schema"
)

// Defaults of Config.
const (
	DefaultMaxErrors      = 100
	DefaultFileMaxBytes   = 128 << 20 // one HDFS block
	DefaultFileMaxRecords = 5_000_000
	DefaultCodec          = "deflate"
	DefaultDeflateLevel   = 6 // Avro's Java tools' default, and zlib's
	DefaultSuccessGrace   = 10 * time.Minute
	// DefaultCompleteMaxWait: an hour the audit has not found complete
	// six hours after its end is marked _INCOMPLETE.
	DefaultCompleteMaxWait = 6 * time.Hour
	DefaultLockTTL         = time.Minute
	DefaultBrokerTimeout   = 15 * time.Second
)

// What to do when records were deleted (by retention or DeleteRecords)
// before they were loaded (Config.OnDataLoss), and where a partition
// starts the first time (Config.StartAt).
const (
	Earliest = "earliest" // continue from the log start offset
	Latest   = "latest"   // continue from the high watermark
	Fail     = "fail"     // fail the run (OnDataLoss only)
)

// Config describes one load run. Zero values take the documented defaults.
type Config struct {
	// Brokers are bootstrap broker addresses (host:port). Required.
	Brokers []string
	// Topics lists the topics to load by name; or
	Topics []string
	// TopicRegex selects every topic whose whole name matches it. Topics
	// whose names start with "_" (_schemas, _audit, __consumer_offsets) are
	// matched only when named in Topics.
	TopicRegex string

	// Warehouse is the warehouse URL: file:///path (or a plain path) or
	// hdfs://namenode:port/path, hdfs://nameservice/path, hdfs:///path.
	// Ignored when FS is set.
	Warehouse string
	// WarehouseOptions are the Hadoop configuration and Kerberos
	// credentials of an HDFS warehouse.
	WarehouseOptions warehouse.Options
	// FS is an open warehouse; the caller keeps ownership of it.
	FS warehouse.FS

	// RegistryURL is the schema registry's URL; or
	RegistryURL string
	// Registry is a registry client.
	Registry schema.Registry

	// Security is how the run reaches secured brokers (TLS, SASL), the
	// audit's brokers included.
	Security clientsec.Kafka
	// RegistrySecurity is how it reaches a secured registry at
	// RegistryURL (and the audit's): basic auth, the CA of its HTTPS.
	RegistrySecurity clientsec.Registry
	kgoOpts          []kgo.Opt      // from Security, by withDefaults
	srOpts           []sr.ClientOpt // from RegistrySecurity, by withDefaults

	// MaxRecords stops the run after this many records (0: no limit).
	MaxRecords int64
	// MaxDuration stops fetching after this long and commits what was
	// fetched (0: no limit).
	MaxDuration time.Duration
	// MaxErrors fails the run when more records than this cannot be
	// decoded. Zero allows none; negative: no limit. (The command and job
	// specs default to DefaultMaxErrors.)
	MaxErrors int64

	// FileMaxBytes rolls a file once it reaches this size. Default
	// DefaultFileMaxBytes.
	FileMaxBytes int64
	// FileMaxRecords rolls a file once it holds this many records. Default
	// DefaultFileMaxRecords.
	FileMaxRecords int64
	// Format is the data files' format: FormatAvro (default) or
	// FormatParquet.
	Format string
	// Table, if set, loads each topic into the Apache Iceberg table
	// <Table>/<topic> of the warehouse's file-system catalog (Table is the
	// namespace), one snapshot a run, committed with the offsets
	// (iceberg.go). It implies FormatParquet.
	Table string
	// Catalog is the catalog of the tables (iceberg_catalog.go): the
	// file-system catalog on the warehouse by default, or a REST catalog.
	Catalog CatalogConfig
	// Expire, if set, expires old snapshots of each table a run
	// committed to, right after the run (iceberg_expire.go).
	Expire *ExpirePolicy
	// Codec compresses file blocks: null, deflate or snappy for Avro
	// (default deflate); snappy, zstd, gzip or none for Parquet (default
	// snappy).
	Codec string
	// DeflateLevel is the deflate codec's level, from 1 (fastest) to 9
	// (smallest); 0 takes DefaultDeflateLevel. It trades the loader's CPU
	// for warehouse bytes and is not recorded in the files: any Avro
	// reader reads them all alike. Another level than the default with
	// another codec is refused (CheckCodecLevel).
	DeflateLevel int

	// SuccessGrace is how long after an hour ends late events are still
	// expected; an hour gets its _SUCCESS marker once every partition has
	// been loaded up to the end of the hour plus this. Default
	// DefaultSuccessGrace.
	SuccessGrace time.Duration
	// CompleteBy decides what an hour's _SUCCESS certifies:
	// CompleteByProgress, that every partition was loaded SuccessGrace
	// past the hour's end; CompleteByAudit, that too and that the audit's
	// warehouse tier holds every event the producers counted in the hour
	// (CompleteThreshold percent of them), so that a job waiting for
	// _SUCCESS never reads an hour the audit knows to be short. Default:
	// CompleteByAudit with Audit, CompleteByProgress without.
	CompleteBy string
	// CompleteThreshold is the completeness in percent CompleteByAudit
	// asks of an hour. Default 100.
	CompleteThreshold float64
	// CompleteMaxWait is how long after its end an hour that the audit
	// does not find complete gets an _INCOMPLETE marker with the figures
	// instead of _SUCCESS. Default DefaultCompleteMaxWait.
	CompleteMaxWait time.Duration
	// OnDataLoss is what to do when a partition's committed offset is
	// below its log start (retention or DeleteRecords deleted records
	// before they were loaded): Earliest (default), Latest or Fail. The lost range is
	// reported in every case.
	OnDataLoss string
	// StartAt is where a partition never loaded before starts: Earliest
	// (default) or Latest.
	StartAt string

	// LockTTL is the lease of the topic locks; a dead run's topics can be
	// loaded again after it. Default DefaultLockTTL.
	LockTTL time.Duration
	// Share makes loaders given the same topics share them: a topic whose
	// lock another run holds is skipped (listed in Summary.Skipped)
	// instead of failing the run, and a run that finds every topic held
	// commits nothing and returns no error. Default: a held topic fails
	// the run with a *warehouse.LockedError.
	Share bool
	// MaxTopics, with Share, is the most topics one run takes, picked at
	// random among the free ones, so that several loaders running at
	// once spread the topics between them (0: every free topic).
	MaxTopics int
	// MaxPartitions, with Share, makes the partition the unit of sharing,
	// so that several loaders divide one big topic too: a run takes a
	// lease on at most this many free partitions that have records to
	// load, fetches them, and takes its topics' locks only to commit,
	// merging its partitions into the topics' newest state (share.go).
	MaxPartitions int
	// Holder describes the caller in lock files, e.g. "tributary load".
	Holder string
	// BrokerTimeout bounds each metadata and offset request, so that
	// unreachable brokers fail the run. Default DefaultBrokerTimeout.
	BrokerTimeout time.Duration

	// RunID names the run; default: the start time and a random suffix.
	RunID string
	// Now is the clock for hour progress and run times. Default time.Now.
	Now func() time.Time
	// Logger receives one line per event an operator would want. Default
	// slog.Default().
	Logger *slog.Logger
	// Progress, if set, is called about four times a second while
	// fetching, from the run's goroutine.
	Progress func(Progress)
	// Audit, if set, makes the run publish the counts of what it committed
	// as the audit's warehouse tier (see AuditConfig). Default: off.
	Audit *AuditConfig
	// HeaderField is the top-level field holding the events' header,
	// whose time files each event by hour and counts it for the audit
	// (schema.HeaderLayout). Default: schema.DefaultHeaderField.
	HeaderField string

	// Fault, if set, is called at each FaultPoint; a non-nil error makes
	// the run stop there as if its process had been killed: nothing is
	// cleaned up or released. For crash tests.
	Fault func(FaultPoint) error
}

func (c *Config) withDefaults() (Config, error) {
	cfg := *c
	if len(cfg.Brokers) == 0 {
		return cfg, errors.New("no brokers given")
	}
	if len(cfg.Topics) == 0 && cfg.TopicRegex == "" {
		return cfg, errors.New("no topics given (a list of names or a regular expression)")
	}
	if cfg.TopicRegex != "" {
		if _, err := regexp.Compile("^(?:" + cfg.TopicRegex + ")$"); err != nil {
			return cfg, fmt.Errorf("topic regex %q: %w", cfg.TopicRegex, err)
		}
	}
	if cfg.MaxTopics < 0 || (cfg.MaxTopics > 0 && !cfg.Share) {
		return cfg, fmt.Errorf("max topics %d: takes a positive number, and sharing (Share, --share)", cfg.MaxTopics)
	}
	if cfg.MaxPartitions < 0 || (cfg.MaxPartitions > 0 && (!cfg.Share || cfg.MaxTopics > 0)) {
		return cfg, fmt.Errorf("max partitions %d: takes a positive number, and sharing (Share, --share) without max topics", cfg.MaxPartitions)
	}
	if cfg.MaxPartitions > 0 && cfg.Audit != nil {
		return cfg, errors.New("sharing partitions (max partitions) does not count for the audit yet: share by topic (max topics) with the audit")
	}
	if cfg.FS == nil && cfg.Warehouse == "" {
		return cfg, errors.New("no warehouse given")
	}
	if cfg.Registry == nil && cfg.RegistryURL == "" {
		return cfg, errors.New("no schema registry given")
	}
	var err error
	if cfg.kgoOpts, err = cfg.Security.Opts(); err != nil {
		return cfg, fmt.Errorf("brokers: %w", err)
	}
	if cfg.srOpts, err = cfg.RegistrySecurity.Opts(); err != nil {
		return cfg, fmt.Errorf("schema registry: %w", err)
	}
	if cfg.FileMaxBytes <= 0 {
		cfg.FileMaxBytes = DefaultFileMaxBytes
	}
	if cfg.FileMaxRecords <= 0 {
		cfg.FileMaxRecords = DefaultFileMaxRecords
	}
	if cfg.Table == "" && cfg.Expire != nil {
		return cfg, errors.New("snapshot expiry is for Iceberg tables: give the table namespace too")
	}
	if cfg.Table == "" && cfg.Catalog != (CatalogConfig{}) {
		return cfg, fmt.Errorf("a catalog (%s) is for Iceberg tables: give the table namespace too", cfg.Catalog.Type)
	}
	if cfg.Table != "" {
		if err := CheckTableName(cfg.Table); err != nil {
			return cfg, err
		}
		if err := cfg.Catalog.Check(); err != nil {
			return cfg, err
		}
		if cfg.Format != "" && cfg.Format != FormatParquet {
			return cfg, fmt.Errorf("format %q: an Iceberg table's files are Parquet", cfg.Format)
		}
		cfg.Format = FormatParquet
	}
	if cfg.Format == "" {
		cfg.Format = FormatAvro
	}
	if err := CheckFormatCodec(cfg.Format, cfg.Codec); err != nil {
		return cfg, err
	}
	if cfg.Format == FormatParquet {
		if cfg.Codec == "" {
			cfg.Codec = DefaultParquetCodec
		}
		if cfg.DeflateLevel != 0 && cfg.DeflateLevel != DefaultDeflateLevel {
			return cfg, fmt.Errorf("deflate level %d applies to Avro files with the deflate codec only, and the format is parquet: drop the level", cfg.DeflateLevel)
		}
	}
	if cfg.Codec == "" {
		cfg.Codec = DefaultCodec
	}
	if err := CheckCodecLevel(cfg.Codec, cfg.DeflateLevel); err != nil && cfg.Format == FormatAvro {
		return cfg, err
	}
	if cfg.DeflateLevel == 0 {
		cfg.DeflateLevel = DefaultDeflateLevel
	}
	if err := CheckDeflateLevel(cfg.DeflateLevel); err != nil {
		return cfg, err
	}
	if cfg.SuccessGrace <= 0 {
		cfg.SuccessGrace = DefaultSuccessGrace
	}
	switch cfg.CompleteBy {
	case "":
		cfg.CompleteBy = CompleteByProgress
		if cfg.Audit != nil {
			cfg.CompleteBy = CompleteByAudit
		}
	case CompleteByProgress:
	case CompleteByAudit:
		if cfg.Audit == nil {
			return cfg, errors.New("complete by audit needs the run to count for the audit (--audit)")
		}
	default:
		return cfg, fmt.Errorf("complete by %q: use %s or %s", cfg.CompleteBy, CompleteByProgress, CompleteByAudit)
	}
	if cfg.CompleteThreshold == 0 {
		cfg.CompleteThreshold = 100
	}
	if cfg.CompleteThreshold < 0 || cfg.CompleteThreshold > 100 {
		return cfg, fmt.Errorf("complete threshold %v: a percentage, above 0 and at most 100", cfg.CompleteThreshold)
	}
	if cfg.CompleteMaxWait <= 0 {
		cfg.CompleteMaxWait = DefaultCompleteMaxWait
	}
	switch cfg.OnDataLoss {
	case "":
		cfg.OnDataLoss = Earliest
	case Earliest, Latest, Fail:
	default:
		return cfg, fmt.Errorf("on data loss %q: use earliest, latest or fail", cfg.OnDataLoss)
	}
	switch cfg.StartAt {
	case "":
		cfg.StartAt = Earliest
	case Earliest, Latest:
	default:
		return cfg, fmt.Errorf("start at %q: use earliest or latest", cfg.StartAt)
	}
	if cfg.LockTTL <= 0 {
		cfg.LockTTL = DefaultLockTTL
	}
	if cfg.Holder == "" {
		cfg.Holder = "tributary load"
	}
	if cfg.BrokerTimeout <= 0 {
		cfg.BrokerTimeout = DefaultBrokerTimeout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Audit != nil {
		a := *cfg.Audit
		if len(a.Brokers) == 0 {
			a.Brokers = cfg.Brokers
		}
		if a.Registry == nil && a.RegistryURL == "" {
			a.Registry, a.RegistryURL = cfg.Registry, cfg.RegistryURL
		}
		if a.Window <= 0 {
			a.Window = audit.DefaultWindow
		}
		if a.Timeout <= 0 {
			a.Timeout = cfg.BrokerTimeout
		}
		cfg.Audit = &a
	}
	return cfg, nil
}

// CheckFormatCodec says why format and codec (either may be empty: the
// default) cannot go together, for the command and job specs.
func CheckFormatCodec(format, codec string) error {
	switch format {
	case "", FormatAvro:
		if codec != "" && !slices.Contains(Codecs, codec) {
			return fmt.Errorf("codec %q: Avro files take one of %v", codec, Codecs)
		}
	case FormatParquet:
		if codec != "" && !slices.Contains(ParquetCodecs, codec) {
			return fmt.Errorf("codec %q: Parquet files take one of %v", codec, ParquetCodecs)
		}
	default:
		return fmt.Errorf("format %q: use one of %v", format, Formats)
	}
	return nil
}

// MinDeflateLevel and MaxDeflateLevel bound Config.DeflateLevel.
const (
	MinDeflateLevel = 1
	MaxDeflateLevel = 9
)

// CheckDeflateLevel says why level cannot be a Config.DeflateLevel (0,
// the default, aside), for the command and job specs to name their own
// flag or field in front of it.
func CheckDeflateLevel(level int) error {
	if level < MinDeflateLevel || level > MaxDeflateLevel {
		return fmt.Errorf("deflate level %d: use %d (fastest) to %d (smallest); the default is %d", level, MinDeflateLevel, MaxDeflateLevel, DefaultDeflateLevel)
	}
	return nil
}

// CheckCodecLevel refuses a deflate level other than the default given
// with another codec: the level would be ignored, and whoever set it
// would believe the files trade CPU for size as asked. The default level
// passes, so that a flag left at its default is no mistake.
func CheckCodecLevel(codec string, level int) error {
	if codec == "" {
		codec = DefaultCodec
	}
	if codec != "deflate" && level != 0 && level != DefaultDeflateLevel {
		return fmt.Errorf("deflate level %d applies to the deflate codec only, and the codec is %s: drop the level or use deflate", level, codec)
	}
	return nil
}

// What an hour's _SUCCESS certifies (Config.CompleteBy).
const (
	CompleteByProgress = "progress"
	CompleteByAudit    = "audit"
)

// FaultPoint names a moment of a run where a crash test can stop it.
type FaultPoint string

// The points a run passes, in order.
const (
	// FaultMidFetch: records have been fetched, not all of them.
	FaultMidFetch FaultPoint = "mid-fetch"
	// FaultMidWrite: files are open in the run's directory, partly written.
	FaultMidWrite FaultPoint = "mid-write"
	// FaultBeforeCommit: every file is complete and durable; the commit
	// has not happened.
	FaultBeforeCommit FaultPoint = "before-commit"
	// FaultCommitPoint: the locks were checked and no other run has
	// committed the run's topics; the exclusive create of the commit (its
	// commit point) has not happened. A process stopped here past its
	// leases is what the commit's fence is for.
	FaultCommitPoint FaultPoint = "commit-point"
	// FaultAfterCommit: the manifest is committed, no file has been moved.
	FaultAfterCommit FaultPoint = "after-commit"
	// FaultMidMove: some files have been moved into place, not all.
	FaultMidMove FaultPoint = "mid-move"
	// FaultBeforeAudit (runs with an AuditConfig that counted something):
	// the files are in place, the counts not yet published.
	FaultBeforeAudit FaultPoint = "before-audit"
	// FaultAfterAudit: the counts are published, not yet marked so.
	FaultAfterAudit FaultPoint = "after-audit"
)

// FaultPoints lists every FaultPoint in the order a run passes them.
var FaultPoints = []FaultPoint{FaultMidFetch, FaultMidWrite, FaultBeforeCommit, FaultCommitPoint, FaultAfterCommit, FaultMidMove}

// AuditFaultPoints are the points only a run that publishes audit counts
// passes, after FaultPoints.
var AuditFaultPoints = []FaultPoint{FaultBeforeAudit, FaultAfterAudit}

// errCrash wraps the error a Fault hook returned.
type errCrash struct{ err error }

func (e errCrash) Error() string { return "simulated crash: " + e.err.Error() }
func (e errCrash) Unwrap() error { return e.err }
