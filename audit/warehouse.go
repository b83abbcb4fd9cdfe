package audit

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"slices"
	"strconv"
	"strings"
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
}

// ScanWarehouse counts what a warehouse holds, the loader's layout
// (<topic>/YYYY/MM/DD/HH/*.avro, Avro object container files): every event
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
		entries, err := cfg.FS.ReadDir(".")
		if err != nil {
			return nil, nil, fmt.Errorf("audit: list warehouse %s: %w", cfg.FS, err)
		}
		for _, e := range entries {
			if e.IsDir() && !strings.HasPrefix(e.Name(), "_") {
				topics = append(topics, e.Name())
			}
		}
	}
	slices.Sort(topics)
	c := NewCounts()
	for _, topic := range topics {
		hours, err := hourDirs(cfg.FS, topic)
		if err != nil {
			return nil, nil, err
		}
		files := 0
		for _, h := range hours {
			if (!cfg.From.IsZero() && !h.t.Add(time.Hour).After(cfg.From)) || (!cfg.To.IsZero() && !h.t.Before(cfg.To)) {
				continue
			}
			entries, err := cfg.FS.ReadDir(h.dir)
			if err != nil {
				return nil, nil, fmt.Errorf("audit: list %s: %w", h.dir, err)
			}
			for _, e := range entries {
				if e.IsDir() || !strings.HasSuffix(e.Name(), ".avro") {
					continue
				}
				if err := ctx.Err(); err != nil {
					return nil, nil, err
				}
				if err := countFile(cfg.FS, path.Join(h.dir, e.Name()), topic, h.t, cfg.Window, cfg.HeaderField, c); err != nil {
					return nil, nil, err
				}
				files++
			}
		}
		cfg.Logger.Debug("audit: counted warehouse topic", "topic", topic, "files", files)
	}
	return c, topics, nil
}

type hourDir struct {
	dir string
	t   time.Time
}

// hourDirs lists topic/YYYY/MM/DD/HH directories in time order.
func hourDirs(w warehouse.FS, topic string) ([]hourDir, error) {
	var out []hourDir
	var walk func(dir string, parts []int) error
	walk = func(dir string, parts []int) error {
		if len(parts) == 4 {
			out = append(out, hourDir{dir, time.Date(parts[0], time.Month(parts[1]), parts[2], parts[3], 0, 0, 0, time.UTC)})
			return nil
		}
		entries, err := w.ReadDir(dir)
		if err != nil {
			if len(parts) == 0 && isNotExist(err) {
				return nil // a topic never loaded
			}
			return fmt.Errorf("audit: list %s: %w", dir, err)
		}
		for _, e := range entries {
			n, err := strconv.Atoi(e.Name())
			if !e.IsDir() || err != nil {
				continue
			}
			if err := walk(path.Join(dir, e.Name()), append(parts, n)); err != nil {
				return err
			}
		}
		return nil
	}
	return out, walk(topic, nil)
}

func isNotExist(err error) bool { return err != nil && errors.Is(err, fs.ErrNotExist) }

// countFile counts the events of one object container file, reading
// their header by the rule every tier shares (schema.HeaderLayout) under
// the file's own writer schema.
func countFile(w warehouse.FS, name, topic string, hour time.Time, window time.Duration, field string, c *Counts) error {
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
		c.Events[Key{Topic: topic, Window: WindowStart(time.UnixMilli(ms), window), Server: server}]++
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("audit: %s: %w", name, err)
	}
	return nil
}
