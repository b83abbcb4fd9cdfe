package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"bytes"
	"github.com/parquet-go/parquet-go"
	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/jobs"
	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/loadertest"
	"github.com/tributary-io/tributary/loader/warehouse"
)

// writeSpec writes a job spec into dir and returns it parsed.
func writeSpec(t *testing.T, dir, name, body string) *jobs.Spec {
	t.Helper()
	p := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(p)
	s, err := jobs.ParseSpec(p, data)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRunKeepsHistory(t *testing.T) {
	env := loadertest.Start(t)
	env.CreateTopic(t, "views", 2)
	events := loadertest.PageViews(0, 1000, 2, time.Now().UTC().Add(-3*time.Hour), time.Hour)
	env.Produce(t, "views", loadertest.Schema(t, "pageview"), events)
	url := "file://" + t.TempDir()
	spec := writeSpec(t, t.TempDir(), "views", fmt.Sprintf(`
brokers: [%s]
registry: %s
topics: [views]
warehouse: %s
schedule: every 15m
`, env.Brokers[0], env.RegistryURL, url))
	r := &jobs.Runner{StateDir: t.TempDir()}
	entries, err := r.Run(context.Background(), spec, "manual")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Outcome != jobs.Committed || entries[0].Records != 1000 {
		t.Fatalf("attempts: %+v", entries)
	}
	hist, err := jobs.History(spec, r.StateDir, 0)
	if err != nil || len(hist) != 1 {
		t.Fatalf("history: %v, %v", hist, err)
	}
	e := hist[0]
	var offsets []string
	for _, p := range e.Partitions {
		offsets = append(offsets, fmt.Sprintf("%s/%d %d-%d", p.Topic, p.Partition, p.From, p.To))
	}
	if e.Run == "" || e.Finished.Before(e.Started) || e.Bytes == 0 || e.Files == 0 ||
		fmt.Sprint(offsets) != "[views/0 0-500 views/1 0-500]" {
		t.Errorf("history entry lacks what the run did: %+v (offsets %v)", e, offsets)
	}
}

// A failed run is retried with exponential backoff; every attempt is in
// the history, with its error.
func TestRetryWithBackoff(t *testing.T) {
	dead := testenv.FreeAddr(t)
	spec := writeSpec(t, t.TempDir(), "doomed", fmt.Sprintf(`
brokers: [%s]
registry: http://%s
topics: [views]
warehouse: file://%s
schedule: every 15m
retry:
  attempts: 2
  backoff: 100ms
`, dead, dead, t.TempDir()))
	r := &jobs.Runner{StateDir: t.TempDir()}
	entries, err := r.Run(context.Background(), spec, "manual")
	if err == nil || !strings.Contains(err.Error(), "cannot reach the brokers") {
		t.Fatalf("run against a dead broker: %v", err)
	}
	if len(entries) != 3 {
		t.Fatalf("%d attempts, want 1 + 2 retries", len(entries))
	}
	gap1 := entries[1].Started.Sub(entries[0].Finished)
	gap2 := entries[2].Started.Sub(entries[1].Finished)
	if gap1 < 100*time.Millisecond || gap2 < 200*time.Millisecond {
		t.Errorf("waits between attempts %v and %v, want at least 100ms then 200ms", gap1, gap2)
	}
	hist, _ := jobs.History(spec, r.StateDir, 0)
	if len(hist) != 3 || hist[2].Outcome != jobs.Failed || !strings.Contains(hist[2].Error, "cannot reach the brokers") || hist[2].Attempt != 3 {
		t.Fatalf("history: %+v", hist)
	}
}

// An attempt that cannot reach its warehouse is recorded locally.
func TestUnreachableWarehouseHistory(t *testing.T) {
	dead := testenv.FreeAddr(t)
	spec := writeSpec(t, t.TempDir(), "nowhere", fmt.Sprintf(`
brokers: [%s]
registry: http://%s
topics: [views]
warehouse: hdfs://%s/data
schedule: every 15m
retry: {attempts: 0}
`, dead, dead, dead))
	r := &jobs.Runner{StateDir: t.TempDir()}
	_, err := r.Run(context.Background(), spec, "manual")
	if err == nil || !strings.Contains(err.Error(), "cannot reach the HDFS NameNode") {
		t.Fatalf("run: %v", err)
	}
	hist, herr := jobs.History(spec, r.StateDir, 0)
	if herr == nil || len(hist) != 1 || hist[0].Outcome != jobs.Failed {
		t.Fatalf("history: %+v (warehouse error %v)", hist, herr)
	}
}

// Two daemons run one job: their runs never overlap, and when the one
// holding the job is killed (SIGKILL), the other takes the job over once
// the lock's lease has run out. In the end every event is in the
// warehouse exactly once.
func TestTwoDaemonsOneJob(t *testing.T) {
	env := loadertest.Start(t)
	env.CreateTopic(t, "shared", 2)
	dir, state := t.TempDir(), t.TempDir()
	whDir := t.TempDir()
	url := "file://" + whDir
	const ttl = 2 * time.Second
	spec := writeSpec(t, dir, "shared", fmt.Sprintf(`
brokers: [%s]
registry: %s
topics: [shared]
warehouse: %s
schedule: every 1s
lock_ttl: 2s
retry: {attempts: 0}
`, env.Brokers[0], env.RegistryURL, url))
	// Every run waits 700ms before committing: runs are long enough to
	// overlap if the lock let them.
	t.Setenv("TRIBUTARY_LOAD_DELAY_AT", "before-commit:700ms")
	daemons := []*testenv.Process{
		testenv.StartProcess(t, "jobs", "daemon", "--dir", dir, "--state-dir", state),
		testenv.StartProcess(t, "jobs", "daemon", "--dir", dir, "--state-dir", state),
	}
	os.Unsetenv("TRIBUTARY_LOAD_DELAY_AT")

	var produced []loadertest.Event
	produce := func() {
		evs := loadertest.PageViews(len(produced), 200, 2, time.Now().UTC().Add(-2*time.Hour), time.Hour)
		env.Produce(t, "shared", loadertest.Schema(t, "pageview"), evs)
		produced = append(produced, evs...)
	}
	for range 8 {
		produce()
		time.Sleep(500 * time.Millisecond)
	}

	// Kill whichever daemon holds the job right now.
	w := openFS(t, url)
	var holder *warehouse.LockInfo
	testenv.Eventually(t, 20*time.Second, "a daemon takes the job's lock", func() bool {
		holder, _ = warehouse.ReadLock(w, "job-shared", ttl)
		return holder != nil
	})
	victim := slices.IndexFunc(daemons, func(p *testenv.Process) bool { return p.Cmd.Process.Pid == holder.PID })
	if victim < 0 {
		t.Fatalf("the lock is held by pid %d, not one of the daemons", holder.PID)
	}
	daemons[victim].Kill()
	killed := time.Now()
	survivor := daemons[1-victim]
	t.Logf("killed daemon pid %d holding the job (lease until %s)", holder.PID, holder.Expires.Format("15:04:05.000"))

	produce()
	var takeover *jobs.Entry
	testenv.Eventuallyf(t, 30*time.Second, func() (bool, string) {
		hist, _ := jobs.History(spec, state, 0)
		for _, e := range hist {
			if e.PID == survivor.Cmd.Process.Pid && e.Started.After(killed) && e.Outcome == jobs.Committed {
				takeover = e
				return true, ""
			}
		}
		return false, "the surviving daemon did not take the job over:\n" + survivor.Output.String()
	})
	if takeover.Started.Before(holder.Expires) {
		t.Errorf("the survivor started at %s, before the dead holder's lease ran out at %s", takeover.Started, holder.Expires)
	}
	if err := survivor.Stop(10 * time.Second); err != nil {
		t.Logf("stopping the survivor: %v", err)
	}

	hist, err := jobs.History(spec, state, 0)
	if err != nil {
		t.Fatal(err)
	}
	pids := map[int]int{}
	sort.Slice(hist, func(i, j int) bool { return hist[i].Started.Before(hist[j].Started) })
	for i, e := range hist {
		pids[e.PID]++
		if i > 0 && e.Started.Before(hist[i-1].Finished) {
			t.Errorf("runs overlap: %s (pid %d) %s-%s and %s (pid %d) %s-%s", hist[i-1].Run, hist[i-1].PID,
				hist[i-1].Started.Format("15:04:05.000"), hist[i-1].Finished.Format("15:04:05.000"),
				e.Run, e.PID, e.Started.Format("15:04:05.000"), e.Finished.Format("15:04:05.000"))
		}
	}
	t.Logf("%d runs: by pid %v", len(hist), pids)

	// What the stopped daemons left is loaded by one more run.
	cfg := spec.LoadConfig()
	cfg.Logger = nil
	for deadline := time.Now().Add(3*ttl + 5*time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, err := loader.Run(context.Background(), cfg)
		var locked *warehouse.LockedError
		if errors.As(err, &locked) && time.Now().Before(deadline) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		break
	}
	loadertest.CheckExactlyOnce(t, loadertest.Read(t, w), "shared", produced)
}

func openFS(t *testing.T, url string) warehouse.FS {
	t.Helper()
	w, err := warehouse.Open(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// A job whose hdfs: section names a Kerberized, highly available cluster
// (its Hadoop configuration, a keytab beside the spec) loads there, and
// its history is read back from there.
func TestJobOnKerberizedHDFS(t *testing.T) {
	env := loadertest.Start(t)
	env.CreateTopic(t, "secured", 2)
	events := loadertest.PageViews(0, 1000, 2, time.Now().UTC().Add(-3*time.Hour), time.Hour)
	env.Produce(t, "secured", loadertest.Schema(t, "pageview"), events)
	c := testenv.StartKerberizedHDFS(t)
	dir := t.TempDir()
	keytab, err := os.ReadFile(c.Keytab)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "etl.keytab"), keytab, 0o600); err != nil {
		t.Fatal(err)
	}
	spec := writeSpec(t, dir, "secured", fmt.Sprintf(`
brokers: [%s]
registry: %s
topics: [secured]
warehouse: %s
schedule: every 15m
hdfs:
  hadoop_conf: %s
  principal: tributary@%s
  keytab: etl.keytab
  krb5_conf: %s
`, env.Brokers[0], env.RegistryURL, c.Warehouse(t), c.ConfDir, c.Realm, c.Krb5Conf))
	r := &jobs.Runner{StateDir: t.TempDir()}
	entries, err := r.Run(context.Background(), spec, "manual")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Outcome != jobs.Committed || entries[0].Records != 1000 {
		t.Fatalf("attempts: %+v", entries)
	}
	hist, err := jobs.History(spec, r.StateDir, 0)
	if err != nil || len(hist) != 1 || hist[0].Records != 1000 {
		t.Fatalf("history: %v, %v", hist, err)
	}
}

// files.compact: the run that marks hours complete merges their Parquet
// files, one file an hour, every record kept.
func TestRunCompactsMarkedHours(t *testing.T) {
	env := loadertest.Start(t)
	env.CreateTopic(t, "pqviews", 3)
	events := loadertest.PageViews(0, 900, 3, time.Now().UTC().Truncate(time.Hour).Add(-4*time.Hour), 2*time.Hour)
	env.Produce(t, "pqviews", loadertest.Schema(t, "pageview"), events)
	dir := t.TempDir()
	spec := writeSpec(t, t.TempDir(), "pqviews", fmt.Sprintf(`
brokers: [%s]
registry: %s
topics: [pqviews]
warehouse: file://%s
schedule: every 15m
files:
  format: parquet
  max_records: 50
  compact: true
`, env.Brokers[0], env.RegistryURL, dir))
	r := &jobs.Runner{StateDir: t.TempDir()}
	entries, err := r.Run(context.Background(), spec, "manual")
	if err != nil || len(entries) != 1 || entries[0].Records != 900 {
		t.Fatalf("attempts %+v: %v", entries, err)
	}
	perHour := map[string]int{}
	var rows int64
	filepath.WalkDir(filepath.Join(dir, "pqviews"), func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".parquet") {
			perHour[filepath.Dir(p)]++
			b, _ := os.ReadFile(p)
			f, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
			if err != nil {
				t.Fatal(err)
			}
			rows += f.NumRows()
		}
		return nil
	})
	if len(perHour) != 2 || rows != 900 {
		t.Errorf("%d rows in hours %v, want 900 in two hours", rows, perHour)
	}
	for h, n := range perHour {
		if n != 1 {
			t.Errorf("%s has %d files after the job, want 1", h, n)
		}
	}
}
