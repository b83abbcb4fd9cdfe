package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/warehouse"
)

func init() {
	register("load", "load events (Avro, Protobuf, JSON Schema) from topics into a warehouse (local, HDFS, S3) as Avro or Parquet files or Iceberg tables, committing data and offsets atomically", runLoad)
}

// Test hooks; see faultFromEnv.
const (
	pauseEnv = "TRIBUTARY_LOAD_PAUSE_AT"
	delayEnv = "TRIBUTARY_LOAD_DELAY_AT"
)

// exitDataLoss is the exit status of a committed run that had to record
// lost offset ranges (retention deleted records before they were loaded).
const exitDataLoss = 3

// loadFlags are the flags of one load, shared with `jobs` overrides.
type loadFlags struct {
	brokers, registry, topics, warehouse string
	maxRecords                           int64
	maxDuration                          time.Duration
	maxErrors                            int64
	fileMaxBytes                         string
	fileMaxRecords                       int64
	format, codec                        string
	table                                string
	catalog                              catalogFlags
	expireOlderThan                      time.Duration
	expireRetainLast                     int
	deflateLevel                         int
	grace                                time.Duration
	onDataLoss, startAt                  string
	lockTTL                              time.Duration
	share                                bool
	maxTopics, maxPartitions             int
	audit                                bool
	completeBy                           string
	completeThreshold                    float64
	completeMaxWait                      time.Duration
	auditBrokers, auditRegistry          string
	headerField                          string
	sec                                  clientFlags
	hdfs                                 hdfsFlags
}

func runLoad(ctx context.Context, args []string) error {
	fs := newFlags("load")
	var f loadFlags
	fs.StringVar(&f.brokers, "brokers", "127.0.0.1:9092", "comma-separated broker addresses")
	fs.StringVar(&f.registry, "registry", "http://127.0.0.1:8081", "schema registry URL")
	fs.StringVar(&f.topics, "topics", "", "topics to load: a regular expression matching whole names, e.g. 'pageviews|clicks' (required)")
	fs.StringVar(&f.warehouse, "warehouse", "file:///var/warehouse", "warehouse URL: file:///path, hdfs://namenode:port/path, hdfs://nameservice/path, hdfs:///path (fs.defaultFS) or s3://bucket/prefix")
	fs.Int64Var(&f.maxRecords, "max-records", 0, "stop after this many records and commit them (0: up to the high watermark)")
	fs.DurationVar(&f.maxDuration, "max-duration", 0, "stop fetching after this long and commit what was fetched (0: no limit)")
	fs.Int64Var(&f.maxErrors, "max-errors", loader.DefaultMaxErrors, "fail the run when more records than this cannot be decoded (-1: no limit)")
	fs.StringVar(&f.fileMaxBytes, "file-max-bytes", "128MiB", "roll a file at this size")
	fs.Int64Var(&f.fileMaxRecords, "file-max-records", loader.DefaultFileMaxRecords, "roll a file at this many records")
	fs.StringVar(&f.format, "format", loader.FormatAvro, "data file format: avro (object container files, bodies as sent) or parquet (columns, in Hive partitions topic/dt=YYYY-MM-DD/hr=HH)")
	f.catalog.register(fs)
	fs.DurationVar(&f.expireOlderThan, "expire-older-than", 0, "with --table, after each committed run expire the table's snapshots older than this, as tributary expire does (default: no expiry)")
	fs.IntVar(&f.expireRetainLast, "expire-retain-last", 0, "with --table, after each committed run expire all but the newest N snapshots (with --expire-older-than: only those older too)")
	fs.StringVar(&f.table, "table", "", "load each topic into the Apache Iceberg table NAMESPACE.TOPIC at <warehouse>/NAMESPACE/TOPIC (file-system catalog, hour partitions of event time), one snapshot a run holding the offsets; implies --format parquet")
	fs.StringVar(&f.codec, "codec", "", "compression: null, deflate or snappy for avro (default deflate); snappy, zstd, gzip or none for parquet (default snappy)")
	fs.IntVar(&f.deflateLevel, "deflate-level", loader.DefaultDeflateLevel, "with --codec deflate: 1 (fastest load, larger files) to 9 (smallest files, slowest load); any Avro reader reads every level")
	fs.DurationVar(&f.grace, "success-grace", loader.DefaultSuccessGrace, "mark an hour _SUCCESS once every partition is loaded this long past its end")
	fs.StringVar(&f.onDataLoss, "on-data-loss", loader.Earliest, "when retention deleted records before they were loaded: earliest (continue at the log start), latest or fail; the lost range is reported either way")
	fs.StringVar(&f.startAt, "start-at", loader.Earliest, "where a partition loaded for the first time starts: earliest or latest")
	fs.DurationVar(&f.lockTTL, "lock-ttl", loader.DefaultLockTTL, "lease of the per-topic locks: how soon a killed run's topics can be loaded again")
	fs.BoolVar(&f.share, "share", false, "share the topics with other loaders given the same ones: skip a topic another run holds (instead of failing) and load those free; a run that finds every topic held exits 0 having loaded nothing")
	fs.IntVar(&f.maxTopics, "max-topics", 0, "with --share: load at most this many of the free topics, picked at random, so that loaders started together divide the topics (0: all free ones)")
	fs.IntVar(&f.maxPartitions, "max-partitions", 0, "with --share: share by partition, so that loaders divide one big topic too: load at most this many free partitions, picked at random, taking the topic's lock only to commit (not with --max-topics or --audit)")
	fs.BoolVar(&f.audit, "audit", false, "count what the run loads as the audit's \"warehouse\" tier (per topic, window of header time and server), commit the counts with the run and publish them to the _audit topic; counts of earlier runs cut short before publishing are published too")
	fs.StringVar(&f.completeBy, "complete-by", "", "what an hour's _SUCCESS certifies: audit (the default with --audit: the audit's warehouse tier holds every event the producers counted in the hour) or progress (the default without: every partition loaded --success-grace past the hour)")
	fs.Float64Var(&f.completeThreshold, "complete-threshold", 100, "with --complete-by audit: the percentage of the producers' counted events an hour must hold for _SUCCESS")
	fs.DurationVar(&f.completeMaxWait, "complete-max-wait", loader.DefaultCompleteMaxWait, "with --complete-by audit: an hour not complete this long after its end gets _INCOMPLETE, with the audit's figures, instead of _SUCCESS")
	fs.StringVar(&f.auditBrokers, "audit-brokers", "", "with --audit: brokers of the _audit topic (default: --brokers)")
	fs.StringVar(&f.auditRegistry, "audit-registry", "", "with --audit: schema registry of the monitoring events (default: --registry)")
	fs.StringVar(&f.headerField, "header-field", "header", "top-level `FIELD` of the events' record that holds their header (time, server); any record name or namespace is understood")
	f.sec.register(fs, true)
	f.hdfs.register(fs)
	asJSON := fs.Bool("json", false, "print the summary as JSON")
	quiet := fs.Bool("quiet", false, "no progress display")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if f.topics == "" {
		return errors.New("--topics is required")
	}
	if !f.audit && (f.auditBrokers != "" || f.auditRegistry != "") {
		return errors.New("--audit-brokers and --audit-registry need --audit")
	}
	cfg, err := f.config()
	if err != nil {
		return err
	}
	cfg.Fault = faultFromEnv()
	var bar *progressBar
	if !*quiet && isTerminal(os.Stderr) {
		bar = &progressBar{w: os.Stderr}
		cfg.Progress = bar.draw
		// Log lines go above the bar, not through it.
		cfg.Logger = slog.New(newLogHandler(bar))
	}
	sum, err := loader.Run(ctx, cfg)
	if bar != nil {
		bar.clear()
	}
	if sum != nil && (err == nil || sum.Committed) {
		if *asJSON {
			enc := json.NewEncoder(os.Stdout)
			enc.SetIndent("", "  ")
			enc.Encode(sum)
		} else {
			sum.WriteText(os.Stdout)
		}
	}
	if err != nil {
		return err
	}
	if sum.AuditError != "" {
		fmt.Fprintf(os.Stderr, "tributary load: the run is committed, but its audit counts were not published: %s\n", sum.AuditError)
	}
	if len(sum.Lost) > 0 {
		fmt.Fprintf(os.Stderr, "tributary load: %d offset ranges were lost before they could be loaded (see LOST above)\n", len(sum.Lost))
		return exitError(exitDataLoss)
	}
	return nil
}

// expirePolicy is the snapshot expiry after each run the flags ask for,
// nil for none.
func (f *loadFlags) expirePolicy() *loader.ExpirePolicy {
	if f.expireOlderThan <= 0 && f.expireRetainLast <= 0 {
		return nil
	}
	return &loader.ExpirePolicy{OlderThan: f.expireOlderThan, RetainLast: f.expireRetainLast}
}

func (f *loadFlags) config() (loader.Config, error) {
	size, err := loader.ParseBytes(f.fileMaxBytes)
	if err != nil {
		return loader.Config{}, fmt.Errorf("--file-max-bytes: %w", err)
	}
	if f.table != "" && f.format == loader.FormatAvro {
		f.format = loader.FormatParquet // --table implies it
	}
	if err := loader.CheckFormatCodec(f.format, f.codec); err != nil {
		return loader.Config{}, fmt.Errorf("--format, --codec: %w", err)
	}
	if err := loader.CheckDeflateLevel(f.deflateLevel); err != nil {
		return loader.Config{}, fmt.Errorf("--deflate-level: %w", err)
	}
	if f.format == loader.FormatParquet && f.deflateLevel != loader.DefaultDeflateLevel {
		return loader.Config{}, fmt.Errorf("--deflate-level: applies to --format avro only")
	}
	if err := loader.CheckCodecLevel(f.codec, f.deflateLevel); err != nil && f.format != loader.FormatParquet {
		return loader.Config{}, fmt.Errorf("--deflate-level: %w (--codec %s)", err, f.codec)
	}
	if err := warehouse.CheckDataTransferProtection(f.hdfs.o.DataTransferProtection); err != nil {
		return loader.Config{}, fmt.Errorf("--hdfs-data-transfer-protection: %w", err)
	}
	if f.hdfs.o.Keytab != "" && f.hdfs.o.Principal == "" {
		return loader.Config{}, errors.New("--hdfs-keytab needs --hdfs-principal (the principal whose keys it holds, user@REALM)")
	}
	var ac *loader.AuditConfig
	if f.audit {
		ac = &loader.AuditConfig{Brokers: splitList(f.auditBrokers), RegistryURL: f.auditRegistry}
	}
	return loader.Config{
		Audit:          ac,
		HeaderField:    f.headerField,
		Brokers:        splitList(f.brokers),
		RegistryURL:    f.registry,
		TopicRegex:     f.topics,
		Warehouse:      f.warehouse,
		MaxRecords:     f.maxRecords,
		MaxDuration:    f.maxDuration,
		MaxErrors:      f.maxErrors,
		FileMaxBytes:   size,
		FileMaxRecords: f.fileMaxRecords,
		Format:         f.format,
		Table:          f.table,
		Catalog:        f.catalog.config(),
		Expire:         f.expirePolicy(),
		Codec:          f.codec,
		DeflateLevel:   f.deflateLevel,
		SuccessGrace:   f.grace,

		CompleteBy:        f.completeBy,
		CompleteThreshold: f.completeThreshold,
		CompleteMaxWait:   f.completeMaxWait,

		OnDataLoss:    f.onDataLoss,
		StartAt:       f.startAt,
		LockTTL:       f.lockTTL,
		Share:         f.share,
		MaxTopics:     f.maxTopics,
		MaxPartitions: f.maxPartitions,
		Holder:        "tributary load",

		Security:         f.sec.kafka,
		RegistrySecurity: f.sec.registry,
		WarehouseOptions: f.hdfs.options(),
	}, nil
}

// faultFromEnv returns the fault hook the test environment variables ask
// for: TRIBUTARY_LOAD_PAUSE_AT=<point> stops the process forever the first
// time a run reaches point, so a test can SIGKILL it exactly there;
// TRIBUTARY_LOAD_DELAY_AT=<point>:<duration> makes every run wait there,
// so that runs last long enough for overlap tests. Points:
// loader.FaultPoints, loader.TableFaultPoints, loader.AuditFaultPoints, and
// loader.CompactFaultPoints for tributary compact.
func faultFromEnv() func(loader.FaultPoint) error {
	points := slices.Concat(loader.FaultPoints, loader.TableFaultPoints, loader.AuditFaultPoints, loader.CompactFaultPoints, loader.ExpireFaultPoints)
	var hooks []func(loader.FaultPoint) error
	if v := os.Getenv(pauseEnv); v != "" {
		point := loader.FaultPoint(v)
		if !slices.Contains(points, point) {
			fmt.Fprintf(os.Stderr, "tributary: %s=%q is not a fault point (%v); ignored\n", pauseEnv, v, points)
		} else {
			var once sync.Once
			hooks = append(hooks, func(p loader.FaultPoint) error {
				if p == point {
					once.Do(func() {
						fmt.Fprintf(os.Stderr, "tributary: paused at %s (%s)\n", p, pauseEnv)
						select {}
					})
				}
				return nil
			})
		}
	}
	if v := os.Getenv(delayEnv); v != "" {
		p, ds, _ := strings.Cut(v, ":")
		d, err := time.ParseDuration(ds)
		if err != nil || !slices.Contains(points, loader.FaultPoint(p)) {
			fmt.Fprintf(os.Stderr, "tributary: %s=%q: want <fault point>:<duration>; ignored\n", delayEnv, v)
		} else {
			hooks = append(hooks, func(fp loader.FaultPoint) error {
				if fp == loader.FaultPoint(p) {
					time.Sleep(d)
				}
				return nil
			})
		}
	}
	if len(hooks) == 0 {
		return nil
	}
	return func(p loader.FaultPoint) error {
		for _, h := range hooks {
			h(p)
		}
		return nil
	}
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// progressBar redraws a few lines on a terminal: one per partition (up to
// a screenful) and a total.
type progressBar struct {
	mu    sync.Mutex
	w     io.Writer
	lines int
}

// Write prints a log line where the bar was; the next draw starts below.
func (b *progressBar) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.clearLocked()
	return b.w.Write(p)
}

const maxBarLines = 12

func (b *progressBar) draw(p loader.Progress) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var sb strings.Builder
	if b.lines > 0 {
		fmt.Fprintf(&sb, "\x1b[%dA", b.lines) // back to the bar's first line
	}
	n := 0
	for i, pp := range p.Partitions {
		if i == maxBarLines-1 && len(p.Partitions) > maxBarLines {
			fmt.Fprintf(&sb, "\x1b[2K  ... and %d more partitions\n", len(p.Partitions)-i)
			n++
			break
		}
		fmt.Fprintf(&sb, "\x1b[2K  %-28s %s %d/%d  %s\n", fmt.Sprintf("%s/%d", pp.Topic, pp.Partition),
			bar(pp.Next-pp.Start, pp.End-pp.Start, 24), pp.Next, pp.End, mib(pp.InputBytes))
		n++
	}
	secs := p.Elapsed.Seconds()
	if secs <= 0 {
		secs = 1
	}
	fmt.Fprintf(&sb, "\x1b[2K  %d records, %s in %s (%.0f records/s)\n", p.Records, mib(p.InputBytes),
		p.Elapsed.Round(time.Second), float64(p.Records)/secs)
	n++
	b.lines = n
	io.WriteString(b.w, sb.String())
}

func (b *progressBar) clear() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.clearLocked()
}

func (b *progressBar) clearLocked() {
	if b.lines > 0 {
		fmt.Fprintf(b.w, "\x1b[%dA\x1b[J", b.lines)
		b.lines = 0
	}
}

func bar(done, total int64, width int) string {
	filled := width
	if total > 0 {
		filled = int(done * int64(width) / total)
	}
	return "[" + strings.Repeat("#", filled) + strings.Repeat(".", width-filled) + "]"
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
