package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tributary-io/tributary/audit"
	"github.com/tributary-io/tributary/consumer"
	"github.com/tributary-io/tributary/internal/clientsec"
	"github.com/tributary-io/tributary/mirror"
)

func init() {
	register("mirror", "copy topics from live clusters into the analysis cluster, exactly once (resumes from what the target holds)", runMirror)
}

func runMirror(ctx context.Context, args []string) error {
	fs := newFlags("mirror")
	var sources, registries multiFlag
	fs.Var(&sources, "source", "a live cluster to copy from, `NAME=host:port[,host:port]` of its brokers (any Kafka-protocol cluster), or NAME=host:port/chroot of a Tributary cluster's ZooKeeper (repeat for several)")
	fs.Var(&registries, "source-registry", "the schema registry of a source, `NAME=URL`; schema ids are rewritten to --target-registry's (repeatable)")
	target := fs.String("target", "127.0.0.1:9092", "brokers of the analysis cluster, `host:port[,host:port]`")
	targetName := fs.String("target-name", "analysis", "the target cluster's name, as other mirrors name it in --source: records that originated there are not copied back")
	targetRegistry := fs.String("target-registry", "", "the analysis datacenter's schema registry `URL`")
	keepIDs := fs.Bool("keep-schema-ids", false, "copy schema-registry envelopes unchanged without --target-registry: the datacenters share one registry (otherwise they are refused)")
	topics := fs.String("topics", ".*", "regular expression selecting the topics to copy (unanchored)")
	exclude := fs.String("exclude", "^_schemas$", "regular expression of topics not to copy, applied after --topics")
	group := fs.String("group", "tributary-mirror", "consumer group in every source, for assignment only (nothing is committed); mirrors with the same group share the partitions")
	instanceID := fs.String("instance-id", "", "static group membership `ID`, unique per mirror process: restarted within --session-timeout, it gets its partitions back without a rebalance")
	start := fs.String("start", "smallest", "where a partition the target holds no copy of starts: smallest (all retained) or largest (new records only)")
	fs.Duration("commit-interval", time.Second, "ignored: the mirror commits no offsets, it resumes from what the target holds")
	session := fs.Duration("session-timeout", 10*time.Second, "group session timeout: how soon other mirrors take over after a crash")
	connect := fs.Duration("connect-timeout", 30*time.Second, "give up at start when a source's ZooKeeper or brokers cannot be reached within this")
	shutdown := fs.Duration("shutdown-timeout", 30*time.Second, "on SIGTERM, wait this long for the target's acknowledgements, then exit whatever still waits")
	groups := fs.String("groups", "", "`REGEX` of source consumer groups whose committed offsets are translated into the target, so their consumers can fail over to it")
	groupSync := fs.Duration("groups-interval", 10*time.Second, "how often --groups' offsets are translated")
	syncACLs := fs.Bool("sync-acls", false, "copy the sources' literal topic ACLs on mirrored topics into the target, read-only (Read, Describe and denies; never Write); needs Describe on both clusters and Alter on the target's")
	aclSync := fs.Duration("acl-sync-interval", time.Minute, "how often --sync-acls copies ACLs")
	topicSync := fs.Duration("topic-sync-interval", 30*time.Second, "how often topic config changes and partition increases in the sources are carried to the target")
	rename := fs.String("rename", "{topic}", "target topic name `PATTERN`: {source} and {topic} are replaced, e.g. {source}.{topic}")
	fetchPartition := fs.Int("fetch-max-partition-bytes", 32<<20, "bytes per partition in one fetch from a source; across a WAN a partition gets at most this per round trip")
	fetchMax := fs.Int("fetch-max-bytes", 64<<20, "bytes in one fetch from a source broker")
	transactions := fs.Bool("transactions", true, "copy each source partition in transactions of its own transactional producer, which fences an earlier owner's late writes: exactly once in every case; false for a target that cannot do transactions (then a dead or paused mirror's in-flight copies can be duplicated)")
	txnInterval := fs.Duration("transaction-interval", time.Second, "how long a source partition's transaction stays open from its first copy: the latency copies take to become visible to read_committed readers of the target")
	txnTimeout := fs.Duration("transaction-timeout", time.Minute, "the target aborts a transaction left open this long (a paused mirror nobody took over from)")
	strict := fs.Bool("strict-partitions", false, "stop instead of placing records by key hash when a target topic's partition count differs from the source's")
	unknown := fs.String("unknown-schemas", "stop", "a value whose schema id the source registry cannot resolve: stop (with topic, partition, offset) or copy (unchanged, counted)")
	status := fs.String("status", "", "serve the status (lag, rate, per-window counts) as JSON over HTTP on `host:port`")
	logEvery := fs.Duration("log-interval", 30*time.Second, "log a progress line per source this often (0: never)")
	window := fs.Duration("audit-window", audit.DefaultWindow, "width of the counting windows: the status's (by record timestamp) and, with --audit, the audit's (by event header time)")
	headerField := fs.String("header-field", "header", "top-level `FIELD` of the events' record that holds their header (time, server); any record name or namespace is understood")
	metricsListen := metricsFlag(fs)
	auditTier := fs.Bool("audit", false, "count what the target acknowledged as the audit's \"mirror\" tier, published to the target's _audit topic (needs --target-registry)")
	auditWAL := fs.String("audit-wal", "", "with --audit, a write-ahead log `DIR` of the mirror's counts: a mirror killed at any point neither loses nor double-counts them; the next one started with the same DIR publishes what it left and counts the copies the target holds whose acknowledgement it never wrote. One DIR per mirror process")
	auditFlush := fs.Duration("audit-flush-interval", time.Minute, "with --audit, how often the counts of closed windows are published (at most half of --audit-window)")
	// Sources and target are secured each on its own: --source-tls-ca,
	// --source-sasl-*, --source-registry-user-info-file (every source
	// alike), and the same with --target-.
	var srcKafka, tgtKafka clientsec.Kafka
	var srcReg, tgtReg clientsec.Registry
	srcKafka.Register(fs, "source-")
	srcReg.Register(fs, "source-")
	tgtKafka.Register(fs, "target-")
	tgtReg.Register(fs, "target-")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (flags only; repeat --source for several clusters)", fs.Arg(0))
	}
	cfg := mirror.Config{
		Target:                 splitList(*target),
		TargetName:             *targetName,
		TargetRegistry:         *targetRegistry,
		KeepSchemaIDs:          *keepIDs,
		Topics:                 *topics,
		Exclude:                *exclude,
		Group:                  *group,
		InstanceID:             *instanceID,
		SessionTimeout:         *session,
		Rename:                 *rename,
		TopicSyncInterval:      *topicSync,
		Groups:                 *groups,
		GroupSyncInterval:      *groupSync,
		SyncACLs:               *syncACLs,
		ACLSyncInterval:        *aclSync,
		FetchMaxPartitionBytes: int32(min(*fetchPartition, 1<<30)),
		FetchMaxBytes:          int32(min(*fetchMax, 1<<30)),
		ConnectTimeout:         *connect,
		ShutdownTimeout:        *shutdown,
		StrictPartitions:       *strict,
		NoTransactions:         !*transactions,
		TransactionInterval:    *txnInterval,
		TransactionTimeout:     *txnTimeout,
		LogInterval:            *logEvery,
		Logger:                 slog.Default(),
	}
	if *logEvery == 0 {
		cfg.LogInterval = -1
	}
	var err error
	if cfg.FetchOptions, err = srcKafka.Opts(); err != nil {
		return fmt.Errorf("source: %w", err)
	}
	cfg.SourceListener = srcKafka.Protocol()
	if cfg.ProducerOptions, err = tgtKafka.Opts(); err != nil {
		return fmt.Errorf("target: %w", err)
	}
	if cfg.SourceRegistryOptions, err = srcReg.Opts(); err != nil {
		return fmt.Errorf("source: %w", err)
	}
	if cfg.TargetRegistryOptions, err = tgtReg.Opts(); err != nil {
		return fmt.Errorf("target: %w", err)
	}
	switch *start {
	case "smallest":
		cfg.Start = consumer.Smallest
	case "largest":
		cfg.Start = consumer.Largest
	default:
		return fmt.Errorf("--start %q: use smallest or largest", *start)
	}
	switch *unknown {
	case "stop":
		cfg.UnknownSchemas = mirror.StopOnUnknown
	case "copy":
		cfg.UnknownSchemas = mirror.CopyUnknown
	default:
		return fmt.Errorf("--unknown-schemas %q: use stop or copy", *unknown)
	}
	index := map[string]int{}
	for _, s := range sources {
		src, err := mirror.ParseSource(s)
		if err != nil {
			return fmt.Errorf("--source: %w", err)
		}
		index[src.Name] = len(cfg.Sources)
		cfg.Sources = append(cfg.Sources, src)
	}
	for _, r := range registries {
		name, url, ok := strings.Cut(r, "=")
		i, known := index[name]
		if !ok || url == "" {
			return fmt.Errorf("--source-registry %q: want NAME=URL, e.g. dc1=http://registry.dc1:8081", r)
		}
		if !known {
			return fmt.Errorf("--source-registry %q: no --source is named %q", r, name)
		}
		cfg.Sources[i].Registry = url
	}
	auditors := mirror.Auditors{&mirror.WindowCounter{Window: *window}}
	if *auditWAL != "" && !*auditTier {
		return errors.New("--audit-wal needs --audit")
	}
	var st *startingStatus
	if *status != "" {
		if st, err = listenStatus(*status); err != nil {
			return fmt.Errorf("--status: %w", err)
		}
		defer st.Close()
		fmt.Printf("tributary mirror: status on http://%s/\n", st.addr)
	}
	if *auditTier {
		// The last audit counts are published after the copy stops: they
		// get a share of --shutdown-timeout, and the copy the rest, so
		// that the whole shutdown ends within it.
		share := min(max(time.Second, *shutdown/4), *shutdown/2)
		cfg.ShutdownTimeout = *shutdown - share
		tier, closeTier, err := newAuditTier(ctx, cfg, auditTierFlags{*window, *auditFlush, *headerField, *auditWAL, share})
		if err != nil {
			return err
		}
		defer closeTier()
		auditors = append(auditors, tier)
	}
	cfg.Auditor = auditors
	m, err := mirror.New(cfg)
	if err != nil {
		return err
	}
	ms, stopMetrics, err := startMetrics(*metricsListen)
	if err != nil {
		return err
	}
	defer stopMetrics()
	ms.Registry().MustRegister(m.Metrics())
	if st != nil {
		st.ready(m.Handler())
	}
	// The shutdown as a whole (the target's acknowledgements, leaving the
	// groups, the last audit counts) ends by --shutdown-timeout after the
	// signal, whatever the brokers do; a watchdog makes sure of it.
	finished := make(chan struct{})
	defer close(finished)
	go func() {
		select {
		case <-ctx.Done():
		case <-finished:
			return
		}
		select {
		case <-time.After(*shutdown):
			slog.Error("still shutting down after --shutdown-timeout; exiting now: the next run copies what the target did not acknowledge", "timeout", *shutdown)
			os.Exit(0)
		case <-finished:
		}
	}()
	err = m.Run(ctx)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// auditTierFlags are the mirror's --audit settings.
type auditTierFlags struct {
	window, flush time.Duration
	headerField   string
	wal           string
	closeWithin   time.Duration // the last counts' share of the shutdown
}

// newAuditTier counts copied events for the audit through a publisher that
// writes to the target's _audit topic; closeTier publishes what is left.
// With a WAL, what a killed mirror left is counted before copying starts.
func newAuditTier(ctx context.Context, cfg mirror.Config, f auditTierFlags) (tier mirror.Auditor, closeTier func(), err error) {
	if cfg.TargetRegistry == "" {
		return nil, nil, errors.New("--audit needs --target-registry: the registry that resolves schema ids in the analysis datacenter (the shared one, if the datacenters share one)")
	}
	reg, err := sr.NewClient(append([]sr.ClientOpt{sr.URLs(cfg.TargetRegistry)}, cfg.TargetRegistryOptions...)...)
	if err != nil {
		return nil, nil, fmt.Errorf("--target-registry: %w", err)
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(cfg.Target...)}, cfg.ProducerOptions...)...)
	if err != nil {
		return nil, nil, fmt.Errorf("--target: %w", err)
	}
	var wal *audit.WAL
	if f.wal != "" {
		if wal, err = audit.OpenWAL(f.wal, audit.WALOptions{Fault: walFault()}); err != nil {
			cl.Close()
			return nil, nil, fmt.Errorf("--audit-wal: %w", err)
		}
	}
	pub, err := audit.NewPublisher(audit.PublisherConfig{Client: cl, Registry: reg, Tier: audit.TierMirror, Window: f.window,
		FlushInterval: min(f.flush, f.window/2), Logger: slog.Default(), WAL: wal})
	if err != nil {
		if wal != nil {
			wal.Close()
		}
		cl.Close()
		return nil, nil, err
	}
	closeTier = func() {
		ctx, cancel := context.WithTimeout(context.Background(), f.closeWithin)
		defer cancel()
		if err := pub.Close(ctx); err != nil {
			slog.Warn("publishing the last audit counts", "err", err)
		}
		cl.Close()
	}
	headers, err := audit.NewHeaderReader(reg, audit.HeaderReaderConfig{HeaderField: f.headerField})
	if err != nil {
		closeTier()
		return nil, nil, err
	}
	if wal != nil {
		pub.FindIn(cl)
		// A search that does not finish (target unreachable) leaves
		// the copies doubtful: looked for again at each publish.
		rctx, cancel := context.WithTimeout(ctx, time.Minute)
		found, doubtful, err := pub.Recover(rctx)
		cancel()
		if err != nil {
			slog.Warn("mirror: could not look in the target for the copies a killed mirror made; looking again at each publish", "dir", f.wal, "err", err)
		}
		slog.Info("mirror: audit WAL opened", "dir", f.wal, "publisher", wal.Name(), "records_found_and_counted", found, "records_still_looked_for", doubtful)
	}
	return mirror.NewAuditTier(pub, headers, slog.Default()), closeTier, nil
}
