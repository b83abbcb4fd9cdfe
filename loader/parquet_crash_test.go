package loader_test

import (
	"context"
	"io"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/loadertest"
	"github.com/tributary-io/tributary/loader/warehouse"
)

// checkParquetExactlyOnce reads a topic's Parquet files with pyarrow:
// every event once, none else, in the partition of its header time, and
// nothing but committed manifests left in the loader's state.
func checkParquetExactlyOnce(t *testing.T, dir, topic string, events []loadertest.Event) {
	t.Helper()
	tab := pyarrowRead(t, filepath.Join(dir, topic))
	want := map[string]int{}
	for _, e := range events {
		want[loadertest.GUID(e.Value)]++
	}
	got := map[string]int{}
	for _, row := range tab.Rows {
		h := row["header"].(map[string]any)
		got[h["guid"].(string)]++
		at, err := time.Parse("2006-01-02T15:04:05.000000+00:00", h["time"].(string))
		if err != nil {
			t.Fatal(err)
		}
		if row["dt"] != at.Format("2006-01-02") || row["hr"] != float64(at.Hour()) {
			t.Errorf("event at %v in partition dt=%v/hr=%v", at, row["dt"], row["hr"])
		}
	}
	missing, extra := 0, 0
	for g, n := range want {
		if got[g] < n {
			missing++
		}
	}
	for g, n := range got {
		if n > want[g] {
			extra++
		}
	}
	if missing > 0 || extra > 0 || len(tab.Rows) != len(events) {
		t.Errorf("%s: pyarrow read %d rows for %d events: %d missing, %d duplicated or unknown", topic, len(tab.Rows), len(events), missing, extra)
	}
	filepath.WalkDir(filepath.Join(dir, "_tributary"), func(p string, d os.DirEntry, err error) error {
		rel := strings.TrimPrefix(p, dir+"/")
		if err == nil && !d.IsDir() && !isCommit(rel) && !strings.HasPrefix(rel, "_tributary/locks/") {
			t.Errorf("left behind: %s", rel)
		}
		return nil
	})
}

// TestCrashAtEachPoint for Parquet loads: killed at each named point after
// a first run committed half, then run again, every event is in the
// Parquet files exactly once (read by pyarrow).
func TestParquetCrashAtEachPoint(t *testing.T) {
	testenv.Needs(t, testenv.Python)
	const n = 4000
	env := loadertest.Start(t)
	env.CreateTopic(t, "pqcrash", 4)
	from := time.Now().UTC().Truncate(time.Hour).Add(-4 * time.Hour)
	events := loadertest.PageViews(0, n, 4, from, 3*time.Hour)
	env.Produce(t, "pqcrash", loadertest.Schema(t, "pageview"), events)

	for _, point := range loader.FaultPoints {
		t.Run(string(point), func(t *testing.T) {
			dir := t.TempDir()
			cfg := config(env, "file://"+dir, "pqcrash")
			cfg.Format = loader.FormatParquet
			cfg.FileMaxRecords = 300
			cfg.LockTTL = 2 * time.Second // local: renewals are never late; the next run waits one TTL
			first := cfg
			first.MaxRecords = n / 2
			run(t, first)

			crashing := cfg
			crashing.Fault = crashAt(point)
			sum, err := loader.Run(context.Background(), crashing)
			if err == nil {
				t.Fatalf("the fault at %s did not stop the run", point)
			}
			committed := point == loader.FaultAfterCommit || point == loader.FaultMidMove
			if sum.Committed != committed {
				t.Fatalf("killed at %s: committed=%v, want %v (%v)", point, sum.Committed, committed, err)
			}
			next := runAfterExpiry(t, cfg)
			if committed && (!slices.Contains(next.Recovered, sum.Run) || next.Records != 0) {
				t.Errorf("next run: recovered %v, loaded %d; want the killed run %s finished and nothing new", next.Recovered, next.Records, sum.Run)
			}
			if !committed && (!slices.Contains(next.Discarded, sum.Run) || next.Records != n-n/2) {
				t.Errorf("next run: discarded %v, loaded %d; want the killed run %s discarded and %d loaded", next.Discarded, next.Records, sum.Run, n-n/2)
			}
			checkParquetExactlyOnce(t, dir, "pqcrash", events)
		})
	}
}

// `tributary load --format parquet` killed with a real SIGKILL, mid-write
// and mid-move, then run again: every event exactly once in the Parquet
// files.
func TestParquetKillProcess(t *testing.T) {
	testenv.Needs(t, testenv.Tributary, testenv.Python)
	const n = 6000
	env := loadertest.Start(t)
	env.CreateTopic(t, "pqkilled", 4)
	from := time.Now().UTC().Truncate(time.Hour).Add(-4 * time.Hour)
	events := loadertest.PageViews(0, n, 4, from, 3*time.Hour)
	env.Produce(t, "pqkilled", loadertest.Schema(t, "pageview"), events)

	for _, point := range []loader.FaultPoint{loader.FaultMidWrite, loader.FaultBeforeCommit, loader.FaultMidMove} {
		t.Run(string(point), func(t *testing.T) {
			dir := t.TempDir()
			url := "file://" + dir
			t.Setenv("TRIBUTARY_LOAD_PAUSE_AT", string(point))
			p := testenv.StartProcess(t, "load", "--brokers", env.Brokers[0], "--registry", env.RegistryURL,
				"--topics", "pqkilled", "--warehouse", url, "--format", "parquet", "--codec", "zstd",
				"--file-max-records", "300", "--lock-ttl", "2s", "--quiet")
			testenv.Eventually(t, 60*time.Second, "tributary load reaches "+string(point), func() bool {
				select {
				case <-p.Done():
					t.Fatalf("tributary load exited before reaching %s", point)
				default:
				}
				return strings.Contains(p.Output.String(), "paused at "+string(point))
			})
			p.Kill()
			os.Unsetenv("TRIBUTARY_LOAD_PAUSE_AT")
			cfg := config(env, url, "pqkilled")
			cfg.Format = loader.FormatParquet
			next := runAfterExpiry(t, cfg)
			if point == loader.FaultMidMove && len(next.Recovered) != 1 {
				t.Errorf("killed mid-move: the next run recovered %v, want the killed run", next.Recovered)
			}
			if point != loader.FaultMidMove && (len(next.Discarded) != 1 || next.Records != n) {
				t.Errorf("killed at %s: the next run discarded %v and loaded %d, want the killed run discarded and %d loaded", point, next.Discarded, next.Records, n)
			}
			checkParquetExactlyOnce(t, dir, "pqkilled", events)
		})
	}
}

// A Parquet load into the HDFS mini cluster, killed mid-move and run again:
// the files, copied out of HDFS as they lie, are read by pyarrow with
// every event exactly once in its partition.
func TestParquetOnHDFS(t *testing.T) {
	testenv.Needs(t, testenv.HDFS, testenv.JVM, testenv.Python)
	const n = 3000
	env := loadertest.Start(t)
	env.CreateTopic(t, "pqhdfs", 2)
	from := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	events := loadertest.PageViews(0, n, 2, from, 2*time.Hour)
	env.Produce(t, "pqhdfs", loadertest.Schema(t, "pageview"), events)

	url := testenv.HDFSWarehouse(t)
	cfg := config(env, url, "pqhdfs")
	cfg.Format, cfg.Codec, cfg.FileMaxRecords = loader.FormatParquet, "gzip", 500
	crashing := cfg
	crashing.Fault = crashAt(loader.FaultMidMove)
	if sum, err := loader.Run(context.Background(), crashing); err == nil || !sum.Committed {
		t.Fatalf("killed mid-move: committed=%v, %v", sum.Committed, err)
	}
	if next := runAfterExpiry(t, cfg); len(next.Recovered) != 1 {
		t.Errorf("the next run recovered %v, want the killed run", next.Recovered)
	}
	dir := t.TempDir()
	copyOut(t, openWarehouse(t, url), ".", dir)
	checkParquetExactlyOnce(t, dir, "pqhdfs", events)
}

// copyOut copies a warehouse directory tree into a local directory.
func copyOut(t *testing.T, w warehouse.FS, from, to string) {
	t.Helper()
	infos, err := w.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, fi := range infos {
		src, dst := path.Join(from, fi.Name()), filepath.Join(to, fi.Name())
		if fi.IsDir() {
			if err := os.MkdirAll(dst, 0o755); err != nil {
				t.Fatal(err)
			}
			copyOut(t, w, src, dst)
			continue
		}
		r, err := w.Open(src)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Twenty SIGKILLs of `tributary load --format parquet` at random moments,
// each run slowed down at one of the fault points in turn (so that kills
// land inside the write, the commit and the moves), then a last run: every
// event exactly once in the Parquet files.
func TestParquetKillLoop(t *testing.T) {
	testenv.Needs(t, testenv.Tributary, testenv.Python)
	const n, kills = 6000, 20
	env := loadertest.Start(t)
	env.CreateTopic(t, "pqloop", 3)
	from := time.Now().UTC().Truncate(time.Hour).Add(-4 * time.Hour)
	events := loadertest.PageViews(0, n, 3, from, 3*time.Hour)
	env.Produce(t, "pqloop", loadertest.Schema(t, "pageview"), events)

	dir := t.TempDir()
	url := "file://" + dir
	rng := rand.New(rand.NewPCG(26, uint64(time.Now().UnixNano())))
	exited := 0
	for i := range kills {
		point := loader.FaultPoints[i%len(loader.FaultPoints)]
		t.Setenv("TRIBUTARY_LOAD_DELAY_AT", string(point)+":500ms")
		p := testenv.StartProcess(t, "load", "--brokers", env.Brokers[0], "--registry", env.RegistryURL,
			"--topics", "pqloop", "--warehouse", url, "--format", "parquet", "--max-records", "400",
			"--file-max-records", "100", "--lock-ttl", "500ms", "--quiet")
		select {
		case <-p.Done():
			exited++ // locked out by the last one's lock, or done: no kill this time
		case <-time.After(time.Duration(50+rng.IntN(650)) * time.Millisecond):
		}
		p.Kill()
		time.Sleep(600 * time.Millisecond) // the killed run's lock expires
	}
	os.Unsetenv("TRIBUTARY_LOAD_DELAY_AT")
	if exited > kills/2 {
		t.Fatalf("%d of %d runs ended before their kill: the loop killed too few", exited, kills)
	}
	cfg := config(env, url, "pqloop")
	cfg.Format = loader.FormatParquet
	last := runAfterExpiry(t, cfg)
	t.Logf("%d kills, %d runs ended first; the last run loaded %d, recovered %v, discarded %v", kills-exited, exited, last.Records, last.Recovered, last.Discarded)
	checkParquetExactlyOnce(t, dir, "pqloop", events)
}
