package warehouse

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/tributary-io/tributary/internal/atomicfile"
)

// Local is a warehouse in a local directory. It keeps the package's
// durability promises against a power loss, not only a killed process:
//   - a file is fsynced on Close, and so are its directory and every
//     directory above it up to the root, so its name survives too (a
//     directory created for it is only durable once its parent is synced);
//   - Rename fsyncs the new name's directory and those above it, and the
//     old name's directory, so a rename that returned nil survives and a
//     moved file does not come back at its old name.
//
// A Batch over a Local defers the directory syncs of many names to one
// Sync (see Batch).
//
// The directories above a file are synced on every Close rather than only
// when they were just created: another writer may have created one and not
// yet synced its parent, and the loader creates few files per run.
// Removals are not synced: a removed file may come back after a power
// loss, which the loader's recovery tolerates.
type Local struct {
	root  string
	files LocalFiles
	// deferred, in a Batch's view, collects the directories to sync
	// instead of syncing them at once.
	deferred *dirSet
}

// LocalFiles is the file layer under a Local warehouse: the operating
// system, or in crash tests one that forgets what was not synced
// (internal/crashfs). Names are operating-system paths.
type LocalFiles interface {
	atomicfile.FS
	// RenameNoReplace is Rename failing with fs.ErrExist when newpath
	// exists (renameat2 RENAME_NOREPLACE).
	RenameNoReplace(oldpath, newpath string) error
	MkdirAll(name string, perm fs.FileMode) error
	RemoveAll(name string) error
	ReadDir(name string) ([]fs.DirEntry, error)
	Stat(name string) (fs.FileInfo, error)
}

type osFiles struct{ atomicfile.OS }

func (osFiles) MkdirAll(name string, perm fs.FileMode) error { return os.MkdirAll(name, perm) }
func (osFiles) RemoveAll(name string) error                  { return os.RemoveAll(name) }
func (osFiles) ReadDir(name string) ([]fs.DirEntry, error)   { return os.ReadDir(name) }
func (osFiles) Stat(name string) (fs.FileInfo, error)        { return os.Stat(name) }
func (osFiles) RenameNoReplace(oldpath, newpath string) error {
	return renameNoReplace(oldpath, newpath)
}

// renameNoReplace is renameat2(RENAME_NOREPLACE), or where the file system
// lacks it (EINVAL) a hard link and the removal of the old name: link(2)
// also fails when the new name exists. A crash between the two leaves the
// file under both names, which the loader's recovery tolerates (the old
// one is in a run directory it deletes).
func renameNoReplace(oldpath, newpath string) error {
	err := unix.Renameat2(unix.AT_FDCWD, oldpath, unix.AT_FDCWD, newpath, unix.RENAME_NOREPLACE)
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOSYS) {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
	}
	if err := os.Link(oldpath, newpath); err != nil {
		return err
	}
	return os.Remove(oldpath)
}

// OpenLocal returns the warehouse in dir, creating dir if needed.
func OpenLocal(dir string) (*Local, error) { return openLocal(dir, true) }

// OpenLocalOn is OpenLocal over another file layer; crash tests use it.
func OpenLocalOn(dir string, files LocalFiles) (*Local, error) {
	return openLocalOn(dir, files, true)
}

func openLocal(dir string, create bool) (*Local, error) { return openLocalOn(dir, osFiles{}, create) }

func openLocalOn(dir string, files LocalFiles, create bool) (*Local, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("warehouse %s: %w", dir, err)
	}
	if !create {
		if _, err := files.Stat(abs); err != nil {
			return nil, fmt.Errorf("warehouse file://%s: %w", abs, err)
		}
		return &Local{root: abs, files: files}, nil
	}
	if err := files.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("warehouse file://%s is not usable: %w", abs, err)
	}
	return &Local{root: abs, files: files}, nil
}

func (l *Local) String() string { return "file://" + l.root }

// Root is the directory the warehouse lives in.
func (l *Local) Root() string { return l.root }

func (l *Local) Close() error { return nil }

func (l *Local) path(name string) (string, error) {
	c, err := clean(name)
	if err != nil {
		return "", err
	}
	return filepath.Join(l.root, filepath.FromSlash(c)), nil
}

// syncDirs fsyncs dir and every directory above it up to the root, so
// that every name on the way to dir is durable.
func (l *Local) syncDirs(dir string) error {
	for {
		if err := l.files.SyncDir(dir); err != nil {
			return fmt.Errorf("%s: syncing directory %s: %w", l, dir, err)
		}
		if dir == l.root || !strings.HasPrefix(dir, strings.TrimSuffix(l.root, string(filepath.Separator))+string(filepath.Separator)) {
			return nil
		}
		dir = filepath.Dir(dir)
	}
}

// syncFile is a file being written; Close returning nil is the
// durability point of its content and its name.
type syncFile struct {
	atomicfile.File
	l   *Local
	dir string
}

func (f syncFile) Close() error {
	if err := f.File.Sync(); err != nil {
		f.File.Close()
		return err
	}
	if err := f.File.Close(); err != nil {
		return err
	}
	if f.l.deferred != nil {
		f.l.deferred.add(f.dir)
		return nil
	}
	return f.l.syncDirs(f.dir)
}

func (l *Local) Create(name string) (io.WriteCloser, error) {
	p, err := l.path(name)
	if err != nil {
		return nil, err
	}
	if err := l.files.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, err
	}
	f, err := l.files.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	return syncFile{File: f, l: l, dir: filepath.Dir(p)}, nil
}

func (l *Local) CreateExclusive(name string, data []byte) error {
	p, err := l.path(name)
	if err != nil {
		return err
	}
	if err := l.files.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := l.files.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	// Never deferred, also in a batch: a lock is only held once durable.
	return syncFile{File: f, l: &Local{root: l.root, files: l.files}, dir: filepath.Dir(p)}.Close()
}

func (l *Local) Open(name string) (io.ReadCloser, error) {
	p, err := l.path(name)
	if err != nil {
		return nil, err
	}
	return l.files.OpenFile(p, os.O_RDONLY, 0)
}

func (l *Local) Rename(oldname, newname string) error {
	return l.rename(oldname, newname, l.files.Rename)
}

// RenameNoReplace is Rename that fails with fs.ErrExist when newname
// exists; the names are made durable as Rename's are.
func (l *Local) RenameNoReplace(oldname, newname string) error {
	return l.rename(oldname, newname, l.files.RenameNoReplace)
}

// rename moves oldname to newname with op, making newname's directory
// first, and both names durable (at once, or at the batch's Sync).
func (l *Local) rename(oldname, newname string, op func(oldpath, newpath string) error) error {
	oldPath, err := l.path(oldname)
	if err != nil {
		return err
	}
	np, err := l.path(newname)
	if err != nil {
		return err
	}
	dir := filepath.Dir(np)
	if err := l.files.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := op(oldPath, np); err != nil {
		return err
	}
	if l.deferred != nil {
		l.deferred.add(dir, filepath.Dir(oldPath))
		return nil
	}
	if err := l.syncDirs(dir); err != nil {
		return err
	}
	if odir := filepath.Dir(oldPath); odir != dir {
		if err := l.files.SyncDir(odir); err != nil {
			return fmt.Errorf("%s: syncing directory %s: %w", l, odir, err)
		}
	}
	return nil
}

func (l *Local) Remove(name string) error {
	p, err := l.path(name)
	if err != nil {
		return err
	}
	if err := l.files.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func (l *Local) RemoveAll(name string) error {
	p, err := l.path(name)
	if err != nil {
		return err
	}
	if p == l.root {
		return errors.New("warehouse: refusing to remove the warehouse root")
	}
	return l.files.RemoveAll(p)
}

func (l *Local) ReadDir(name string) ([]fs.FileInfo, error) {
	p, err := l.path(name)
	if err != nil {
		return nil, err
	}
	entries, err := l.files.ReadDir(p)
	if err != nil {
		return nil, err
	}
	out := make([]fs.FileInfo, 0, len(entries))
	for _, e := range entries {
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, fi)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

func (l *Local) Stat(name string) (fs.FileInfo, error) {
	p, err := l.path(name)
	if err != nil {
		return nil, err
	}
	return l.files.Stat(p)
}

// MkdirAll creates a directory durably: it and the directories above it
// are synced.
func (l *Local) MkdirAll(name string) error {
	p, err := l.path(name)
	if err != nil {
		return err
	}
	if err := l.files.MkdirAll(p, 0o755); err != nil {
		return err
	}
	if l.deferred != nil {
		l.deferred.add(filepath.Dir(p))
		return nil
	}
	return l.syncDirs(filepath.Dir(p))
}
