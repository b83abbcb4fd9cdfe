package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/tributary-io/tributary/loader"
)

func init() {
	register("expire", "expire old snapshots of a topic's Iceberg table and delete the files only they name (never one a retained snapshot names)", runExpire)
}

func runExpire(ctx context.Context, args []string) error {
	fs := newFlags("expire")
	warehouse := fs.String("warehouse", "file:///var/warehouse", "warehouse URL")
	table := fs.String("table", "", "namespace of the topic's Iceberg table, as given to tributary load --table (required)")
	topic := fs.String("topic", "", "topic whose table is expired (required)")
	olderThan := fs.Duration("older-than", loader.DefaultExpireOlderThan, "expire snapshots committed longer ago than this (0: any age); as Iceberg's history.expire.max-snapshot-age-ms")
	retainLast := fs.Int("retain-last", loader.DefaultExpireRetainLast, "keep this many of the newest snapshots of the current one's ancestry whatever their age (at least 1); as Iceberg's history.expire.min-snapshots-to-keep")
	lockTTL := fs.Duration("lock-ttl", loader.DefaultLockTTL, "lease of the topic's lock, shared with tributary load")
	asJSON := fs.Bool("json", false, "print what was expired as JSON")
	var wf hdfsFlags
	wf.register(fs)
	var cf catalogFlags
	cf.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *topic == "" || *table == "" {
		return fmt.Errorf("--table and --topic are required")
	}
	if *retainLast < 1 {
		return fmt.Errorf("--retain-last %d: the current snapshot always stays; give 1 or more", *retainLast)
	}
	out, err := loader.ExpireSnapshots(ctx, loader.ExpireConfig{
		Warehouse: *warehouse, WarehouseOptions: wf.options(), Table: *table, Topic: *topic, Catalog: cf.config(),
		OlderThan: *olderThan, RetainLast: *retainLast, LockTTL: *lockTTL,
		Fault: faultFromEnv(),
	})
	if out != nil {
		if *asJSON {
			enc := json.NewEncoder(os.Stdout)
			enc.SetIndent("", "  ")
			enc.Encode(out)
		} else {
			fmt.Printf("%s: expired %d snapshots, kept %d; deleted %d data files and %d manifests", out.Table, len(out.Snapshots), out.Retained, out.DataFiles, out.MetaFiles)
			if len(out.MovedTags) > 0 {
				fmt.Printf("; moved %d hour tags to the oldest snapshot kept", len(out.MovedTags))
			}
			fmt.Println()
		}
	}
	return err
}
