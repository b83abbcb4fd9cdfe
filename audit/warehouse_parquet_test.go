package audit_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/audit"
	"github.com/tributary-io/tributary/audit/internal/audittest"
	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/warehouse"
)

// `audit count --warehouse` reads a Parquet load (dt=/hr= directories,
// .parquet files) as it reads Avro ones: every event in its window and
// server, each distinct, before and after `tributary compact` merges an
// hour's files. (It read Avro files only: a Parquet load counted zero.)
func TestWarehouseCountReadsParquet(t *testing.T) {
	env := audittest.Start(t)
	createTopic(t, env.Broker.Addr, "pageview", 2)
	ws := pastWindows(4)
	want := audit.NewCounts()
	for i, name := range []string{"fe-1", "fe-2"} {
		s := newServer(t, env, name)
		n := 300 + 100*i
		s.sendOver(t, "pageview", ws[0], 4*audit.DefaultWindow, n)
		for j := range n {
			at := ws[0].Add(4 * audit.DefaultWindow * time.Duration(j) / time.Duration(n))
			want.Events[audit.Key{Topic: "pageview", Window: audit.WindowStart(at, audit.DefaultWindow), Server: name}]++
		}
	}
	dir := t.TempDir()
	for range 2 { // two runs: several files per hour
		if _, err := loader.Run(t.Context(), loader.Config{Brokers: []string{env.Broker.Addr}, Topics: []string{"pageview"}, Warehouse: dir,
			Registry: env.Registry, Format: loader.FormatParquet, FileMaxRecords: 150, MaxRecords: 600, Logger: quietLog}); err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string) {
		t.Helper()
		fsys, err := warehouse.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer fsys.Close()
		got, topics, err := audit.ScanWarehouse(context.Background(), audit.WarehouseScanConfig{FS: fsys, Logger: quietLog})
		if err != nil {
			t.Fatal(err)
		}
		if len(topics) != 1 || len(got.Events) != len(want.Events) || len(got.NoTime) != 0 {
			t.Fatalf("%s: topics %v, %d counts (%d no_time); want pageview, %d", when, topics, len(got.Events), len(got.NoTime), len(want.Events))
		}
		for k, n := range want.Events {
			if got.Events[k] != n || got.Distinct[k] != n {
				t.Errorf("%s: %v: %d events (%d distinct), want %d", when, k, got.Events[k], got.Distinct[k], n)
			}
		}
	}
	check("loaded")
	if _, err := loader.Compact(t.Context(), loader.CompactConfig{Warehouse: "file://" + dir, Topic: "pageview", Logger: quietLog}); err != nil {
		t.Fatal(err)
	}
	check("compacted")
}

// A file named .parquet that is not one fails the count, naming it.
func TestWarehouseCountNamesADamagedParquetFile(t *testing.T) {
	dir := t.TempDir()
	hour := warehouse.PartitionDir("pageview", pastWindows(1)[0])
	if err := os.MkdirAll(filepath.Join(dir, hour), 0o755); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(hour, warehouse.ParquetFileName("pageview", 0, 0, 9, 1))
	if err := os.WriteFile(filepath.Join(dir, bad), []byte("PAR1 this is not a Parquet file"), 0o644); err != nil {
		t.Fatal(err)
	}
	fsys, err := warehouse.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	_, _, err = audit.ScanWarehouse(context.Background(), audit.WarehouseScanConfig{FS: fsys, Logger: quietLog})
	if err == nil || !strings.Contains(err.Error(), bad) {
		t.Fatalf("counting a damaged Parquet file: %v; want an error naming %s", err, bad)
	}
}
