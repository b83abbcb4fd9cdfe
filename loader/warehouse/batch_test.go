package warehouse_test

import (
	"testing"

	"github.com/tributary-io/tributary/internal/crashfs"
	"github.com/tributary-io/tributary/loader/warehouse"
)

// Names made through a batch survive a power loss once Sync has returned,
// and not before (the files' content is synced at Close either way); Sync
// fsyncs each directory once however many names it holds.
func TestBatchNamesDurableAtSync(t *testing.T) {
	dir := t.TempDir()
	disk, err := crashfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	w, err := warehouse.OpenLocalOn(dir, disk)
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"t/2026/01/01/00/a", "t/2026/01/01/00/b", "t/2026/01/01/01/c", "run/x/d"}
	write := func(b *warehouse.Batch) {
		t.Helper()
		for _, f := range files {
			if err := warehouse.WriteFile(b, f+".tmp", []byte(f)); err != nil {
				t.Fatal(err)
			}
			if err := b.Rename(f+".tmp", f); err != nil {
				t.Fatal(err)
			}
		}
	}

	write(warehouse.NewBatch(w))
	if err := disk.PowerLoss(); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if ok, err := warehouse.Exists(w, f); err != nil || ok {
			t.Errorf("%s survived a power loss before the batch's Sync (err %v)", f, err)
		}
	}

	b := warehouse.NewBatch(w)
	write(b)
	before := disk.Hits("before-dir-sync")
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	// t/2026/01/01/{00,01}, t/2026/01/01, t/2026/01, t/2026, t, run/x, run
	// and the root: nine directories.
	if got := disk.Hits("before-dir-sync") - before; got != 9 {
		t.Errorf("Sync fsynced directories %d times, want each of the 9 once", got)
	}
	if err := disk.PowerLoss(); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		data, err := warehouse.ReadFile(w, f)
		if err != nil || string(data) != f {
			t.Errorf("%s after Sync and a power loss: %q, %v", f, data, err)
		}
	}
	if err := b.Sync(); err != nil { // nothing pending
		t.Fatal(err)
	}
}
