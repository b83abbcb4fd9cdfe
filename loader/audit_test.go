package loader_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/audit"
	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/loadertest"
)

// With Config.Audit, a committed run publishes the warehouse tier's counts:
// per window of header time and server exactly what it wrote (the same as
// a scan of the warehouse finds), so the reconciler shows the tier 100 %
// complete against the producers' counts. Runs that fail before their
// commit (too many undecodable records; a crash just before the commit
// rename) publish nothing, and their records are counted once, by the run
// that commits them. Records sent to _errors are counted malformed.
func TestAuditWarehouseTier(t *testing.T) {
	const n = 3000
	env := loadertest.Start(t)
	env.CreateTopic(t, "pageviews", 3)
	// Four windows that closed (with the grace period) well before now.
	from := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	events := loadertest.PageViews(0, n, 3, from, 4*audit.DefaultWindow)
	env.Produce(t, "pageviews", loadertest.Schema(t, "pageview"), events)
	env.ProduceRaw(t, "pageviews", 1, []byte("not an envelope"), []byte{1, 2, 3})

	want := audit.NewCounts()
	for _, ev := range events {
		h := ev.Value["header"].(map[string]any)
		at := h["time"].(time.Time)
		want.Events[audit.Key{Topic: "pageviews", Window: audit.WindowStart(at, audit.DefaultWindow), Server: h["server"].(string)}]++
	}
	windows := want.Windows()
	if len(windows) != 4 {
		t.Fatalf("events span windows %v, want 4", windows)
	}

	url := "file://" + t.TempDir()
	cfg := config(env, url, "pageviews")
	cfg.Audit = &loader.AuditConfig{}

	// Two runs that fail before their commit.
	failing := cfg
	failing.MaxErrors = 0
	if sum, err := loader.Run(context.Background(), failing); err == nil || sum.Committed {
		t.Fatalf("run with more undecodable records than allowed: committed %v, err %v", sum.Committed, err)
	}
	crashing := cfg
	crashing.MaxErrors = 10
	crashing.Fault = func(p loader.FaultPoint) error {
		if p == loader.FaultBeforeCommit {
			return errors.New("killed")
		}
		return nil
	}
	if sum, err := loader.Run(context.Background(), crashing); err == nil || sum.Committed {
		t.Fatalf("run killed before its commit: committed %v, err %v", sum.Committed, err)
	}
	if _, err := audit.Load(context.Background(), auditSource(env), time.Time{}, audit.NewStore()); !errors.Is(err, audit.ErrNoAuditTopic) {
		t.Fatalf("after two uncommitted runs, loading the audit topic: %v; want %v (nothing published)", err, audit.ErrNoAuditTopic)
	}

	// The producers' counts: the baseline.
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.Brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	prod, err := audit.NewPublisher(audit.PublisherConfig{Client: cl, Registry: env.Registry, Tier: audit.TierProducer, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	for k, c := range want.Events {
		prod.CountN(k.Topic, k.Window, k.Server, c)
	}
	if err := prod.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	cfg.MaxErrors = 10
	time.Sleep(cfg.LockTTL) // the crashed run's locks expire
	sum := run(t, cfg)
	if sum.Records != n || sum.Errors != 2 || sum.AuditError != "" {
		t.Fatalf("run: %d records, %d errors, audit error %q; want %d, 2, none", sum.Records, sum.Errors, sum.AuditError, n)
	}
	// A run with nothing new publishes no counts either.
	if sum := run(t, cfg); sum.Records != 0 || sum.AuditError != "" {
		t.Fatalf("second run: %d records, audit error %q", sum.Records, sum.AuditError)
	}

	// What the run wrote, counted independently from the files.
	scanned, _, err := audit.ScanWarehouse(context.Background(), audit.WarehouseScanConfig{FS: openWarehouse(t, url), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if len(scanned.Events) != len(want.Events) {
		t.Errorf("the warehouse holds %d (window, server) counts, want %d", len(scanned.Events), len(want.Events))
	}
	for k, c := range want.Events {
		if scanned.Events[k] != c || scanned.Distinct[k] != c {
			t.Errorf("warehouse holds %d events (%d distinct) of %v, want %d", scanned.Events[k], scanned.Distinct[k], k, c)
		}
	}

	st := audit.NewStore()
	if _, err := audit.Load(context.Background(), auditSource(env), time.Time{}, st); err != nil {
		t.Fatal(err)
	}
	rep := st.Report(audit.Options{From: windows[0], To: windows[len(windows)-1].Add(audit.DefaultWindow), Topics: []string{"pageviews"}})
	var rows int
	var received int64
	for _, r := range rep.Rows {
		if r.Tier != audit.TierWarehouse {
			continue
		}
		rows++
		received += r.Received
		var inWindow int64
		for k, c := range scanned.Events {
			if k.Window.Equal(r.WindowStart) {
				inWindow += c
			}
		}
		if r.Received != inWindow || r.Produced != inWindow || r.Missing != 0 || r.Excess != 0 ||
			r.Completeness != 100 || r.Status != audit.StatusOK {
			t.Errorf("window %s: %+v; want %d produced and received, 100 %% complete", r.WindowStart.Format(time.TimeOnly), r, inWindow)
		}
		// The events were read two to three hours after their header
		// time: p50 and p99 are the top of the power-of-two bucket of
		// milliseconds holding that, 2^23 ms (2 h 20 min) or 2^24.
		if ago := time.Since(r.WindowStart); r.LatencyP50 < ago.Milliseconds()/2 || r.LatencyP99 > 2*(ago+audit.DefaultWindow).Milliseconds() || r.LatencyP99 < r.LatencyP50 {
			t.Errorf("window %s: the warehouse tier's latency p50 %d ms, p99 %d ms; want about %v", r.WindowStart.Format(time.TimeOnly), r.LatencyP50, r.LatencyP99, ago.Round(time.Minute))
		}
	}
	if rows != len(windows) || received != n {
		t.Errorf("warehouse tier: %d rows, %d events received; want %d rows, %d events", rows, received, len(windows), n)
	}
	if len(rep.Lost) > 0 {
		t.Errorf("monitoring events lost: %+v", rep.Lost)
	}

	// The two undecodable records, counted by when they were seen.
	now := audit.WindowStart(time.Now(), audit.DefaultWindow)
	rep = st.Report(audit.Options{From: now.Add(-audit.DefaultWindow), To: now.Add(2 * audit.DefaultWindow), Topics: []string{"pageviews"}})
	var malformed int64
	for _, r := range rep.Rows {
		if r.Tier == audit.TierWarehouse {
			malformed += r.Malformed
		}
	}
	if malformed != 2 {
		t.Errorf("warehouse tier counted %d malformed records, want 2; rows %+v", malformed, rep.Rows)
	}
}

func auditSource(env *loadertest.Env) audit.Source {
	return audit.Source{Brokers: env.Brokers, Registry: env.Registry, Logger: quiet}
}
