package loader_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/tributary-io/tributary/audit"
	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/loadertest"
)

// The audit's warehouse tier counts a table load once, also when the run
// was cut short between its two tables' commits: the run that finishes it
// publishes its counts, and the audit reads every event of both topics
// exactly once (no window short, none in excess). Each hour the run
// completed is a tag of the snapshot that completed it.
func TestIcebergAuditCounts(t *testing.T) {
	const n = 1200
	env := loadertest.Start(t)
	topics := []string{"iceauda", "iceaudb"}
	from := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	for _, topic := range topics {
		env.CreateTopic(t, topic, 2)
		env.Produce(t, topic, loadertest.Schema(t, "pageview"), loadertest.PageViews(0, n, 2, from, 4*audit.DefaultWindow))
	}
	dir := t.TempDir()
	cfg := config(env, "file://"+dir, topics...)
	cfg.Table, cfg.Audit, cfg.LockTTL = "db", &loader.AuditConfig{}, 2*time.Second
	crashing := cfg
	seen := 0
	crashing.Fault = func(p loader.FaultPoint) error {
		if p == loader.FaultTableCommit {
			if seen++; seen == 2 {
				return errors.New("killed between the tables")
			}
		}
		return nil
	}
	if sum, err := loader.Run(context.Background(), crashing); err == nil || !sum.Committed {
		t.Fatalf("killed between the tables: committed=%v, %v", sum.Committed, err)
	}
	next := runAfterExpiry(t, cfg)
	if len(next.Recovered) != 1 || next.AuditError != "" {
		t.Fatalf("next run: recovered %v, audit error %q", next.Recovered, next.AuditError)
	}

	st := audit.NewStore()
	if _, err := audit.Load(context.Background(), auditSource(env), time.Time{}, st); err != nil {
		t.Fatal(err)
	}
	rep := st.Report(audit.Options{From: from, To: from.Add(5 * audit.DefaultWindow), Topics: topics})
	received := map[string]int64{}
	for _, r := range rep.Rows {
		if r.Tier == audit.TierWarehouse {
			received[r.Topic] += r.Received
		}
	}
	for _, topic := range topics {
		if received[topic] != n {
			t.Errorf("%s: the warehouse tier received %d events, %d were loaded", topic, received[topic], n)
		}
		tab := pyicebergRead(t, dir+"/db/"+topic)
		for h := range tab.Hours {
			if !slices.Contains(tab.Refs, "hour-"+h) {
				t.Errorf("%s: hour %s is complete but has no tag (refs %v)", topic, h, tab.Refs)
			}
		}
	}
}
