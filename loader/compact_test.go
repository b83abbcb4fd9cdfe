package loader_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/loadertest"
)

// countRows is a reader of the warehouse as pyarrow and Spark read it:
// list the topic's partition directories (skipping names that start with
// "_" or "."), then open each file listed. A file gone between the listing
// and the open makes it list again, as a reader's retry would; ok is false
// then.
func countRows(dir string) (rows int64, files int, ok bool) {
	days, _ := os.ReadDir(dir)
	for _, d := range days {
		if strings.HasPrefix(d.Name(), "_") || strings.HasPrefix(d.Name(), ".") {
			continue
		}
		hours, _ := os.ReadDir(filepath.Join(dir, d.Name()))
		for _, h := range hours {
			if strings.HasPrefix(h.Name(), "_") || strings.HasPrefix(h.Name(), ".") {
				continue
			}
			names, _ := os.ReadDir(filepath.Join(dir, d.Name(), h.Name()))
			for _, n := range names {
				if !strings.HasSuffix(n.Name(), ".parquet") {
					continue
				}
				b, err := os.ReadFile(filepath.Join(dir, d.Name(), h.Name(), n.Name()))
				if err != nil {
					return 0, 0, false
				}
				f, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
				if err != nil {
					return 0, 0, false
				}
				rows += f.NumRows()
				files++
			}
		}
	}
	return rows, files, true
}

// Compaction merges each hour's small files into one, while readers read:
// every listing a reader completes holds every record exactly once (the
// old files or the new, never both, never neither), and a compaction
// killed before or after its swap is finished by the next with nothing
// lost or doubled (pyarrow reads every event once).
func TestParquetCompact(t *testing.T) {
	testenv.Needs(t, testenv.Python)
	const n = 3000
	env := loadertest.Start(t)
	env.CreateTopic(t, "pqsmall", 3)
	from := time.Now().UTC().Truncate(time.Hour).Add(-4 * time.Hour)
	events := loadertest.PageViews(0, n, 3, from, 2*time.Hour)
	env.Produce(t, "pqsmall", loadertest.Schema(t, "pageview"), events)

	for _, point := range []loader.FaultPoint{"", loader.CompactBeforeSwap, loader.CompactAfterSwap} {
		t.Run("killed-at-"+string(point), func(t *testing.T) {
			dir := t.TempDir()
			cfg := config(env, "file://"+dir, "pqsmall")
			cfg.Format, cfg.FileMaxRecords, cfg.MaxRecords = loader.FormatParquet, 100, n/3
			for range 3 { // three runs: small files
				run(t, cfg)
			}
			topicDir := filepath.Join(dir, "pqsmall")
			if rows, files, _ := countRows(topicDir); rows != n || files < 30 {
				t.Fatalf("before compaction: %d rows in %d files, want %d in at least 30", rows, files, n)
			}

			stop := make(chan struct{})
			var wg sync.WaitGroup
			var reads, retries atomic.Int64
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					rows, _, ok := countRows(topicDir)
					if !ok {
						retries.Add(1)
						continue
					}
					reads.Add(1)
					if rows != n {
						t.Errorf("a reader listed %d rows, want %d", rows, n)
						return
					}
				}
			}()
			cc := loader.CompactConfig{Warehouse: "file://" + dir, Topic: "pqsmall", LockTTL: time.Second, Logger: quiet}
			if point != "" {
				killed := cc
				killed.Fault = func(p loader.FaultPoint) error {
					if p == point {
						return errors.New("killed")
					}
					return nil
				}
				if _, err := loader.Compact(context.Background(), killed); err == nil {
					t.Fatalf("the fault at %s did not stop the compaction", point)
				}
				time.Sleep(1500 * time.Millisecond) // the killed one's lock expires
			}
			done, err := loader.Compact(context.Background(), cc)
			close(stop)
			wg.Wait()
			if err != nil {
				t.Fatal(err)
			}
			// Killed after its first swap, a compaction has done one hour.
			if want := map[loader.FaultPoint]int{"": 2, loader.CompactBeforeSwap: 2, loader.CompactAfterSwap: 1}[point]; len(done) != want {
				t.Errorf("compacted %v, want %d hours", done, want)
			}
			rows, files, _ := countRows(topicDir)
			if rows != n || files != 2 {
				t.Errorf("after compaction: %d rows in %d files, want %d in 2 (one an hour)", rows, files, n)
			}
			t.Logf("%d reads during the compaction, %d retried", reads.Load(), retries.Load())
			var left []string
			filepath.WalkDir(topicDir, func(p string, d os.DirEntry, err error) error {
				if err == nil && strings.Contains(d.Name(), ".compact-") {
					left = append(left, p)
				}
				return nil
			})
			if len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
			checkParquetExactlyOnce(t, dir, "pqsmall", events)
			if sum := run(t, cfg); sum.Records != 0 {
				t.Errorf("a load after the compaction loaded %d records again", sum.Records)
			}
		})
	}
}

// `tributary compact` killed with a real SIGKILL before and after its
// swap, then run again: every event once, one file an hour.
func TestParquetCompactKillProcess(t *testing.T) {
	testenv.Needs(t, testenv.Tributary, testenv.Python)
	const n = 1200
	env := loadertest.Start(t)
	env.CreateTopic(t, "pqcompkill", 2)
	from := time.Now().UTC().Truncate(time.Hour).Add(-4 * time.Hour)
	events := loadertest.PageViews(0, n, 2, from, 2*time.Hour)
	env.Produce(t, "pqcompkill", loadertest.Schema(t, "pageview"), events)

	for _, point := range loader.CompactFaultPoints {
		t.Run(string(point), func(t *testing.T) {
			dir := t.TempDir()
			cfg := config(env, "file://"+dir, "pqcompkill")
			cfg.Format, cfg.FileMaxRecords = loader.FormatParquet, 100
			run(t, cfg)
			t.Setenv("TRIBUTARY_LOAD_PAUSE_AT", string(point))
			p := testenv.StartProcess(t, "compact", "--warehouse", "file://"+dir, "--topic", "pqcompkill", "--lock-ttl", "1s")
			testenv.Eventually(t, 30*time.Second, "tributary compact reaches "+string(point), func() bool {
				select {
				case <-p.Done():
					t.Fatalf("tributary compact exited before reaching %s", point)
				default:
				}
				return strings.Contains(p.Output.String(), "paused at "+string(point))
			})
			p.Kill()
			os.Unsetenv("TRIBUTARY_LOAD_PAUSE_AT")
			if rows, _, _ := countRows(filepath.Join(dir, "pqcompkill")); rows != n {
				t.Fatalf("killed at %s: readers see %d rows, want %d", point, rows, n)
			}
			time.Sleep(1500 * time.Millisecond) // the killed process's lock expires
			if _, err := loader.Compact(context.Background(), loader.CompactConfig{Warehouse: "file://" + dir, Topic: "pqcompkill", Logger: quiet}); err != nil {
				t.Fatal(err)
			}
			if rows, files, _ := countRows(filepath.Join(dir, "pqcompkill")); rows != n || files != 2 {
				t.Errorf("after the next compaction: %d rows in %d files, want %d in 2", rows, files, n)
			}
			checkParquetExactlyOnce(t, dir, "pqcompkill", events)
		})
	}
}

// A load run of the topic killed before its end may still move files into
// an hour or mark it: compaction refuses the topic until a load has
// finished or discarded that run.
func TestParquetCompactWaitsForUnfinishedRuns(t *testing.T) {
	testenv.Needs(t, testenv.Python)
	env := loadertest.Start(t)
	env.CreateTopic(t, "pqunfinished", 1)
	events := loadertest.PageViews(0, 600, 1, time.Now().UTC().Truncate(time.Hour).Add(-4*time.Hour), time.Hour)
	env.Produce(t, "pqunfinished", loadertest.Schema(t, "pageview"), events)
	dir := t.TempDir()
	cfg := config(env, "file://"+dir, "pqunfinished")
	cfg.Format, cfg.FileMaxRecords, cfg.LockTTL = loader.FormatParquet, 100, time.Second
	first := cfg
	first.MaxRecords = 300
	run(t, first)
	killed := cfg
	killed.Fault = crashAt(loader.FaultAfterCommit)
	if _, err := loader.Run(context.Background(), killed); err == nil {
		t.Fatal("the fault did not stop the run")
	}
	time.Sleep(1200 * time.Millisecond) // its lock expires
	cc := loader.CompactConfig{Warehouse: "file://" + dir, Topic: "pqunfinished", LockTTL: time.Second, Logger: quiet}
	if _, err := loader.Compact(context.Background(), cc); err == nil || !strings.Contains(err.Error(), "is unfinished: run tributary load for the topic first") {
		t.Fatalf("compaction over an unfinished run: %v", err)
	}
	runAfterExpiry(t, cfg)
	done, err := loader.Compact(context.Background(), cc)
	if err != nil || len(done) != 1 {
		t.Fatalf("compaction after the load finished the run: %v, %v", done, err)
	}
	checkParquetExactlyOnce(t, dir, "pqunfinished", events)
}
