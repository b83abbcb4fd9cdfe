package loader_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/loadertest"
	"github.com/tributary-io/tributary/loader/warehouse"
)

// Ten load runs into a warehouse on a nameservice of two NameNodes
// (hdfs://tributary-ns/...), each with a NameNode failover forced at one
// of its named points, two runs a point: an administrator's failover
// (the active NameNode turned standby), then a crash (the active NameNode
// stopped dead, calls in flight cut). A run either commits or fails
// cleanly, and the runs after it commit, so that every record is in the
// warehouse exactly once at the end.
func TestHDFSFailoverMidLoad(t *testing.T) {
	const perRun = 1500
	env := loadertest.Start(t)
	env.CreateTopic(t, "failover", 4)
	c := testenv.StartHDFSHA(t)
	url := c.Warehouse(t)
	cfg := config(env, url, "failover")
	cfg.WarehouseOptions = warehouse.Options{HDFS: warehouse.HDFSOptions{HadoopConf: c.ConfDir}}
	cfg.FileMaxRecords = 200 // several files a run: failovers land between and inside them
	// A failover stalls calls for up to ~6 s (the client waits 5 s before
	// trying a NameNode that just refused it again): the lease must outlast
	// that, as the default minute does.
	cfg.LockTTL = 15 * time.Second
	schema := loadertest.Schema(t, "pageview")
	from := time.Now().UTC().Truncate(time.Hour).Add(-4 * time.Hour)

	var all []loadertest.Event
	failed := 0
	for i := range 10 {
		point := loader.FaultPoints[i%len(loader.FaultPoints)]
		events := loadertest.PageViews(i*perRun, perRun, 4, from, 3*time.Hour)
		env.Produce(t, "failover", schema, events)
		all = append(all, events...)

		var once sync.Once
		var ferr error
		failing := cfg
		how, failover := "failover", c.Failover
		if i >= len(loader.FaultPoints) {
			how, failover = "crash", c.Crash
		}
		failing.Fault = func(p loader.FaultPoint) error {
			if p == point {
				once.Do(func() { _, ferr = failover() })
			}
			return nil
		}
		start := time.Now()
		sum, err := loader.Run(context.Background(), failing)
		took := time.Since(start).Round(time.Millisecond)
		if ferr != nil {
			t.Fatal(ferr)
		}
		if err != nil {
			failed++
			runAfterExpiry(t, cfg)
			t.Logf("run %d, %s at %s: failed after %v (committed %v), the next committed %v later: %v", i, how, point, took, sum != nil && sum.Committed, time.Since(start).Round(time.Millisecond)-took, err)
		} else {
			t.Logf("run %d, %s at %s: committed %d records in %v", i, how, point, sum.Records, took)
		}
	}
	t.Logf("%d of 10 runs failed and were followed by one that committed", failed)
	w, err := warehouse.OpenWith(url, cfg.WarehouseOptions)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	loadertest.CheckExactlyOnce(t, loadertest.Read(t, w), "failover", all)
}
