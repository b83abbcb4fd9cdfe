package audit

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/linkedin/goavro/v2"

	"github.com/tributary-io/tributary/loader/warehouse"
	"github.com/tributary-io/tributary/schema"
)

// WarehouseScanConfig configures ScanWarehouse.
type WarehouseScanConfig struct {
	// FS is the warehouse. Required.
	FS warehouse.FS
	// Topics to count. Default: every topic directory whose name does
	// not start with "_".
	Topics []string
	// From and To bound the hours read: hour directories that overlap
	// [From, To). Zero: unbounded.
	From, To time.Time
	// Window is the width of a counting window. Default: DefaultWindow.
	Window time.Duration
	// Logger receives a line per topic counted. Default: slog.Default().
	Logger *slog.Logger
	// HeaderField is the top-level field holding the events' header.
	// Default: schema.DefaultHeaderField.
	HeaderField string
	// MaxDistinct bounds the event identities held to tell duplicates
	// apart. Default: DefaultMaxDistinct; -1: do not tell them apart.
	MaxDistinct int
	// Table, if set, counts the topics' Iceberg tables in this namespace
	// (the loader's --table: <warehouse>/<Table>/<topic>) instead of the
	// plain layout: the data files of each table's current snapshot, as
	// TableFiles lists them. Without Topics, every table of the namespace.
	Table string
	// TableFiles lists the data files of the current snapshot of the
	// table in directory dir; required with Table. The loader provides it
	// (loader.TableDataFiles): the audit does not read Iceberg metadata
	// itself, the loader being the one writer of it (and importing audit).
	TableFiles func(w warehouse.FS, dir string) ([]TableFile, error)
}

// A TableFile is a data file of an Iceberg table's snapshot.
type TableFile struct {
	Path string    // in the warehouse
	Hour time.Time // its partition: the hour of its events' header time
}

// ScanWarehouse counts what a warehouse holds, the loader's layout as
// package warehouse defines it (<topic>/YYYY/MM/DD/HH/*.avro, Avro object
// container files, and <topic>/dt=YYYY-MM-DD/hr=HH/*.parquet, Parquet
// loads, compacted or not): every event
// by its header time window and server. Events without a header time are
// counted apart in the window of their hour directory. Files of runs not
// yet committed (under _tributary) are not read; records the loader could
// not decode (_errors) are not events of any window and are left to the
// loader's own report.
func ScanWarehouse(ctx context.Context, cfg WarehouseScanConfig) (*Counts, []string, error) {
	if cfg.Window <= 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Table != "" {
		return scanTables(ctx, cfg)
	}
	topics := slices.Clone(cfg.Topics)
	if len(topics) == 0 {
		var err error
		if topics, err = warehouse.Topics(cfg.FS); err != nil {
			return nil, nil, fmt.Errorf("audit: %w", err)
		}
	}
	slices.Sort(topics)
	c := NewCounts()
	dc := newDistinctCounter(cfg.MaxDistinct, cfg.Logger)
	defer dc.fill(c)
	for _, topic := range topics {
		files := 0
		for _, format := range []struct {
			hours func(warehouse.FS, string) ([]warehouse.Hour, error)
			data  func(string) bool
			count func(warehouse.FS, string, string, time.Time, time.Duration, string, *Counts, *distinctCounter) error
		}{
			{warehouse.Hours, warehouse.IsDataFile, countFile},
			{warehouse.PartitionHours, warehouse.IsParquetFile, countParquetFile},
		} {
			hours, err := format.hours(cfg.FS, topic)
			if err != nil {
				return nil, nil, fmt.Errorf("audit: %w", err)
			}
			for _, h := range hours {
				if (!cfg.From.IsZero() && !h.Start.Add(time.Hour).After(cfg.From)) || (!cfg.To.IsZero() && !h.Start.Before(cfg.To)) {
					continue
				}
				entries, err := cfg.FS.ReadDir(h.Dir)
				if err != nil {
					return nil, nil, fmt.Errorf("audit: list %s: %w", h.Dir, err)
				}
				for _, e := range entries {
					if e.IsDir() || !format.data(e.Name()) {
						continue
					}
					if err := ctx.Err(); err != nil {
						return nil, nil, err
					}
					if err := format.count(cfg.FS, path.Join(h.Dir, e.Name()), topic, h.Start, cfg.Window, cfg.HeaderField, c, dc); err != nil {
						return nil, nil, err
					}
					files++
				}
			}
		}
		cfg.Logger.Debug("audit: counted warehouse topic", "topic", topic, "files", files)
	}
	return c, topics, nil
}

// countFile counts the events of one object container file, reading
// their header by the rule every tier shares (schema.HeaderLayout) under
// the file's own writer schema.
func countFile(w warehouse.FS, name, topic string, hour time.Time, window time.Duration, field string, c *Counts, dc *distinctCounter) error {
	f, err := w.Open(name)
	if err != nil {
		return fmt.Errorf("audit: open %s: %w", name, err)
	}
	defer f.Close()
	r, err := goavro.NewOCFReader(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		return fmt.Errorf("audit: %s is not an Avro container file: %w", name, err)
	}
	ws, err := avro.ParseWithCache(r.Codec().Schema(), "", &avro.SchemaCache{})
	if err != nil {
		return fmt.Errorf("audit: %s: writer schema: %w", name, err)
	}
	layout := schema.NewHeaderLayout(ws, field)
	for r.Scan() {
		v, err := r.Read()
		if err != nil {
			return fmt.Errorf("audit: %s: %w", name, err)
		}
		ms, server, err := layout.ReadNative(v)
		if err != nil {
			c.NoTime[TopicWindow{Topic: topic, Window: WindowStart(hour, window)}]++
			continue
		}
		k := Key{Topic: topic, Window: WindowStart(time.UnixMilli(ms), window), Server: server}
		c.Events[k]++
		dc.add(k, headerID(v.(map[string]any)[layout.Field]))
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("audit: %s: %w", name, err)
	}
	return nil
}

// scanTables is ScanWarehouse for Iceberg tables: each topic's table is
// counted from the Parquet files its current snapshot names, a file's
// events as in a Parquet load (countParquetFile); files only older
// snapshots name (replaced by a compaction, not yet expired) are not
// read, so a compacted table counts every event once.
func scanTables(ctx context.Context, cfg WarehouseScanConfig) (*Counts, []string, error) {
	if cfg.TableFiles == nil {
		return nil, nil, fmt.Errorf("audit: counting the tables of %s needs the loader's table reader (WarehouseScanConfig.TableFiles)", cfg.Table)
	}
	topics := slices.Clone(cfg.Topics)
	if len(topics) == 0 {
		infos, err := cfg.FS.ReadDir(cfg.Table)
		if err != nil {
			return nil, nil, fmt.Errorf("audit: tables of %s in %s: %w", cfg.Table, cfg.FS, err)
		}
		for _, fi := range infos {
			if fi.IsDir() {
				topics = append(topics, fi.Name())
			}
		}
	}
	slices.Sort(topics)
	c := NewCounts()
	dc := newDistinctCounter(cfg.MaxDistinct, cfg.Logger)
	defer dc.fill(c)
	for _, topic := range topics {
		dir := path.Join(cfg.Table, topic)
		files, err := cfg.TableFiles(cfg.FS, dir)
		if err != nil {
			return nil, nil, fmt.Errorf("audit: table %s: %w", dir, err)
		}
		for _, f := range files {
			if (!cfg.From.IsZero() && !f.Hour.Add(time.Hour).After(cfg.From)) || (!cfg.To.IsZero() && !f.Hour.Before(cfg.To)) {
				continue
			}
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
			if err := countParquetFile(cfg.FS, f.Path, topic, f.Hour, cfg.Window, cfg.HeaderField, c, dc); err != nil {
				return nil, nil, err
			}
		}
		cfg.Logger.Debug("audit: counted table", "table", dir, "files", len(files))
	}
	return c, topics, nil
}
