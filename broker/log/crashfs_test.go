package log

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/internal/crashfs"
)

// crashFS runs the log on internal/crashfs: a power loss keeps exactly what
// was fsynced (file contents at their last fsync, directory entries at
// their directory's last fsync), the strictest behaviour POSIX allows.
//
// Failure points name the log's sync boundaries: "before-" or "after-"
// followed by the operation: "segment-sync", "index-sync",
// "checkpoint-sync", "gaps-sync", "other-sync" (a file
// fsync, by file kind; a quarantine file is "other"), "segment-rename",
// "gaps-rename", "checkpoint-rename", "other-rename" and
// "dir-sync"; for the cleaner, "cleaned-sync" (a NNN.log.cleaned or
// NNN.gaps.cleaned file), "swap-marker-sync" and "swap-marker-rename" (the
// commit of a swap). CrashAt(point, n) loses power at the n-th pass.
type crashFS struct{ *crashfs.FS }

// newCrashFS returns a crash file system over root, created if missing;
// files already in root count as durable.
func newCrashFS(t testing.TB, root string) crashFS {
	t.Helper()
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := crashfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	c.SetKind(kind)
	return crashFS{c}
}

// OpenFile returns the log's File: crashfs files write at offsets and
// truncate too.
func (c crashFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := c.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return f.(*crashfs.File), nil
}

// kind names a file's kind in failure points.
func kind(name string) string {
	base := strings.TrimSuffix(filepath.Base(name), ".tmp")
	switch {
	case strings.HasSuffix(base, cleanedSuffix):
		return "cleaned"
	case base == swapMarkerFile:
		return "swap-marker"
	case strings.HasSuffix(base, ".log"):
		return "segment"
	case strings.HasSuffix(base, ".index"):
		return "index"
	case strings.HasSuffix(base, ".gaps"):
		return "gaps"
	case base == checkpointFile:
		return "checkpoint"
	case base == cleanMarkerFile:
		return "marker"
	}
	return "other"
}
