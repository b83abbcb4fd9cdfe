package loader_test

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/audit"
	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/loadertest"
)

// Tables committed through a real Iceberg REST catalog (Apache Iceberg's
// reference server): loads in two runs read back by pyiceberg through the
// same catalog; a run killed right before its commit, and one killed right
// after it, recovered through the catalog; a run whose table moved on
// while it was paused past its lease refused by the catalog (409 on the
// commit-table endpoint); then a compaction and an expiry through the
// catalog. The loader writes no vN.metadata.json of its own: the catalog
// keeps the metadata.
func TestIcebergRESTCatalog(t *testing.T) {
	const n = 4000
	env := loadertest.Start(t)
	env.CreateTopic(t, "icerest", 3)
	from := time.Now().UTC().Truncate(time.Hour).Add(-4 * time.Hour)
	events := loadertest.PageViews(0, n, 3, from, 3*time.Hour)
	env.Produce(t, "icerest", loadertest.Schema(t, "pageview"), events)
	ends := logEnds(t, env, "icerest", 3)

	dir := t.TempDir()
	url := "file://" + dir
	srv := testenv.StartIcebergREST(t, url)
	catalog := loader.CatalogConfig{Type: loader.CatalogREST, URI: srv.URI}
	cfg := config(env, url, "icerest")
	cfg.Table, cfg.Catalog, cfg.FileMaxRecords, cfg.LockTTL = "db", catalog, 300, 2*time.Second
	target, tableDir := "rest:"+srv.URI+"#db.icerest", filepath.Join(dir, "db", "icerest")

	first := cfg
	first.MaxRecords = n / 8
	run(t, first)

	// Killed right before the commit-table request, then right after it.
	for _, point := range []loader.FaultPoint{loader.FaultTableCommit, loader.FaultAfterCommit} {
		crashing := first
		crashing.Fault = crashAt(point)
		sum, err := loader.Run(context.Background(), crashing)
		if err == nil {
			t.Fatalf("the fault at %s did not stop the run", point)
		}
		committed := point == loader.FaultAfterCommit
		if sum.Committed != committed {
			t.Fatalf("killed at %s: committed=%v, want %v (%v)", point, sum.Committed, committed, err)
		}
		next := runAfterExpiry(t, first)
		if committed && !slices.Contains(next.Recovered, sum.Run) || !committed && !slices.Contains(next.Discarded, sum.Run) {
			t.Errorf("killed at %s: the next run recovered %v and discarded %v; want run %s finished if it committed, else discarded", point, next.Recovered, next.Discarded, sum.Run)
		}
	}

	// Paused past its lease right before its commit, while another run
	// takes the topic over and commits the rest.
	stalled := &stallFS{FS: openWarehouse(t, url)}
	paused := cfg
	paused.FS = stalled
	atCommit, resume := make(chan struct{}), make(chan struct{})
	paused.Fault = func(p loader.FaultPoint) error {
		if p == loader.FaultTableCommit {
			stalled.stall(true)
			close(atCommit)
			<-resume
			stalled.stall(false)
		}
		return nil
	}
	type result struct {
		sum *loader.Summary
		err error
	}
	done := make(chan result, 1)
	go func() { sum, err := loader.Run(context.Background(), paused); done <- result{sum, err} }()
	select {
	case <-atCommit:
	case r := <-done:
		t.Fatalf("the paused run ended before its commit: %v", r.err)
	case <-time.After(60 * time.Second):
		t.Fatal("the paused run did not reach its commit")
	}
	taker := runAfterExpiry(t, cfg)
	close(resume)
	r := <-done
	if r.err == nil || r.sum.Committed || !strings.Contains(r.err.Error(), "refused") {
		t.Fatalf("the resumed run: committed=%v, %v; want the REST catalog to refuse its commit", r.sum.Committed, r.err)
	}
	t.Logf("the resumed run: %v", r.err)

	tab := checkIcebergExactlyOnceVia(t, target, tableDir, events, ends)
	if tab.Summary["tributary.run"] != taker.Run {
		t.Errorf("the current snapshot is run %s's, want the run that took over (%s)", tab.Summary["tributary.run"], taker.Run)
	}
	if _, err := os.Stat(filepath.Join(tableDir, "metadata", "v1.metadata.json")); err == nil {
		t.Error("the loader wrote a file-system catalog version beside the REST catalog's metadata")
	}

	// Compaction and expiry commit through the catalog too.
	hours := []time.Time{from, from.Add(time.Hour), from.Add(2 * time.Hour)}
	if _, err := loader.Compact(context.Background(), loader.CompactConfig{Warehouse: url, Topic: "icerest", Table: "db", Catalog: catalog, Hours: hours, LockTTL: 2 * time.Second, Logger: quiet}); err != nil {
		t.Fatalf("compaction through the REST catalog: %v", err)
	}
	out, err := loader.ExpireSnapshots(context.Background(), loader.ExpireConfig{Warehouse: url, Topic: "icerest", Table: "db", Catalog: catalog, RetainLast: 1, LockTTL: 2 * time.Second, Logger: quiet})
	if err != nil || len(out.Snapshots) == 0 || out.DataFiles == 0 {
		t.Fatalf("expiry through the REST catalog: %+v, %v", out, err)
	}
	tab = checkIcebergExactlyOnceVia(t, target, tableDir, events, ends)
	counts, _, err := audit.ScanWarehouse(context.Background(), audit.WarehouseScanConfig{FS: openWarehouse(t, url), Topics: []string{"icerest"},
		Table: "db", TableFiles: loader.TableDataFilesIn(catalog), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if got, _, _ := counts.Total(); got != n {
		t.Errorf("the audit's count of the table through the REST catalog: %d events, want %d", got, n)
	}
	if tab.Snapshots != 1 || tab.Summary["operation"] != "replace" {
		t.Errorf("after compaction and expiry: %d snapshots, current %v; want one, the compaction's", tab.Snapshots, tab.Summary["operation"])
	}
}

// SIGKILLs of `tributary load --table --catalog rest`: runs stopped at
// each fault point in turn (inside the write, right before the
// commit-table request, after it, between the moves) and killed there,
// then runs killed at random moments; then a last run: every event once in
// the table the REST catalog serves, the last snapshot's offsets the
// logs' ends.
func TestIcebergRESTKillLoop(t *testing.T) {
	const n, atRandom = 3000, 6
	env := loadertest.Start(t)
	env.CreateTopic(t, "icerestkill", 2)
	from := time.Now().UTC().Truncate(time.Hour).Add(-4 * time.Hour)
	events := loadertest.PageViews(0, n, 2, from, 3*time.Hour)
	env.Produce(t, "icerestkill", loadertest.Schema(t, "pageview"), events)

	dir := t.TempDir()
	url := "file://" + dir
	srv := testenv.StartIcebergREST(t, url)
	args := []string{"load", "--brokers", env.Brokers[0], "--registry", env.RegistryURL,
		"--topics", "icerestkill", "--warehouse", url, "--table", "db", "--catalog", "rest", "--catalog-uri", srv.URI,
		"--max-records", "300", "--file-max-records", "100", "--lock-ttl", "1s", "--quiet"}
	points := slices.Concat(loader.FaultPoints, loader.TableFaultPoints)
	for i, point := range points {
		p := startLoad(t, string(point), args)
		if !strings.Contains(p.Output.String(), "paused at "+string(point)) {
			t.Fatalf("kill %d: tributary load exited before reaching %s:\n%s", i, point, p.Output.String())
		}
		p.Kill()
	}
	rng := rand.New(rand.NewPCG(26, uint64(time.Now().UnixNano())))
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
	cfg := config(env, url, "icerestkill")
	cfg.Table, cfg.Catalog, cfg.LockTTL = "db", loader.CatalogConfig{Type: loader.CatalogREST, URI: srv.URI}, time.Second
	last := runAfterExpiry(t, cfg)
	t.Logf("%d kills; the last run loaded %d, recovered %v, discarded %v", len(points)+atRandom, last.Records, last.Recovered, last.Discarded)
	tab := checkIcebergExactlyOnceVia(t, "rest:"+srv.URI+"#db.icerestkill", filepath.Join(dir, "db", "icerestkill"), events, logEnds(t, env, "icerestkill", 2))
	t.Logf("%d snapshots", tab.Snapshots)
}
