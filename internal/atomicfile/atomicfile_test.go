package atomicfile_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/tributary-io/tributary/internal/atomicfile"
	"github.com/tributary-io/tributary/internal/crashfs"
)

const oldContent, newContent = "old content\n", "the new content, longer than the old\n"

// startWith returns a fresh directory holding f with oldContent, all of it
// durable, and a crash-simulating file layer over it.
func startWith(t *testing.T) (*crashfs.FS, string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, []byte(oldContent), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := crashfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	return c, path
}

// powerLossAtEachStep cuts a write through wrap(crash file layer) at every
// one of its steps, loses power, and reports each step after which the file
// holds neither the old nor the new content, or holds the old one although
// the write had returned nil.
func powerLossAtEachStep(t *testing.T, wrap func(atomicfile.FS) atomicfile.FS, opts ...atomicfile.Option) (bad []string) {
	t.Helper()
	c, path := startWith(t)
	if err := atomicfile.WriteFS(wrap(c), path, []byte(newContent), opts...); err != nil {
		t.Fatal(err)
	}
	steps := c.Ops()
	for n := 0; n <= steps; n++ {
		c, path := startWith(t)
		c.CrashAfter(n)
		err := atomicfile.WriteFS(wrap(c), path, []byte(newContent), opts...)
		if (err == nil) != (n == steps) {
			t.Fatalf("power lost after %d of %d steps: write returned %v", n, steps, err)
		}
		if err := c.PowerLoss(); err != nil {
			t.Fatal(err)
		}
		got, rerr := os.ReadFile(path)
		switch {
		case rerr != nil:
			bad = append(bad, fmt.Sprintf("after step %d: %v", n, rerr))
		case string(got) != oldContent && string(got) != newContent:
			bad = append(bad, fmt.Sprintf("after step %d: the file holds %q", n, got))
		case err == nil && string(got) != newContent:
			bad = append(bad, fmt.Sprintf("after step %d: the write returned nil, the file still holds the old content", n))
		}
		// Whatever the crash left, the next write succeeds.
		if err := atomicfile.Write(path, []byte(newContent), opts...); err != nil {
			t.Fatalf("write after the power loss: %v", err)
		}
	}
	return bad
}

func same(f atomicfile.FS) atomicfile.FS { return f }

// A power loss at any step of a write (before the temporary file is
// synced, after the rename but before the directory's fsync, ...) leaves
// the old content or the new one, and the new one once Write returned nil.
func TestPowerLossAtEachStep(t *testing.T) {
	for _, b := range powerLossAtEachStep(t, same) {
		t.Error(b)
	}
}

// The test above catches a write that skips an fsync: without the file's
// fsync a power loss leaves an empty file; without the directory's, a write
// that returned nil is undone.
func TestPowerLossCatchesMissingFsync(t *testing.T) {
	for name, wrap := range map[string]func(atomicfile.FS) atomicfile.FS{
		"file fsync":      func(f atomicfile.FS) atomicfile.FS { return noFileSync{f} },
		"directory fsync": func(f atomicfile.FS) atomicfile.FS { return noDirSync{f} },
	} {
		t.Run(name, func(t *testing.T) {
			bad := powerLossAtEachStep(t, wrap)
			if len(bad) == 0 {
				t.Fatalf("without the %s no power loss broke the file", name)
			}
			t.Logf("without the %s: %v", name, bad)
		})
	}
}

// noFileSync drops the fsync of files: what Write would be without it.
type noFileSync struct{ atomicfile.FS }

func (n noFileSync) OpenFile(name string, flag int, perm fs.FileMode) (atomicfile.File, error) {
	f, err := n.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return unsynced{f}, nil
}

type unsynced struct{ atomicfile.File }

func (unsynced) Sync() error { return nil }

// noDirSync drops the fsync of directories.
type noDirSync struct{ atomicfile.FS }

func (noDirSync) SyncDir(string) error { return nil }

// failing makes one kind of operation fail, as a full disk or a lost
// permission would.
type failing struct {
	atomicfile.FS
	op string
}

var errInjected = errors.New("injected failure")

func (f failing) OpenFile(name string, flag int, perm fs.FileMode) (atomicfile.File, error) {
	if f.op == "open" {
		return nil, errInjected
	}
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return failingFile{file, f.op}, nil
}

func (f failing) Rename(o, n string) error {
	if f.op == "rename" {
		return errInjected
	}
	return f.FS.Rename(o, n)
}

func (f failing) SyncDir(d string) error {
	if f.op == "syncdir" {
		return errInjected
	}
	return f.FS.SyncDir(d)
}

type failingFile struct {
	atomicfile.File
	op string
}

func (f failingFile) Write(p []byte) (int, error) {
	if f.op == "write" {
		return 0, errInjected
	}
	return f.File.Write(p)
}

func (f failingFile) Sync() error {
	if f.op == "sync" {
		return errInjected
	}
	return f.File.Sync()
}

// A write that fails before its rename leaves the old file untouched and
// no temporary file behind; one whose directory fsync fails has replaced
// the file but says the replacement may not be durable.
func TestFailureCleansUp(t *testing.T) {
	for _, op := range []string{"open", "write", "sync", "rename", "syncdir"} {
		t.Run(op, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "f")
			if err := os.WriteFile(path, []byte(oldContent), 0o644); err != nil {
				t.Fatal(err)
			}
			err := atomicfile.WriteFS(failing{atomicfile.OS{}, op}, path, []byte(newContent))
			if !errors.Is(err, errInjected) {
				t.Fatalf("error %v, want the injected one", err)
			}
			want := oldContent
			if op == "syncdir" {
				want = newContent
			}
			if got, _ := os.ReadFile(path); string(got) != want {
				t.Errorf("file holds %q, want %q", got, want)
			}
			if _, err := os.Stat(path + ".tmp"); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("temporary file left behind: %v", err)
			}
		})
	}
}

func TestWriteCreatesAndReplaces(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	for _, content := range []string{"", oldContent, newContent} {
		if err := atomicfile.Write(path, []byte(content)); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(path); err != nil || string(got) != content {
			t.Fatalf("read back %q, %v; want %q", got, err, content)
		}
	}
}
