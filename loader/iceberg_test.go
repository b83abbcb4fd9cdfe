package loader_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/loadertest"
)

// icebergTable is what testdata/read_iceberg.py reads of a table with
// pyiceberg.
type icebergTable struct {
	Summary   map[string]string    `json:"summary"`
	Snapshots int                  `json:"snapshots"`
	Columns   []string             `json:"columns"`
	Refs      []string             `json:"refs"`
	Hours     map[string]int       `json:"hours"`
	GUIDs     []string             `json:"guids"`
	Files     []string             `json:"files"`
	AllFiles  []string             `json:"all_files"` // of every snapshot
	Values    map[string][]*string `json:"values"`
	HourScan  *struct {
		Hour    string `json:"hour"`
		Records int    `json:"records"`
		Files   int    `json:"files"`
	} `json:"hour_scan"`
}

func pyicebergRead(t *testing.T, tableDir string, columns ...string) icebergTable {
	t.Helper()
	if exec.Command("python3", "-c", "import pyiceberg.table").Run() != nil {
		t.Fatal("pyiceberg is missing: run scripts/install-deps.sh (.ci/run does)")
	}
	target := tableDir
	if strings.HasPrefix(tableDir, "s3://") {
		target = tableDir + "/metadata/" + latestVersion(t, tableDir)
	}
	var stderr bytes.Buffer
	cmd := exec.Command("python3", append([]string{filepath.Join("testdata", "read_iceberg.py"), target}, columns...)...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pyiceberg could not read %s: %v\n%s", tableDir, err, stderr.String())
	}
	var tab icebergTable
	if err := json.Unmarshal(out, &tab); err != nil {
		t.Fatal(err)
	}
	return tab
}

// checkIcebergExactlyOnce reads a topic's table with pyiceberg: every
// event once, none else, each hour's count as produced, and the current
// snapshot's offsets the end of every partition.
func checkIcebergExactlyOnce(t *testing.T, tableDir string, events []loadertest.Event, ends map[int32]int64) icebergTable {
	t.Helper()
	return checkIcebergExactlyOnceVia(t, tableDir, tableDir, events, ends)
}

// checkIcebergExactlyOnceVia is checkIcebergExactlyOnce of a table that
// pyiceberg reads as target (read_iceberg.py's argument) and whose files
// are in tableDir.
func checkIcebergExactlyOnceVia(t *testing.T, target, tableDir string, events []loadertest.Event, ends map[int32]int64) icebergTable {
	t.Helper()
	tab := pyicebergRead(t, target)
	want := map[string]int{}
	wantHours := map[string]int{}
	for _, e := range events {
		want[loadertest.GUID(e.Value)]++
		at := e.Value["header"].(map[string]any)["time"].(time.Time)
		wantHours[at.UTC().Format("2006-01-02-15")]++
	}
	got := map[string]int{}
	for _, g := range tab.GUIDs {
		got[g]++
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
	if missing > 0 || extra > 0 || len(tab.GUIDs) != len(events) {
		t.Errorf("pyiceberg read %d records for %d events: %d missing, %d duplicated or unknown", len(tab.GUIDs), len(events), missing, extra)
	}
	for h, n := range wantHours {
		if tab.Hours[h] != n {
			t.Errorf("hour %s: pyiceberg counts %d records, %d were produced", h, tab.Hours[h], n)
		}
	}
	var offsets map[string]int64
	if err := json.Unmarshal([]byte(tab.Summary["tributary.offsets"]), &offsets); err != nil {
		t.Fatalf("snapshot summary %v: tributary.offsets: %v", tab.Summary, err)
	}
	for p, end := range ends {
		if offsets[strconv.Itoa(int(p))] != end {
			t.Errorf("partition %d: the current snapshot's offset is %d, the log ends at %d", p, offsets[strconv.Itoa(int(p))], end)
		}
	}
	if tab.HourScan == nil || tab.HourScan.Records != wantHours[tab.HourScan.Hour] {
		t.Errorf("a scan of one hour by pyiceberg: %+v, want %d records", tab.HourScan, wantHours[tab.HourScan.Hour])
	}
	checkNoOrphans(t, tableDir, tab.AllFiles)
	return tab
}

func logEnds(t *testing.T, env *loadertest.Env, topic string, partitions int32) map[int32]int64 {
	ends := map[int32]int64{}
	for p := range partitions {
		_, ends[p] = env.Offsets(t, topic, p)
	}
	return ends
}

// A table load in two runs, read by pyiceberg: every event once, counted
// in its hour; two snapshots, the second's offsets the logs' ends; an
// hour scan prunes to that hour's files.
func TestIcebergLoadReadByPyiceberg(t *testing.T) {
	const n = 3000
	env := loadertest.Start(t)
	env.CreateTopic(t, "ice", 3)
	from := time.Now().UTC().Truncate(time.Hour).Add(-5 * time.Hour)
	events := loadertest.PageViews(0, n, 3, from, 3*time.Hour)
	env.Produce(t, "ice", loadertest.Schema(t, "pageview"), events[:n/2])

	dir := t.TempDir()
	cfg := config(env, "file://"+dir, "ice")
	cfg.Table, cfg.FileMaxRecords = "db", 400
	run(t, cfg)
	env.Produce(t, "ice", loadertest.Schema(t, "pageview"), events[n/2:])
	sum := run(t, cfg)
	if sum.Records != n-n/2 {
		t.Errorf("second run loaded %d records, want %d", sum.Records, n-n/2)
	}
	tab := checkIcebergExactlyOnce(t, filepath.Join(dir, "db", "ice"), events, logEnds(t, env, "ice", 3))
	if tab.Snapshots != 2 || tab.Summary["operation"] != "append" {
		t.Errorf("%d snapshots, current %v; want 2 appends", tab.Snapshots, tab.Summary)
	}
	t.Logf("columns %v, refs %v, hour scan %+v", tab.Columns, tab.Refs, tab.HourScan)
}

// latestVersion names the current version file of a table in a warehouse
// that pyiceberg cannot list (an object store): the highest vN.
func latestVersion(t *testing.T, tableURL string) string {
	t.Helper()
	infos, err := openWarehouse(t, tableURL).ReadDir("metadata")
	if err != nil {
		t.Fatalf("table %s: %v", tableURL, err)
	}
	best := 0
	for _, fi := range infos {
		var n int
		if _, err := fmt.Sscanf(fi.Name(), "v%d.metadata.json", &n); err == nil && n > best {
			best = n
		}
	}
	if best == 0 {
		t.Fatalf("table %s has no version", tableURL)
	}
	return fmt.Sprintf("v%d.metadata.json", best)
}

// tableAt is where a topic's table of namespace ns lies in the warehouse
// at url: a local path for a local warehouse, else a URL.
func tableAt(url, ns, topic string) string {
	if dir, ok := strings.CutPrefix(url, "file://"); ok {
		return filepath.Join(dir, ns, topic)
	}
	return url + "/" + ns + "/" + topic
}

// checkNoOrphans: every data file in the table's directory is named by a
// snapshot, and no temporary metadata file is left.
func checkNoOrphans(t *testing.T, tableDir string, files []string) {
	t.Helper()
	if strings.Contains(tableDir, "://") {
		checkNoOrphansIn(t, tableDir, files)
		return
	}
	in := map[string]bool{}
	for _, f := range files {
		in[strings.TrimPrefix(f, "file://")] = true
	}
	filepath.WalkDir(tableDir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch {
		case strings.HasSuffix(p, ".parquet") && !in[p]:
			t.Errorf("data file in no snapshot: %s", p)
		case strings.HasPrefix(d.Name(), ".") && !strings.HasSuffix(d.Name(), ".metadata.json.crc"):
			// (A REST catalog server writing through Hadoop's local file
			// system leaves a checksum beside each metadata file.)
			t.Errorf("left behind: %s", p)
		}
		return nil
	})
}

// A table load killed at each of its named points after a first run
// committed half, then run again: every event in the table exactly once,
// the last snapshot's offsets the logs' ends, no data file outside a
// snapshot. A run killed inside the table commit (its new version written
// whole, not yet renamed into place) is discarded; one killed after it is
// finished.
func TestIcebergCrashAtEachPoint(t *testing.T) { icebergCrashAtEachPoint(t, "local") }

func icebergCrashAtEachPoint(t *testing.T, kind string) {
	const n = 4000
	env := loadertest.Start(t)
	env.CreateTopic(t, "icecrash", 4)
	from := time.Now().UTC().Truncate(time.Hour).Add(-4 * time.Hour)
	events := loadertest.PageViews(0, n, 4, from, 3*time.Hour)
	env.Produce(t, "icecrash", loadertest.Schema(t, "pageview"), events)
	ends := logEnds(t, env, "icecrash", 4)

	for _, point := range slices.Concat(loader.FaultPoints, loader.TableFaultPoints) {
		t.Run(string(point), func(t *testing.T) {
			url := warehouses(t)[kind](t)
			cfg := config(env, url, "icecrash")
			cfg.Table, cfg.FileMaxRecords = "db", 300
			cfg.LockTTL = 2 * time.Second
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
			checkIcebergExactlyOnce(t, tableAt(url, "db", "icecrash"), events, ends)
		})
	}
}

// A run over two tables killed between their commits (the first table
// holds its snapshot, the second not): the next run finishes the second
// table's commit from the run's manifest instead of loading its range
// again, and both tables hold every event once.
func TestIcebergCrashBetweenTables(t *testing.T) {
	const n = 2000
	env := loadertest.Start(t)
	events := map[string][]loadertest.Event{}
	for _, topic := range []string{"icea", "iceb"} {
		env.CreateTopic(t, topic, 2)
		events[topic] = loadertest.PageViews(0, n, 2, time.Now().UTC().Truncate(time.Hour).Add(-3*time.Hour), 2*time.Hour)
		env.Produce(t, topic, loadertest.Schema(t, "pageview"), events[topic])
	}
	dir := t.TempDir()
	cfg := config(env, "file://"+dir, "icea", "iceb")
	cfg.Table, cfg.FileMaxRecords, cfg.LockTTL = "db", 500, 2*time.Second
	crashing := cfg
	seen := 0
	crashing.Fault = func(p loader.FaultPoint) error {
		if p == loader.FaultTableCommit {
			if seen++; seen == 2 { // the between-tables point: icea is committed
				return errors.New("killed between the tables")
			}
		}
		return nil
	}
	sum, err := loader.Run(context.Background(), crashing)
	if err == nil || !sum.Committed {
		t.Fatalf("killed between the tables: committed=%v, %v", sum.Committed, err)
	}
	next := runAfterExpiry(t, cfg)
	if !slices.Contains(next.Recovered, sum.Run) || next.Records != 0 {
		t.Errorf("next run: recovered %v, loaded %d; want the killed run %s finished and nothing new", next.Recovered, next.Records, sum.Run)
	}
	for _, topic := range []string{"icea", "iceb"} {
		tab := checkIcebergExactlyOnce(t, filepath.Join(dir, "db", topic), events[topic], logEnds(t, env, topic, 2))
		if tab.Summary["tributary.run"] != sum.Run {
			t.Errorf("%s: the current snapshot is run %s's, want the killed run %s's", topic, tab.Summary["tributary.run"], sum.Run)
		}
	}
}

// Twenty-four SIGKILLs of `tributary load --table` at random moments, each
// run slowed down at one of the fault points in turn (so that kills land
// inside the write, the table commit and the moves), then a last run:
// every event exactly once in the table, and the last snapshot's offsets
// the end of every partition.
func TestIcebergKillLoop(t *testing.T) {
	const n, kills = 6000, 24
	env := loadertest.Start(t)
	env.CreateTopic(t, "iceloop", 3)
	from := time.Now().UTC().Truncate(time.Hour).Add(-4 * time.Hour)
	events := loadertest.PageViews(0, n, 3, from, 3*time.Hour)
	env.Produce(t, "iceloop", loadertest.Schema(t, "pageview"), events)

	dir := t.TempDir()
	url := "file://" + dir
	rng := rand.New(rand.NewPCG(26, uint64(time.Now().UnixNano())))
	points := slices.Concat(loader.FaultPoints, loader.TableFaultPoints)
	exited := 0
	for i := range kills {
		point := points[i%len(points)]
		t.Setenv("TRIBUTARY_LOAD_DELAY_AT", string(point)+":500ms")
		p := testenv.StartProcess(t, "load", "--brokers", env.Brokers[0], "--registry", env.RegistryURL,
			"--topics", "iceloop", "--warehouse", url, "--table", "db", "--max-records", "400",
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
	cfg := config(env, url, "iceloop")
	cfg.Table = "db"
	last := runAfterExpiry(t, cfg)
	t.Logf("%d kills, %d runs ended first; the last run loaded %d, recovered %v, discarded %v", kills-exited, exited, last.Records, last.Recovered, last.Discarded)
	tab := checkIcebergExactlyOnce(t, filepath.Join(dir, "db", "iceloop"), events, logEnds(t, env, "iceloop", 3))
	t.Logf("%d snapshots", tab.Snapshots)
}
