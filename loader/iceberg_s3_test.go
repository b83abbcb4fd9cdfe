package loader_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/loadertest"
	"github.com/tributary-io/tributary/loader/warehouse"
)

// Iceberg tables in an S3 warehouse (S3Proxy): the table's version is one
// conditional PUT of vN.metadata.json, not a rename.

// checkNoOrphansIn is checkNoOrphans for a table in a warehouse reached
// by URL: every data file under it is named by a snapshot (files holds
// their full URLs), and no temporary metadata file is left.
func checkNoOrphansIn(t *testing.T, tableURL string, files []string) {
	t.Helper()
	in := map[string]bool{}
	for _, f := range files {
		in[f] = true
	}
	w := openWarehouse(t, tableURL)
	var walk func(dir string)
	walk = func(dir string) {
		infos, err := w.ReadDir(dir)
		if err != nil {
			t.Errorf("table %s: listing %s: %v", tableURL, dir, err)
			return
		}
		for _, fi := range infos {
			p := path.Join(dir, fi.Name())
			switch {
			case fi.IsDir():
				walk(p)
			case strings.HasSuffix(p, ".parquet") && !in[tableURL+"/"+p]:
				t.Errorf("data file in no snapshot: %s/%s", tableURL, p)
			case strings.HasPrefix(fi.Name(), "."):
				t.Errorf("left behind: %s/%s", tableURL, p)
			}
		}
	}
	walk(".")
}

// A table load into S3 in two runs, read by pyiceberg through its S3 file
// IO: every event once, counted in its hour, two snapshots, the second's
// offsets the logs' ends; an hour scan prunes to that hour's files; the
// metadata holds s3:// paths and no version was written twice.
func TestIcebergS3LoadReadByPyiceberg(t *testing.T) {
	const n = 3000
	env := loadertest.Start(t)
	env.CreateTopic(t, "ices3", 3)
	from := time.Now().UTC().Truncate(time.Hour).Add(-5 * time.Hour)
	events := loadertest.PageViews(0, n, 3, from, 3*time.Hour)
	env.Produce(t, "ices3", loadertest.Schema(t, "pageview"), events[:n/2])

	url := testenv.S3Warehouse(t)
	cfg := config(env, url, "ices3")
	cfg.Table, cfg.FileMaxRecords = "db", 400
	run(t, cfg)
	env.Produce(t, "ices3", loadertest.Schema(t, "pageview"), events[n/2:])
	if sum := run(t, cfg); sum.Records != n-n/2 {
		t.Errorf("second run loaded %d records, want %d", sum.Records, n-n/2)
	}
	table := tableAt(url, "db", "ices3")
	tab := checkIcebergExactlyOnce(t, table, events, logEnds(t, env, "ices3", 3))
	if tab.Snapshots != 2 || tab.Summary["operation"] != "append" {
		t.Errorf("%d snapshots, current %v; want 2 appends", tab.Snapshots, tab.Summary)
	}
	for _, f := range tab.AllFiles {
		if !strings.HasPrefix(f, table+"/data/") {
			t.Errorf("data file %s is not in the table's data directory %s/data", f, table)
		}
	}
	if v := latestVersion(t, table); v != "v2.metadata.json" {
		t.Errorf("the current version is %s after two runs, want v2.metadata.json", v)
	}
}

// A table load into S3 killed at each named point after a first run
// committed half, then run again: as TestIcebergCrashAtEachPoint, on an
// object store, where the table commit is a conditional PUT.
func TestIcebergS3CrashAtEachPoint(t *testing.T) {
	icebergCrashAtEachPoint(t, "s3")
}

// SIGKILLs of `tributary load --table` into S3: runs stopped at each fault
// point in turn and killed there (twice round), then runs killed at random
// moments (inside an upload, a copy into the table, the version's PUT);
// then a last run: every event exactly once in the table, the last
// snapshot's offsets the logs' ends, no data file outside a snapshot.
func TestIcebergS3KillLoop(t *testing.T) {
	const n, atRandom = 4000, 8
	env := loadertest.Start(t)
	env.CreateTopic(t, "ices3kill", 3)
	from := time.Now().UTC().Truncate(time.Hour).Add(-4 * time.Hour)
	events := loadertest.PageViews(0, n, 3, from, 3*time.Hour)
	env.Produce(t, "ices3kill", loadertest.Schema(t, "pageview"), events)

	url := testenv.S3Warehouse(t)
	args := []string{"load", "--brokers", env.Brokers[0], "--registry", env.RegistryURL,
		"--topics", "ices3kill", "--warehouse", url, "--table", "db", "--max-records", "300",
		"--file-max-records", "100", "--lock-ttl", "1s", "--quiet"}
	points := slices.Concat(loader.FaultPoints, loader.TableFaultPoints)
	for i := range 2 * len(points) {
		point := points[i%len(points)]
		p := startLoad(t, string(point), args)
		if !strings.Contains(p.Output.String(), "paused at "+string(point)) {
			t.Fatalf("kill %d: tributary load exited before reaching %s:\n%s", i, point, p.Output.String())
		}
		p.Kill()
	}
	rng := rand.New(rand.NewPCG(31, uint64(time.Now().UnixNano())))
	for range atRandom {
		t.Setenv("TRIBUTARY_LOAD_DELAY_AT", string(points[rng.IntN(len(points))])+":1s")
		p := testenv.StartProcess(t, args...)
		select {
		case <-p.Done(): // locked out by a killed run's lock, or done
		case <-time.After(time.Duration(100+rng.IntN(1500)) * time.Millisecond):
		}
		p.Kill()
	}
	os.Unsetenv("TRIBUTARY_LOAD_DELAY_AT")
	cfg := config(env, url, "ices3kill")
	cfg.Table, cfg.LockTTL = "db", time.Second
	last := runAfterExpiry(t, cfg)
	t.Logf("%d kills; the last run loaded %d, recovered %v, discarded %v", 2*len(points)+atRandom, last.Records, last.Recovered, last.Discarded)
	tab := checkIcebergExactlyOnce(t, tableAt(url, "db", "ices3kill"), events, logEnds(t, env, "ices3kill", 3))
	t.Logf("%d snapshots", tab.Snapshots)
}

// versionStall stalls a loader's whole warehouse (its lease renewals
// too) when the loader is about to create a table version, inside the
// call that creates it: the moment between the loader's last check of the
// table and its commit.
type versionStall struct {
	*stallFS
	once sync.Once
	hit  chan struct{}
}

var versionName = regexp.MustCompile(`/metadata/v[0-9]+\.metadata\.json$`)

func (v *versionStall) at(name string) {
	if versionName.MatchString("/" + name) {
		v.once.Do(func() { v.stall(true); close(v.hit) })
	}
}

func (v *versionStall) Unwrap() warehouse.FS { return v.stallFS }
func (v *versionStall) CreateExclusive(name string, data []byte) error {
	v.at(name)
	return v.stallFS.CreateExclusive(name, data)
}
func (v *versionStall) Rename(o, n string) error { v.at(n); return v.stallFS.Rename(o, n) }
func (v *versionStall) RenameNoReplace(o, n string) error {
	v.at(n)
	return v.stallFS.RenameNoReplace(o, n)
}

// A table load stalled past its lease, then resumed, while another run
// took the topic over and committed the same records to the table: the
// stalled run's commit is refused and nothing of it is left in the table.
// It is stalled at two places: at its commit point, before it looks at
// the table again; and inside the call that creates its version, after
// its last look (on S3 the conditional PUT, elsewhere the rename without
// replacing; a rename that replaced, or a copy on S3, would put the
// stalled run's version over the other run's, loading the range twice).
func TestIcebergPausedLoaderIsFenced(t *testing.T) {
	const n = 3000
	env := loadertest.Start(t)
	env.CreateTopic(t, "icepaused", 2)
	from := time.Now().UTC().Truncate(time.Hour).Add(-4 * time.Hour)
	events := loadertest.PageViews(0, n, 2, from, 3*time.Hour)
	env.Produce(t, "icepaused", loadertest.Schema(t, "pageview"), events)
	ends := logEnds(t, env, "icepaused", 2)

	for _, kind := range []string{"local", "s3"} {
		for _, where := range []string{"commit-point", "version-create"} {
			t.Run(kind+"/"+where, func(t *testing.T) {
				url := warehouses(t)[kind](t)
				stalled := &versionStall{stallFS: &stallFS{FS: openWarehouse(t, url)}, hit: make(chan struct{})}
				cfg := config(env, url, "icepaused")
				cfg.Table, cfg.FileMaxRecords, cfg.LockTTL = "db", 500, 2*time.Second
				first := cfg
				first.FS = stalled
				resume := make(chan struct{})
				if where == "commit-point" {
					stalled.once.Do(func() {}) // no stall at the version
					first.Fault = func(p loader.FaultPoint) error {
						if p == loader.FaultCommitPoint {
							stalled.stall(true)
							close(stalled.hit)
							<-resume
							stalled.stall(false)
						}
						return nil
					}
				}
				type result struct {
					sum *loader.Summary
					err error
				}
				done := make(chan result, 1)
				go func() { sum, err := loader.Run(context.Background(), first); done <- result{sum, err} }()
				select {
				case <-stalled.hit:
				case r := <-done:
					t.Fatalf("the first run ended before it stalled: %v", r.err)
				case <-time.After(60 * time.Second):
					t.Fatal("the first run did not reach its stall")
				}

				taker := runAfterExpiry(t, cfg)
				if taker.Records != n || len(taker.Discarded) != 1 {
					t.Fatalf("the run taking over loaded %d records and discarded %v; want %d and the stalled run", taker.Records, taker.Discarded, n)
				}
				if where == "version-create" {
					stalled.stall(false)
				} else {
					close(resume)
				}
				var r result
				select {
				case r = <-done:
				case <-time.After(60 * time.Second):
					t.Fatal("the resumed run did not finish")
				}
				if r.err == nil || r.sum.Committed {
					t.Fatalf("the resumed run: committed=%v, error %v; want its commit refused", r.sum.Committed, r.err)
				}
				t.Logf("the resumed run: %v", r.err)
				table := tableAt(url, "db", "icepaused")
				tab := checkIcebergExactlyOnce(t, table, events, ends)
				if tab.Summary["tributary.run"] != taker.Run || tab.Snapshots != 1 {
					t.Errorf("the table has %d snapshots, the current one run %s's; want one, the taker's (%s)", tab.Snapshots, tab.Summary["tributary.run"], taker.Run)
				}
				if again := run(t, cfg); again.Records != 0 || len(again.Discarded)+len(again.Recovered) != 0 {
					t.Errorf("the next run loaded %d records, discarded %v, recovered %v; want nothing to do", again.Records, again.Discarded, again.Recovered)
				}
			})
		}
	}
}

// Two loaders over the same topics of one S3 warehouse, loading their
// tables run after run at the same time: one run at a time loads a topic,
// the other is told who holds it, and every event is in each table once.
func TestIcebergS3ConcurrentLoaders(t *testing.T) {
	const n = 3000
	env := loadertest.Start(t)
	from := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	topics := []string{"ices3ca", "ices3cb"}
	events := map[string][]loadertest.Event{}
	for _, topic := range topics {
		env.CreateTopic(t, topic, 2)
		events[topic] = loadertest.PageViews(0, n, 2, from, 2*time.Hour)
		env.Produce(t, topic, loadertest.Schema(t, "pageview"), events[topic])
	}
	url := testenv.S3Warehouse(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	committed, locked := map[int]int{}, 0
	for loaderID := range 2 {
		wg.Go(func() {
			cfg := config(env, url, topics...)
			cfg.Table, cfg.MaxRecords, cfg.FileMaxRecords, cfg.Holder = "db", 500, 200, fmt.Sprintf("loader %d", loaderID)
			for range 8 {
				_, err := loader.Run(context.Background(), cfg)
				var le *warehouse.LockedError
				mu.Lock()
				switch {
				case err == nil:
					committed[loaderID]++
				case errors.As(err, &le):
					locked++
				default:
					t.Errorf("loader %d: %v", loaderID, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	cfg := config(env, url, topics...)
	cfg.Table = "db"
	runAfterExpiry(t, cfg)
	t.Logf("runs committed per loader: %v; refused by a lock: %d", committed, locked)
	for _, topic := range topics {
		checkIcebergExactlyOnce(t, tableAt(url, "db", topic), events[topic], logEnds(t, env, topic, 2))
	}
}

// lostAnswer is a warehouse whose creation of a table version happens but
// answers with an error, as a request whose answer the network lost.
type lostAnswer struct{ warehouse.FS }

func (l lostAnswer) Unwrap() warehouse.FS { return l.FS }
func (l lostAnswer) RenameNoReplace(o, n string) error {
	if err := l.FS.RenameNoReplace(o, n); err != nil || !versionName.MatchString("/"+n) {
		return err
	}
	return errors.New("connection reset by peer")
}
func (l lostAnswer) CreateExclusive(name string, data []byte) error {
	if err := l.FS.CreateExclusive(name, data); err != nil || !versionName.MatchString("/"+name) {
		return err
	}
	return errors.New("connection reset by peer")
}

// A run whose table commit happened but whose answer was lost (on a local
// warehouse and on S3) does not know whether it committed: it keeps its
// directory, and the next run finds its snapshot in the table and
// finishes it (committing its manifest, with its counts), loading nothing
// twice. Deleting the directory, as after a refusal, lost the manifest.
func TestIcebergCommitAnswerLost(t *testing.T) {
	const n = 1200
	env := loadertest.Start(t)
	env.CreateTopic(t, "icelost", 2)
	from := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	events := loadertest.PageViews(0, n, 2, from, 2*time.Hour)
	env.Produce(t, "icelost", loadertest.Schema(t, "pageview"), events)
	for _, kind := range []string{"local", "s3"} {
		t.Run(kind, func(t *testing.T) {
			url := warehouses(t)[kind](t)
			cfg := config(env, url, "icelost")
			cfg.Table, cfg.FileMaxRecords, cfg.LockTTL = "db", 300, 2*time.Second
			lost := cfg
			lost.FS = lostAnswer{openWarehouse(t, url)}
			sum, err := loader.Run(context.Background(), lost)
			if err == nil || sum.Committed || !strings.Contains(err.Error(), "unknown") {
				t.Fatalf("a lost answer: committed=%v, %v; want an error saying the commit is unknown", sum.Committed, err)
			}
			next := runAfterExpiry(t, cfg)
			if !slices.Contains(next.Recovered, sum.Run) || next.Records != 0 {
				t.Errorf("the next run recovered %v and loaded %d; want run %s finished and nothing loaded again", next.Recovered, next.Records, sum.Run)
			}
			checkIcebergExactlyOnce(t, tableAt(url, "db", "icelost"), events, logEnds(t, env, "icelost", 2))
		})
	}
}
