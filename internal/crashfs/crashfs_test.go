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

// CrashAt fails the power at a named point: before an fsync it is not
// done, after it it is (and the operation still reports the loss). Points
// are named by the kind SetKind gives each file.
func TestCrashAt(t *testing.T) {
	for _, tc := range []struct {
		point string
		want  string // the file's content after the power loss
	}{
		{"before-data-sync", ""},
		{"after-data-sync", "v1"},
		{"after-dir-sync", ""}, // the first pass syncs the directory before any data
	} {
		t.Run(tc.point, func(t *testing.T) {
			root := t.TempDir()
			c, err := crashfs.New(root)
			if err != nil {
				t.Fatal(err)
			}
			c.SetKind(func(string) string { return "data" })
			c.CrashAt(tc.point, 1)
			p := filepath.Join(root, "f")
			f, err := c.OpenFile(p, os.O_WRONLY|os.O_CREATE, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			c.SyncDir(root)
			f.Write([]byte("v1"))
			err = f.Sync()
			f.Close()
			if !c.Crashed() || c.Hits(tc.point) != 1 {
				t.Fatalf("crashed %v after %d passes of %s", c.Crashed(), c.Hits(tc.point), tc.point)
			}
			if !errors.Is(err, crashfs.ErrPowerLost) {
				t.Fatalf("sync at or after the point: %v, want ErrPowerLost", err)
			}
			if err := c.PowerLoss(); err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(p); string(got) != tc.want {
				t.Fatalf("after the power loss the file holds %q, want %q", got, tc.want)
			}
		})
	}
}

// A file opened read-only can be synced, and a truncation by name is
// durable only once it is: the log fsyncs files it finds unsynced after a
// crash and truncates torn tails this way.
func TestTruncateDurableOnceSynced(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "f")
	os.WriteFile(p, []byte("0123456789"), 0o644)
	for _, sync := range []bool{false, true} {
		c, err := crashfs.New(root)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Truncate(p, 4); err != nil {
			t.Fatal(err)
		}
		if sync {
			f, err := c.OpenFile(p, os.O_RDONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Sync(); err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
		if err := c.PowerLoss(); err != nil {
			t.Fatal(err)
		}
		want := map[bool]string{false: "0123456789", true: "0123"}[sync]
		if got, _ := os.ReadFile(p); string(got) != want {
			t.Fatalf("synced %v: the file holds %q, want %q", sync, got, want)
		}
	}
}
