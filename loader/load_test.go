package loader_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/loadertest"
	"github.com/tributary-io/tributary/loader/warehouse"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// config is a load of topic from env into the warehouse at url.
func config(env *loadertest.Env, url string, topics ...string) loader.Config {
	return loader.Config{
		Brokers: env.Brokers, RegistryURL: env.RegistryURL, Topics: topics,
		Warehouse: url, Logger: quiet,
		// Long enough that a loaded CI machine's HDFS renewals are never
		// late; crash tests wait one TTL for a dead run's locks.
		LockTTL: 5 * time.Second,
	}
}

func run(t *testing.T, cfg loader.Config) *loader.Summary {
	t.Helper()
	sum, err := loader.Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("load run: %v", err)
	}
	if !sum.Committed {
		t.Fatal("run returned no error but did not commit")
	}
	return sum
}

func openWarehouse(t *testing.T, url string) warehouse.FS {
	t.Helper()
	w, err := warehouse.Open(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// warehouses are the kinds every end-to-end test runs against.
func warehouses(t *testing.T) map[string]func(t *testing.T) string {
	return map[string]func(t *testing.T) string{
		"local": func(t *testing.T) string { return "file://" + t.TempDir() },
		"hdfs":  func(t *testing.T) string { return testenv.HDFSWarehouse(t) },
		"s3":    func(t *testing.T) string { return testenv.S3Warehouse(t) },
	}
}

// The specification's main case: 200k events over 4 partitions and 3 hours
// of event time, loaded into a local and an HDFS warehouse, read back with
// goavro's OCF reader: every event exactly once, equal, in its hour's
// directory, in files that roll by record count, with the three hours
// marked complete.
func TestLoad200k(t *testing.T) {
	const n = 200_000
	env := loadertest.Start(t)
	env.CreateTopic(t, "pageviews", 4)
	from := time.Now().UTC().Truncate(time.Hour).Add(-4 * time.Hour)
	events := loadertest.PageViews(0, n, 4, from, 3*time.Hour)
	start := time.Now()
	env.Produce(t, "pageviews", loadertest.Schema(t, "pageview"), events)
	t.Logf("produced %d events in %v", n, time.Since(start))

	for _, kind := range []string{"local", "hdfs"} {
		t.Run(kind, func(t *testing.T) {
			url := warehouses(t)[kind](t)
			cfg := config(env, url, "pageviews")
			cfg.FileMaxRecords = int64(n / 20)
			sum := run(t, cfg)
			t.Logf("loaded in %v: %d records, %d files, %.0f records/s", sum.Finished.Sub(sum.Started), sum.Records, sum.Files,
				float64(sum.Records)/sum.Finished.Sub(sum.Started).Seconds())
			if sum.Records != int64(n) || sum.Errors != 0 || len(sum.Lost) != 0 {
				t.Fatalf("summary: %d records, %d errors, lost %v", sum.Records, sum.Errors, sum.Lost)
			}
			w := openWarehouse(t, url)
			c := loadertest.Read(t, w)
			loadertest.CheckExactlyOnce(t, c, "pageviews", events)
			for _, f := range c.Files {
				if int64(len(f.Records)) > cfg.FileMaxRecords {
					t.Errorf("%s has %d records, more than the %d a file may hold", f.Path, len(f.Records), cfg.FileMaxRecords)
				}
				if f.Codec != "deflate" {
					t.Errorf("%s: codec %q", f.Path, f.Codec)
				}
			}
			// 4 partitions × 3 hours, each rolled at least once.
			if len(c.Files) < 4*3*2 {
				t.Errorf("%d files, want at least 24", len(c.Files))
			}
			var want []string
			for h := range 3 {
				want = append(want, "pageviews/"+from.Add(time.Duration(h)*time.Hour).Format("2006/01/02/15"))
			}
			if fmt.Sprint(c.Markers) != fmt.Sprint(want) {
				t.Errorf("_SUCCESS in %v, want %v", c.Markers, want)
			}
			if len(c.Other) > 0 {
				t.Errorf("unexpected files: %v", c.Other)
			}
			// A second run finds nothing new and changes nothing.
			sum = run(t, cfg)
			if sum.Records != 0 {
				t.Errorf("second run loaded %d records", sum.Records)
			}
			c2 := loadertest.Read(t, w)
			if len(c2.Files) != len(c.Files) {
				t.Errorf("second run: %d files, was %d", len(c2.Files), len(c.Files))
			}
		})
	}
}
