package loader_test

import (
	"context"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/crashfs"
	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/loadertest"
	"github.com/tributary-io/tributary/loader/warehouse"
)

// A run's directory fsyncs do not grow with the files it writes: each
// directory is synced once before the commit and once after the moves,
// not once for every file closed or moved in it. Splitting the same
// records into twenty times as many files costs no more fsyncs.
func TestDirSyncsPerRunDoNotGrowWithFiles(t *testing.T) {
	const n = 2000
	env := loadertest.Start(t)
	env.CreateTopic(t, "syncs", 2)
	from := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	env.Produce(t, "syncs", loadertest.Schema(t, "pageview"), loadertest.PageViews(0, n, 2, from, 2*time.Hour))

	dirSyncs := func(fileMaxRecords int64) (syncs int, files int) {
		dir := t.TempDir()
		disk, err := crashfs.New(dir)
		if err != nil {
			t.Fatal(err)
		}
		w, err := warehouse.OpenLocalOn(dir, disk)
		if err != nil {
			t.Fatal(err)
		}
		cfg := config(env, "", "syncs")
		cfg.FS = w
		cfg.FileMaxRecords = fileMaxRecords
		cfg.LockTTL = time.Hour // no lease renewal (and its fsyncs) during the run
		sum, err := loader.Run(context.Background(), cfg)
		if err != nil || sum.Records != n {
			t.Fatalf("run: %d records, %v", sum.Records, err)
		}
		return disk.Hits("before-dir-sync"), sum.Files
	}
	few, fewFiles := dirSyncs(1_000_000)
	many, manyFiles := dirSyncs(50)
	if manyFiles < 10*fewFiles {
		t.Fatalf("the runs wrote %d and %d files; the test needs many more in the second", fewFiles, manyFiles)
	}
	if many > few {
		t.Errorf("%d files took %d directory fsyncs, %d files %d: a run syncs directories per file", manyFiles, many, fewFiles, few)
	}
	t.Logf("%d files: %d directory fsyncs; %d files: %d", fewFiles, few, manyFiles, many)
}
