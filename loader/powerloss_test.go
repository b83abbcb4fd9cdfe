package loader_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/crashfs"
	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/loadertest"
	"github.com/tributary-io/tributary/loader/warehouse"
)

// A power loss, unlike a killed process, also takes what the local
// warehouse wrote but did not fsync. Runs here write through a file layer
// that remembers only what was synced; the power loss rewrites the
// warehouse directory to that, and the next run works on the real files.
//
// Once a run has committed (its manifest renamed into commits), the power
// loss keeps the run: the next run finds its offsets and every one of its
// data files. Before the commit, the power loss leaves nothing visible: no
// data file, no commit, and the next run loads everything.
func TestPowerLoss(t *testing.T) {
	const n = 2000
	env := loadertest.Start(t)
	env.CreateTopic(t, "power", 2)
	from := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	events := loadertest.PageViews(0, n, 2, from, 2*time.Hour)
	env.Produce(t, "power", loadertest.Schema(t, "pageview"), events)

	for _, tc := range []struct {
		name      string
		fault     loader.FaultPoint // "" for a run that returned
		committed bool
	}{
		{"after the run returned", "", true},
		{"killed right after the commit", loader.FaultAfterCommit, true},
		{"killed mid-move", loader.FaultMidMove, true},
		{"killed right before the commit", loader.FaultBeforeCommit, false},
		{"killed mid-write", loader.FaultMidWrite, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			disk, err := crashfs.New(dir)
			if err != nil {
				t.Fatal(err)
			}
			w, err := warehouse.OpenLocalOn(dir, disk)
			if err != nil {
				t.Fatal(err)
			}
			cfg := config(env, "", "power")
			cfg.FS = w
			cfg.FileMaxRecords = 200 // many files, in several hour directories
			if tc.fault != "" {
				cfg.Fault = crashAt(tc.fault)
			}
			sum, err := loader.Run(context.Background(), cfg)
			if (err == nil) != (tc.fault == "") || sum.Committed != tc.committed {
				t.Fatalf("run: committed=%v, err=%v", sum.Committed, err)
			}
			if err := disk.PowerLoss(); err != nil {
				t.Fatal(err)
			}

			url := "file://" + dir
			if !tc.committed {
				c := loadertest.Read(t, openWarehouse(t, url))
				if len(c.Files) > 0 || slices.ContainsFunc(c.State, isCommit) || len(c.Markers) > 0 {
					t.Fatalf("an uncommitted run is visible after the power loss: %d files, markers %v, state %v", len(c.Files), c.Markers, c.State)
				}
			}
			next := runAfterExpiry(t, config(env, url, "power"))
			switch {
			case tc.committed && next.Records != 0:
				t.Errorf("the next run loaded %d records again: the committed offsets were lost", next.Records)
			case tc.committed && tc.fault != "" && !slices.Contains(next.Recovered, sum.Run):
				t.Errorf("the next run recovered %v, want the committed run %s finished", next.Recovered, sum.Run)
			case !tc.committed && next.Records != n:
				t.Errorf("the next run loaded %d records, want all %d", next.Records, n)
			}
			c := loadertest.Read(t, openWarehouse(t, url))
			loadertest.CheckExactlyOnce(t, c, "power", events)
			for _, s := range c.State {
				if !isCommit(s) {
					t.Errorf("left behind: %s", s)
				}
			}
		})
	}
}
