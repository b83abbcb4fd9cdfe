package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/tributary-io/tributary/loader"
)

func init() {
	register("compact", "merge the small Parquet files of a topic's hours into one file per hour and schema, swapped in atomically (local warehouses), or of its Iceberg table by a replace snapshot (--table; HDFS too)", runCompact)
}

func runCompact(ctx context.Context, args []string) error {
	fs := newFlags("compact")
	warehouse := fs.String("warehouse", "file:///var/warehouse", "warehouse URL (file:// only without --table: the swap needs an atomic exchange of two directories)")
	topic := fs.String("topic", "", "topic whose hours are compacted (required)")
	table := fs.String("table", "", "compact the topic's Iceberg table in this namespace (as given to tributary load --table) by a replace snapshot; any warehouse, HDFS too; default hours: those tagged complete")
	hour := fs.String("hour", "", "one hour to compact, `YYYY-MM-DDTHH` (UTC); default: every hour marked _SUCCESS")
	minFiles := fs.Int("min-files", 2, "merge a schema's files of an hour only when there are at least this many")
	codec := fs.String("codec", loader.DefaultParquetCodec, "compression of the merged files: snappy, zstd, gzip or none")
	lockTTL := fs.Duration("lock-ttl", loader.DefaultLockTTL, "lease of the topic's lock, shared with tributary load")
	asJSON := fs.Bool("json", false, "print what was compacted as JSON")
	var cf catalogFlags
	cf.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *topic == "" {
		return fmt.Errorf("--topic is required")
	}
	cfg := loader.CompactConfig{Warehouse: *warehouse, Topic: *topic, Table: *table, Catalog: cf.config(), MinFiles: *minFiles, Codec: *codec, LockTTL: *lockTTL,
		Fault: faultFromEnv()}
	if *hour != "" {
		h, err := time.Parse("2006-01-02T15", *hour)
		if err != nil {
			return fmt.Errorf("--hour %q: want YYYY-MM-DDTHH, e.g. 2024-05-01T13", *hour)
		}
		cfg.Hours = []time.Time{h}
	}
	done, err := loader.Compact(ctx, cfg)
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(done)
	} else {
		for _, h := range done {
			fmt.Printf("%s: %d files into %d, %d records\n", h.Dir, h.Files, h.After, h.Records)
		}
		if err == nil && len(done) == 0 {
			fmt.Println("nothing to compact")
		}
	}
	return err
}
