package jobs_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tributary-io/tributary/jobs"
	"github.com/tributary-io/tributary/loader/loadertest"
)

// A committed run against a real broker, registry and warehouse shows in
// the job metrics: one committed attempt, its records, and the topic's
// last commit time.
func TestJobMetrics(t *testing.T) {
	env := loadertest.Start(t)
	env.CreateTopic(t, "views", 2)
	events := loadertest.PageViews(0, 300, 2, time.Now().UTC().Add(-2*time.Hour), time.Hour)
	env.Produce(t, "views", loadertest.Schema(t, "pageview"), events)
	spec := writeSpec(t, t.TempDir(), "views", fmt.Sprintf(`
brokers: [%s]
registry: %s
topics: [views]
warehouse: %s
schedule: every 15m
`, env.Brokers[0], env.RegistryURL, "file://"+t.TempDir()))
	m := jobs.NewMetrics()
	before := time.Now()
	r := &jobs.Runner{StateDir: t.TempDir(), Metrics: m}
	if _, err := r.Run(context.Background(), spec, "manual"); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP tributary_jobs_runs_total Load job attempts, by job and outcome (committed or failed); retries count as attempts.
# TYPE tributary_jobs_runs_total counter
tributary_jobs_runs_total{job="views",outcome="committed"} 1
# HELP tributary_jobs_partitions_behind Partitions of the topic the last committed run did not load up to the log end it saw at its start (a run limit stopped it).
# TYPE tributary_jobs_partitions_behind gauge
tributary_jobs_partitions_behind{topic="views"} 0
`
	if err := testutil.CollectAndCompare(m, strings.NewReader(want), "tributary_jobs_runs_total", "tributary_jobs_partitions_behind"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(m, "tributary_jobs_run_records"); n != 1 {
		t.Errorf("run records histogram: %d series, want 1", n)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var last, bytes float64
	for _, f := range fams {
		switch f.GetName() {
		case "tributary_jobs_last_commit_timestamp_seconds":
			last = f.GetMetric()[0].GetGauge().GetValue()
		case "tributary_jobs_run_bytes":
			bytes = f.GetMetric()[0].GetHistogram().GetSampleSum()
		}
	}
	if bytes <= 0 {
		t.Errorf("run bytes: %v, want the size of the files written", bytes)
	}
	if last < float64(before.Unix()) {
		t.Errorf("last commit time %v is before the run (%v)", last, before.Unix())
	}
	if problems, err := testutil.CollectAndLint(m); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}
