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
