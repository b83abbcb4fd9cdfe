package crashfs_test

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/tributary-io/tributary/internal/crashfs"
)

func write(t *testing.T, c *crashfs.FS, name, data string, sync bool) {
	t.Helper()
	f, err := c.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			out[rel+"/"] = ""
			return nil
		}
		data, err := os.ReadFile(p)
		out[rel] = string(data)
		return err
	})
	return out
}

// What a power loss keeps is what was synced: file contents at their last
// Sync, directory entries at their directory's last SyncDir.
func TestPowerLossKeepsOnlyWhatWasSynced(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "old"), []byte("before"), 0o644)
	c, err := crashfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	j := func(p string) string { return filepath.Join(root, p) }

	write(t, c, j("synced"), "kept", true)            // content and name synced
	write(t, c, j("unsynced-content"), "lost", false) // name synced, content not
	if err := c.MkdirAll(j("d/e"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, c, j("d/e/f"), "in a new directory", true) // d never synced in root
	if err := c.SyncDir(j("d/e")); err != nil {
		t.Fatal(err)
	}
	if err := c.SyncDir(root); err != nil {
		t.Fatal(err)
	}
	write(t, c, j("after-sync"), "name lost", true) // root not synced again
	if err := c.Rename(j("old"), j("d/e/moved")); err != nil {
		t.Fatal(err) // neither directory synced: old stays where it was
	}
	if err := c.PowerLoss(); err != nil {
		t.Fatal(err)
	}
	got := tree(t, root)
	want := map[string]string{"old": "before", "synced": "kept", "unsynced-content": "", "d/": ""}
	if !maps.Equal(got, want) {
		t.Fatalf("after the power loss: %q, want %q", got, want)
	}
}

// CrashAfter(n) lets n operations through; every later one fails and does
// nothing until PowerLoss.
func TestCrashAfter(t *testing.T) {
	root := t.TempDir()
	c, err := crashfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	c.CrashAfter(1)
	if err := c.MkdirAll(filepath.Join(root, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := c.MkdirAll(filepath.Join(root, "b"), 0o755); !errors.Is(err, crashfs.ErrPowerLost) {
		t.Fatalf("second operation: %v, want ErrPowerLost", err)
	}
	if _, err := os.Stat(filepath.Join(root, "b")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the failed operation happened: %v", err)
	}
	if _, err := c.Stat(root); !errors.Is(err, crashfs.ErrPowerLost) {
		t.Fatalf("reads after the power loss: %v, want ErrPowerLost", err)
	}
	if err := c.PowerLoss(); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Fatalf("unsynced directory survived: %v", entries)
	}
	if err := c.MkdirAll(filepath.Join(root, "c"), 0o755); err != nil {
		t.Fatalf("after PowerLoss: %v", err)
	}
}
