package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/audit"
	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/warehouse"
)

func runAuditCount(ctx context.Context, args []string) error {
	fs, f := newAuditFlags("count", "count a cluster's topics by header time window and publish the counts as a tier")
	tier := fs.String("tier", "", "tier name the counts are published as, e.g. live or analysis (required)")
	source := fs.String("source", "", "name of what is counted; a later count of the same source replaces this one (default: TIER@BROKERS)")
	auditBrokers := fs.String("audit-brokers", "", "brokers of the audit topic (default: --brokers)")
	// The counted cluster and the audit topic may have different
	// registries (each datacenter keeps its own).
	auditRegistry := fs.String("audit-registry", "", "schema registry `URL` for the monitoring events (default: --registry)")
	dryRun := fs.Bool("dry-run", false, "print the counts without publishing them")
	wh := fs.String("warehouse", "", "count this warehouse (`URL` file:///path, hdfs://namenode:port/path, hdfs://nameservice/path or s3://bucket/prefix, the loader's layout) instead of --brokers")
	table := fs.String("table", "", "with --warehouse, count the topics' Iceberg tables in this `NAMESPACE` (as given to tributary load --table): the data files of each table's current snapshot")
	var hf hdfsFlags // an HDFS warehouse's cluster, as for load
	hf.register(fs)
	var cf catalogFlags // the tables' catalog, as for load
	cf.register(fs)
	headerField := fs.String("header-field", "header", "top-level `FIELD` of the events' record that holds their header (time, server); any record name or namespace is understood")
	var tr timeRange
	tr.register(fs, "publish")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *table != "" && *wh == "" {
		return fmt.Errorf("--table counts the tables of a warehouse: give --warehouse too")
	}
	if *tier == "" {
		return fmt.Errorf("--tier is required: the name this cluster's counts are published as (e.g. --tier analysis)")
	}
	from, to, err := tr.resolve(time.Now())
	if err != nil {
		return err
	}
	if *source == "" {
		*source = *tier + "@" + f.brokers
		if *wh != "" {
			*source = *tier + "@" + *wh
		}
	}
	if *auditBrokers == "" {
		*auditBrokers = f.brokers
	}
	reg, err := f.registryClient()
	if err != nil {
		return err
	}
	secOpts, err := f.sec.kgoOpts()
	if err != nil {
		return err
	}
	start := time.Now()
	var counts *audit.Counts
	var topics []string
	if *wh != "" {
		fsys, err := warehouse.OpenWith(*wh, hf.options())
		if err != nil {
			return fmt.Errorf("--warehouse: %w", err)
		}
		defer fsys.Close()
		sc := audit.WarehouseScanConfig{FS: fsys, Topics: splitList(f.topics), From: from, To: to, Window: f.window, HeaderField: *headerField}
		if *table != "" {
			if err := loader.CheckTableName(*table); err != nil {
				return fmt.Errorf("--table: %w", err)
			}
			if err := cf.config().Check(); err != nil {
				return fmt.Errorf("--catalog: %w", err)
			}
			sc.Table, sc.TableFiles = *table, loader.TableDataFilesIn(cf.config())
		}
		counts, topics, err = audit.ScanWarehouse(ctx, sc)
		if err != nil {
			return err
		}
	} else {
		counts, topics, err = audit.Scan(ctx, audit.ScanConfig{Brokers: splitList(f.brokers), Registry: reg, Topics: splitList(f.topics), Window: f.window, HeaderField: *headerField, Opts: secOpts})
		if err != nil {
			return err
		}
	}
	inWindows, noTime, malformed := counts.Total()
	slog.Info("audit count: counted", "tier", *tier, "topics", len(topics), "events", inWindows, "no_time", noTime, "malformed", malformed, "took", time.Since(start).Round(time.Millisecond))
	printCounts(counts, from, to)
	if *dryRun {
		return nil
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(splitList(*auditBrokers)...)}, secOpts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	areg := reg
	if *auditRegistry != "" {
		if areg, err = registryClient("--audit-registry", *auditRegistry, f.sec.registry); err != nil {
			return err
		}
	}
	cfg := audit.PublisherConfig{Client: cl, Registry: areg, Tier: *tier, Topic: f.topic, Window: f.window}
	if err := audit.PublishSnapshot(ctx, cfg, *source, counts, topics, from, to); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "published the counts of %s as tier %s (source %s) to %s\n", strings.Join(topics, ", "), *tier, *source, f.topic)
	return nil
}

// printCounts prints events per topic and window (servers added up) in
// [from, to).
func printCounts(c *audit.Counts, from, to time.Time) {
	type tw struct {
		topic string
		w     time.Time
	}
	rows := map[tw]*[3]int64{}
	get := func(t string, w time.Time) *[3]int64 {
		if (!from.IsZero() && w.Before(from)) || (!to.IsZero() && !w.Before(to)) {
			return nil
		}
		k := tw{t, w}
		if rows[k] == nil {
			rows[k] = &[3]int64{}
		}
		return rows[k]
	}
	for k, n := range c.Events {
		if r := get(k.Topic, k.Window); r != nil {
			r[0] += n
		}
	}
	for k, n := range c.NoTime {
		if r := get(k.Topic, k.Window); r != nil {
			r[1] += n
		}
	}
	for k, n := range c.Malformed {
		if r := get(k.Topic, k.Window); r != nil {
			r[2] += n
		}
	}
	keys := make([]tw, 0, len(rows))
	for k := range rows {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b tw) int {
		if c := strings.Compare(a.topic, b.topic); c != 0 {
			return c
		}
		return a.w.Compare(b.w)
	})
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "TOPIC\tWINDOW\tEVENTS\tNO_TIME\tMALFORMED")
	for _, k := range keys {
		r := rows[k]
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\n", k.topic, k.w.UTC().Format("2006-01-02 15:04"), r[0], r[1], r[2])
	}
	w.Flush()
}
