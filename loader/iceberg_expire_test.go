package loader_test

import (
	"context"
	"encoding/json"
	"errors"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/loadertest"
	"github.com/tributary-io/tributary/loader/warehouse"
)

// tableMeta is what the expiry tests read of a table's current version.
type tableMeta struct {
	Refs map[string]struct {
		ID int64 `json:"snapshot-id"`
	} `json:"refs"`
	Snapshots []struct {
		ID   int64  `json:"snapshot-id"`
		List string `json:"manifest-list"`
	} `json:"snapshots"`
}

func readTableMeta(t *testing.T, tableURL string) tableMeta {
	t.Helper()
	w := openWarehouse(t, tableURL)
	b, err := warehouse.ReadFile(w, "metadata/"+latestVersion(t, tableURL))
	if err != nil {
		t.Fatal(err)
	}
	var md tableMeta
	if err := json.Unmarshal(b, &md); err != nil {
		t.Fatal(err)
	}
	return md
}

// expiryTable loads a table in four snapshots: two appends, a compaction
// of every hour (a replace snapshot whose manifest lists the appends'
// files as deleted), and one more append. Expiring all but the last two
// expires the two appends and leaves every record in the table.
func expiryTable(t *testing.T, env *loadertest.Env, url, topic string) (events []loadertest.Event, cfg loader.Config, before tableMeta, replaced []string) {
	t.Helper()
	const n = 3000
	env.CreateTopic(t, topic, 2)
	from := time.Now().UTC().Truncate(time.Hour).Add(-5 * time.Hour)
	events = loadertest.PageViews(0, n, 2, from, 3*time.Hour)
	env.Produce(t, topic, loadertest.Schema(t, "pageview"), events[:2*n/3])
	cfg = config(env, url, topic)
	cfg.Table, cfg.FileMaxRecords, cfg.LockTTL = "db", 200, 2*time.Second
	for range 2 {
		cfg.MaxRecords = n / 3
		run(t, cfg)
	}
	table := tableAt(url, "db", topic)
	replaced = pyicebergRead(t, table).Files
	hours := []time.Time{from, from.Add(time.Hour), from.Add(2 * time.Hour)}
	if _, err := loader.Compact(context.Background(), loader.CompactConfig{Warehouse: url, Topic: topic, Table: "db", Hours: hours, LockTTL: 2 * time.Second, Logger: quiet}); err != nil {
		t.Fatal(err)
	}
	env.Produce(t, topic, loadertest.Schema(t, "pageview"), events[2*n/3:])
	cfg.MaxRecords = 0
	run(t, cfg)
	before = readTableMeta(t, table)
	if len(before.Snapshots) != 4 {
		t.Fatalf("the table has %d snapshots, want 4", len(before.Snapshots))
	}
	return events, cfg, before, replaced
}

// checkExpired checks a table after its two oldest snapshots expired:
// every record once (pyiceberg), two snapshots, no file of the table that
// no snapshot names (the replaced files and the expired snapshots'
// manifests and lists are gone), no plan left, every tag kept and naming
// a retained snapshot, and a next load with nothing to do.
func checkExpired(t *testing.T, env *loadertest.Env, cfg loader.Config, table string, events []loadertest.Event, before tableMeta, replaced []string) {
	t.Helper()
	tab := checkIcebergExactlyOnce(t, table, events, logEnds(t, env, cfg.Topics[0], 2))
	if tab.Snapshots != 2 {
		t.Errorf("%d snapshots after the expiry, want 2", tab.Snapshots)
	}
	after := readTableMeta(t, table)
	kept := map[int64]bool{}
	for _, s := range after.Snapshots {
		kept[s.ID] = true
	}
	for name := range before.Refs {
		if ref, ok := after.Refs[name]; !ok || !kept[ref.ID] {
			t.Errorf("ref %s: %v after the expiry, want it kept on a retained snapshot", name, ref)
		}
	}
	w := openWarehouse(t, table)
	root := strings.TrimSuffix(w.String(), "/") + "/"
	gone := slices.Clone(replaced)
	for _, s := range before.Snapshots[:2] {
		gone = append(gone, s.List)
	}
	for _, f := range gone {
		if ok, err := warehouse.Exists(w, strings.TrimPrefix(f, root)); err != nil || ok {
			t.Errorf("%s is still there (%v) after the expiry", f, err)
		}
	}
	infos, err := w.ReadDir("metadata")
	if err != nil {
		t.Fatal(err)
	}
	for _, fi := range infos {
		if strings.HasSuffix(fi.Name(), ".plan.json") {
			t.Errorf("the expiry's plan %s is left", fi.Name())
		}
	}
	if sum := run(t, cfg); sum.Records != 0 {
		t.Errorf("a load after the expiry loaded %d records, want none: it must resume where the table stands", sum.Records)
	}
}

func expire(t *testing.T, c loader.ExpireConfig) (*loader.Expired, error) {
	t.Helper()
	deadline := time.Now().Add(3*c.LockTTL + 10*time.Second)
	for {
		out, err := loader.ExpireSnapshots(context.Background(), c)
		var locked *warehouse.LockedError
		if errors.As(err, &locked) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		return out, err
	}
}

// Expiring all but the two newest snapshots of a table that was appended
// to, compacted and appended to again: the two oldest go, with the files
// only they named (the files compaction replaced, their manifests and
// lists); every file of the retained snapshots stays, pyiceberg reads
// every record once, the hour tags stay on retained snapshots, and loads
// go on from where the table stands.
func TestIcebergExpireSnapshots(t *testing.T) {
	env := loadertest.Start(t)
	url := "file://" + t.TempDir()
	events, cfg, before, replaced := expiryTable(t, env, url, "iceexp")
	c := loader.ExpireConfig{Warehouse: url, Table: "db", Topic: "iceexp", RetainLast: 2, LockTTL: 2 * time.Second, Logger: quiet}
	young := c
	young.OlderThan = time.Hour
	if out, err := expire(t, young); err != nil || len(out.Snapshots) != 0 {
		t.Fatalf("expiring snapshots older than an hour: %+v, %v; want nothing expired", out, err)
	}
	out, err := expire(t, c)
	if err != nil {
		t.Fatal(err)
	}
	want := []int64{before.Snapshots[0].ID, before.Snapshots[1].ID}
	if !slices.Equal(out.Snapshots, want) || out.DataFiles != len(replaced) || out.Retained != 2 {
		t.Errorf("expired %+v; want snapshots %v, the %d files compaction replaced, 2 retained", out, want, len(replaced))
	}
	t.Logf("expired %+v", out)
	checkExpired(t, env, cfg, tableAt(url, "db", "iceexp"), events, before, replaced)
	if out, err := expire(t, c); err != nil || len(out.Snapshots) != 0 || out.DataFiles+out.MetaFiles != 0 {
		t.Errorf("a second expiry: %+v, %v; want nothing to do", out, err)
	}
}

// An expiry killed at each of its points, then run again: the table reads
// whole (every record once) right after the kill, and after the second
// expiry it is as if the first had not been killed: what the killed one
// left to delete is deleted, nothing a retained snapshot names is.
func TestIcebergExpireCrashAtEachPoint(t *testing.T) {
	env := loadertest.Start(t)
	for i, point := range loader.ExpireFaultPoints {
		t.Run(string(point), func(t *testing.T) {
			url := "file://" + t.TempDir()
			topic := "iceexpcrash" + string(rune('a'+i))
			events, cfg, before, replaced := expiryTable(t, env, url, topic)
			c := loader.ExpireConfig{Warehouse: url, Table: "db", Topic: topic, RetainLast: 2, LockTTL: 2 * time.Second, Logger: quiet}
			killed := c
			killed.Fault = crashAt(point)
			if _, err := loader.ExpireSnapshots(context.Background(), killed); err == nil {
				t.Fatalf("the fault at %s did not stop the expiry", point)
			}
			table := tableAt(url, "db", topic)
			tab := pyicebergRead(t, table)
			if len(tab.GUIDs) != len(events) {
				t.Errorf("killed at %s: pyiceberg reads %d records, want %d", point, len(tab.GUIDs), len(events))
			}
			out, err := expire(t, c)
			if err != nil {
				t.Fatal(err)
			}
			if point != loader.ExpireBeforeCommit && (out.Finished == 0 || len(out.Snapshots) != 0) {
				t.Errorf("after a kill at %s: %+v; want the killed expiry's deletions finished and nothing more to expire", point, out)
			}
			t.Logf("the next expiry: %+v", out)
			checkExpired(t, env, cfg, table, events, before, replaced)
		})
	}
}

// tributary expire on an S3 warehouse, as an operator runs it.
func TestIcebergExpireS3CLI(t *testing.T) {
	env := loadertest.Start(t)
	url := testenv.S3Warehouse(t)
	events, cfg, before, replaced := expiryTable(t, env, url, "iceexps3")
	p := testenv.StartProcess(t, "expire", "--warehouse", url, "--table", "db", "--topic", "iceexps3",
		"--older-than", "0s", "--retain-last", "2", "--json")
	<-p.Done()
	if code := p.Cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("tributary expire exited %d:\n%s", code, p.Output.String())
	}
	var out loader.Expired
	text := p.Output.String()
	if err := json.Unmarshal([]byte(text[max(0, strings.Index(text, "{\n  \"table\"")):]), &out); err != nil {
		t.Fatalf("tributary expire --json printed %q: %v", text, err)
	}
	if len(out.Snapshots) != 2 || out.DataFiles != len(replaced) || out.Table != path.Join("db", "iceexps3") {
		t.Errorf("tributary expire: %+v; want 2 snapshots and %d data files", out, len(replaced))
	}
	checkExpired(t, env, cfg, tableAt(url, "db", "iceexps3"), events, before, replaced)
}

// A load that expires its table's old snapshots after each run
// (Config.Expire, tributary load --expire-retain-last): the table never
// holds more snapshots than asked, every record stays in it once, and no
// file of it is left that no snapshot names.
func TestIcebergLoadExpires(t *testing.T) {
	const n = 2000
	env := loadertest.Start(t)
	env.CreateTopic(t, "iceloadexp", 2)
	from := time.Now().UTC().Truncate(time.Hour).Add(-4 * time.Hour)
	events := loadertest.PageViews(0, n, 2, from, 3*time.Hour)
	env.Produce(t, "iceloadexp", loadertest.Schema(t, "pageview"), events)
	url := "file://" + t.TempDir()
	table := tableAt(url, "db", "iceloadexp")
	cfg := config(env, url, "iceloadexp")
	cfg.Table, cfg.FileMaxRecords, cfg.MaxRecords = "db", 200, n/4
	cfg.Expire = &loader.ExpirePolicy{RetainLast: 2}
	expired := 0
	for i := range 3 {
		sum := run(t, cfg)
		expired += sum.ExpiredSnapshots
		if got := len(readTableMeta(t, table).Snapshots); got != min(i+1, 2) || sum.ExpireError != "" {
			t.Fatalf("after run %d: %d snapshots (%s), want %d", i+1, got, sum.ExpireError, min(i+1, 2))
		}
	}
	p := testenv.StartProcess(t, "load", "--brokers", env.Brokers[0], "--registry", env.RegistryURL, "--topics", "iceloadexp",
		"--warehouse", url, "--table", "db", "--file-max-records", "200", "--expire-retain-last", "1", "--json", "--quiet")
	<-p.Done()
	var sum loader.Summary
	text := p.Output.String()
	if err := json.Unmarshal([]byte(text[max(0, strings.Index(text, "{")):]), &sum); err != nil || p.Cmd.ProcessState.ExitCode() != 0 {
		t.Fatalf("tributary load --expire-retain-last 1: %v\n%s", err, text)
	}
	expired += sum.ExpiredSnapshots
	if expired != 3 {
		t.Errorf("the runs expired %d snapshots in all, want 3", expired)
	}
	tab := checkIcebergExactlyOnce(t, table, events, logEnds(t, env, "iceloadexp", 2))
	if tab.Snapshots != 1 {
		t.Errorf("%d snapshots after a run with --expire-retain-last 1, want 1", tab.Snapshots)
	}
}
