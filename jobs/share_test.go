package jobs_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/jobs"
	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/loadertest"
	"github.com/tributary-io/tributary/loader/warehouse"
)

// A job with a share: section runs in two daemons at once (no ErrBusy):
// each run takes one of the two topics, and every record is loaded once.
func TestSharedJobRunsInTwoDaemonsAtOnce(t *testing.T) {
	env := loadertest.Start(t)
	events := map[string][]loadertest.Event{}
	for _, topic := range []string{"sha", "shb"} {
		env.CreateTopic(t, topic, 2)
		events[topic] = loadertest.PageViews(0, 600, 2, time.Now().UTC().Add(-3*time.Hour), time.Hour)
		env.Produce(t, topic, loadertest.Schema(t, "pageview"), events[topic])
	}
	url := "file://" + t.TempDir()
	spec := writeSpec(t, t.TempDir(), "shared", fmt.Sprintf(`
brokers: [%s]
registry: %s
topics: [sha, shb]
warehouse: %s
schedule: every 15m
share: {max_topics: 1}
retry: {attempts: 0}
`, env.Brokers[0], env.RegistryURL, url))
	// Each run waits before its commit, so the two overlap.
	slow := func(p loader.FaultPoint) error {
		if p == loader.FaultBeforeCommit {
			time.Sleep(700 * time.Millisecond)
		}
		return nil
	}
	var wg sync.WaitGroup
	entries := make([]*jobs.Entry, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Go(func() {
			r := &jobs.Runner{StateDir: t.TempDir(), Fault: slow, Holder: fmt.Sprintf("daemon %d", i)}
			entries[i], errs[i] = r.RunOnce(context.Background(), spec, "manual", 1)
		})
	}
	wg.Wait()
	var total int64
	for i := range 2 {
		if errs[i] != nil {
			t.Fatalf("daemon %d: %v", i, errs[i])
		}
		total += entries[i].Records
	}
	// Each took a topic, unless one ran before the other had begun.
	if total != 1200 && total != 600 {
		t.Errorf("the two runs loaded %d records, want the 1200 of both topics (or 600 if one found the other's topic held)", total)
	}
	w, err := warehouse.Open(url)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r := &jobs.Runner{StateDir: t.TempDir()}
	if _, err := r.RunOnce(context.Background(), spec, "manual", 1); err != nil {
		t.Fatal(err)
	}
	c := loadertest.Read(t, w)
	for topic, evs := range events {
		loadertest.CheckExactlyOnce(t, c, topic, evs)
	}
}
