package loader_test

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/audit"
	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/loadertest"
)

// The "960,000 of 1,000,000": runs killed between their commit and
// their publish left their records in the warehouse but not in the
// warehouse tier, and nothing published them later. Now the counts are in
// the committed manifest: a run killed before it published, and one killed
// after publishing but before marking its counts published, both have them
// published by the next run (the second as a no-op: the reconciler
// already holds its events), and the tier is exactly 100 % in every
// window, with no excess.
func TestAuditCountsCommittedWithTheRun(t *testing.T) {
	env := loadertest.Start(t)
	env.CreateTopic(t, "audited", 3)
	from := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	url := "file://" + t.TempDir()
	cfg := config(env, url, "audited")
	cfg.Audit = &loader.AuditConfig{}

	var all []loadertest.Event
	var killed []string
	for i, point := range []loader.FaultPoint{loader.FaultBeforeAudit, loader.FaultAfterAudit} {
		events := loadertest.PageViews(i*1000, 1000, 3, from, 4*audit.DefaultWindow)
		env.Produce(t, "audited", loadertest.Schema(t, "pageview"), events)
		publishProducerCounts(t, env, "audited", events)
		all = append(all, events...)

		crashing := cfg
		crashing.Fault = crashAt(point)
		sum, err := loader.Run(context.Background(), crashing)
		if err == nil || !sum.Committed {
			t.Fatalf("run killed at %s: committed %v, err %v; want committed and killed", point, sum.Committed, err)
		}
		// The second run publishes the first one's counts as it starts.
		if i == 1 && !slices.Equal(sum.AuditPublished, killed) {
			t.Errorf("the run after one killed before publishing published the counts of %v, want %v", sum.AuditPublished, killed)
		}
		killed = append(killed, sum.Run)
		time.Sleep(cfg.LockTTL) // the killed run's locks expire
	}
	next := runAfterExpiry(t, cfg)
	if next.Records != 0 || next.AuditError != "" || !slices.Equal(next.AuditPublished, killed[1:]) {
		t.Fatalf("next run: %d records, audit error %q, published the counts of %v; want 0, none, the last killed run's %v",
			next.Records, next.AuditError, next.AuditPublished, killed[1:])
	}
	loadertest.CheckExactlyOnce(t, loadertest.Read(t, openWarehouse(t, url)), "audited", all)
	checkWarehouseTier(t, env, "audited", all)
	// Published and marked: a further run publishes nothing again.
	if again := run(t, cfg); len(again.AuditPublished) != 0 {
		t.Errorf("a further run published the counts of %v again", again.AuditPublished)
	}
}

// `tributary load --audit` killed with SIGKILL 21 times, three times at
// each point a run passes (fetching, writing, before and after its commit,
// moving, before publishing its counts and before marking them published),
// with new events before each kill, then run to the end: every event is in
// the warehouse exactly once, and the warehouse tier is exactly 100 % of
// the producers' counts in every window, with no excess.
func TestKillLoopWithAudit(t *testing.T) {
	const perKill = 300
	env := loadertest.Start(t)
	env.CreateTopic(t, "killloop", 4)
	from := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	dir := t.TempDir()
	url := "file://" + dir
	points := slices.Concat(loader.FaultPoints, loader.AuditFaultPoints)
	var all []loadertest.Event
	args := []string{"load", "--brokers", env.Brokers[0], "--registry", env.RegistryURL, "--topics", "killloop",
		"--warehouse", url, "--file-max-records", "40", "--lock-ttl", "1s", "--audit", "--quiet"}
	kills := 0
	for i := range 3 * len(points) {
		point := points[i%len(points)]
		events := loadertest.PageViews(i*perKill, perKill, 4, from, 6*audit.DefaultWindow)
		env.Produce(t, "killloop", loadertest.Schema(t, "pageview"), events)
		publishProducerCounts(t, env, "killloop", events)
		all = append(all, events...)

		p := startLoad(t, string(point), args)
		if !strings.Contains(p.Output.String(), "paused at "+string(point)) {
			t.Fatalf("kill %d: tributary load exited before reaching %s:\n%s", i, point, p.Output.String())
		}
		p.Kill()
		kills++
	}
	p := startLoad(t, "", args)
	if code := p.Cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("the last run exited %d:\n%s", code, p.Output.String())
	}
	t.Logf("%d kills, %d events", kills, len(all))
	loadertest.CheckExactlyOnce(t, loadertest.Read(t, openWarehouse(t, url)), "killloop", all)
	checkWarehouseTier(t, env, "killloop", all)
}

// startLoad runs tributary load with args until it gets the topics' locks
// (those of a killed run expire after --lock-ttl) and gets to point, and
// returns it paused there, or ended with status 0 when point is "" (or
// whatever it did last, at the deadline).
func startLoad(t *testing.T, point string, args []string) *testenv.Process {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if point != "" {
			os.Setenv("TRIBUTARY_LOAD_PAUSE_AT", point)
		}
		p := testenv.StartProcess(t, args...)
		os.Unsetenv("TRIBUTARY_LOAD_PAUSE_AT")
		for !strings.Contains(p.Output.String(), "paused at ") {
			select {
			case <-p.Done():
			case <-time.After(20 * time.Millisecond):
				if time.Now().After(deadline) {
					t.Fatalf("tributary load did not reach %q in time:\n%s", point, p.Output.String())
				}
				continue
			}
			break
		}
		out := p.Output.String()
		switch {
		case strings.Contains(out, "paused at "), time.Now().After(deadline):
			return p
		case point == "" && p.Cmd.ProcessState.ExitCode() == 0:
			return p
		case !strings.Contains(out, "is held by"):
			// A run may also fail before the point on a loaded machine
			// (its lease of 1 s not renewed in time): one more crash
			// the warehouse must survive; the point is tried again.
			t.Logf("tributary load ended before %q; starting it again:\n%s", point, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// publishProducerCounts publishes the producers' counts of events: the
// baseline the warehouse tier is compared with.
func publishProducerCounts(t *testing.T, env *loadertest.Env, topic string, events []loadertest.Event) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.Brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	prod, err := audit.NewPublisher(audit.PublisherConfig{Client: cl, Registry: env.Registry, Tier: audit.TierProducer, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events {
		h := ev.Value["header"].(map[string]any)
		prod.Count(topic, h["time"].(time.Time), h["server"].(string))
	}
	if err := prod.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// checkWarehouseTier fails the test unless, in every window of events,
// the warehouse tier holds exactly what the producers counted: no event
// missing, none in excess, no monitoring event lost.
func checkWarehouseTier(t *testing.T, env *loadertest.Env, topic string, events []loadertest.Event) {
	t.Helper()
	perWindow := map[time.Time]int64{}
	for _, ev := range events {
		at := ev.Value["header"].(map[string]any)["time"].(time.Time)
		perWindow[audit.WindowStart(at, audit.DefaultWindow)]++
	}
	st := audit.NewStore()
	if _, err := audit.Load(context.Background(), auditSource(env), time.Time{}, st); err != nil {
		t.Fatal(err)
	}
	var lo, hi time.Time
	for w := range perWindow {
		if lo.IsZero() || w.Before(lo) {
			lo = w
		}
		if w.After(hi) {
			hi = w
		}
	}
	rep := st.Report(audit.Options{From: lo, To: hi.Add(audit.DefaultWindow), Topics: []string{topic}})
	rows := 0
	for _, r := range rep.Rows {
		if r.Tier != audit.TierWarehouse {
			continue
		}
		rows++
		want := perWindow[r.WindowStart]
		if r.Produced != want || r.Received != want || r.Missing != 0 || r.Excess != 0 || r.Completeness != 100 || r.Status != audit.StatusOK {
			t.Errorf("window %s: %+v; want %d produced and received, exactly 100 %%", r.WindowStart.Format(time.TimeOnly), r, want)
		}
	}
	if rows != len(perWindow) {
		t.Errorf("warehouse tier: %d rows, want %d", rows, len(perWindow))
	}
	if len(rep.Lost) > 0 {
		t.Errorf("monitoring events lost: %+v", rep.Lost)
	}
}

// `tributary audit republish` publishes, without loading, the counts of a
// committed run that was killed before publishing them; with --all it
// publishes them again, which the reconciler counts once.
func TestAuditRepublish(t *testing.T) {
	env := loadertest.Start(t)
	env.CreateTopic(t, "republished", 2)
	from := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	events := loadertest.PageViews(0, 500, 2, from, 3*audit.DefaultWindow)
	env.Produce(t, "republished", loadertest.Schema(t, "pageview"), events)
	publishProducerCounts(t, env, "republished", events)
	url := "file://" + t.TempDir()
	cfg := config(env, url, "republished")
	cfg.Audit = &loader.AuditConfig{}
	cfg.Fault = crashAt(loader.FaultBeforeAudit)
	sum, err := loader.Run(context.Background(), cfg)
	if err == nil || !sum.Committed {
		t.Fatalf("run killed before publishing: committed %v, err %v", sum.Committed, err)
	}

	args := []string{"audit", "republish", "--warehouse", url, "--brokers", env.Brokers[0], "--registry", env.RegistryURL}
	for _, extra := range [][]string{nil, {"--all"}} {
		out, err := exec.Command(testenv.Binary(t), append(args, extra...)...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "published the counts of run "+sum.Run) {
			t.Fatalf("tributary %v: %v\n%s", append(args, extra...), err, out)
		}
		checkWarehouseTier(t, env, "republished", events)
	}
}

// A run whose audit brokers accept connections and never answer still
// commits, within its audit timeout, saying its counts were not published;
// they are in its manifest, and the next run with reachable audit brokers
// publishes them.
func TestAuditBrokersHang(t *testing.T) {
	env := loadertest.Start(t)
	env.CreateTopic(t, "hung", 2)
	from := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	events := loadertest.PageViews(0, 400, 2, from, 2*audit.DefaultWindow)
	env.Produce(t, "hung", loadertest.Schema(t, "pageview"), events)
	publishProducerCounts(t, env, "hung", events)
	url := "file://" + t.TempDir()

	cfg := config(env, url, "hung")
	cfg.Audit = &loader.AuditConfig{Brokers: []string{testenv.HangingBroker(t)}, Timeout: 2 * time.Second}
	start := time.Now()
	sum := run(t, cfg)
	if took := time.Since(start); sum.Records != 400 || sum.AuditError == "" || took > 15*time.Second {
		t.Fatalf("run with hanging audit brokers: %d records, audit error %q, after %v; want 400 committed, the error, within the timeouts",
			sum.Records, sum.AuditError, took.Round(time.Millisecond))
	}
	cfg.Audit = &loader.AuditConfig{}
	if next := run(t, cfg); !slices.Equal(next.AuditPublished, []string{sum.Run}) {
		t.Fatalf("next run published the counts of %v, want the run %s", next.AuditPublished, sum.Run)
	}
	checkWarehouseTier(t, env, "hung", events)
}
