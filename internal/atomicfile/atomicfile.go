// Package atomicfile replaces a small file so that a crash, a killed process
// or a power loss leaves either its old content or its new content, never a
// mix of the two, an empty file or a missing one.
//
// Write puts the data in a temporary file beside the target (name + ".tmp"),
// fsyncs it, renames it over the target and fsyncs the directory. What a
// crash may leave:
//   - before the rename: the old file, untouched, and possibly a partial
//     name.tmp, which the next Write of the same name truncates and reuses
//     (readers of the directory must ignore *.tmp);
//   - after the rename, before the directory's fsync: the old file or the
//     new one, each complete, because the new file was fsynced before it
//     was renamed;
//   - once Write has returned nil: the new file.
//
// Writes of one name must not run concurrently: they share the temporary
// name. Callers serialize them (they all hold a lock over the file's state).
package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// File is an open file of an FS.
type File interface {
	io.ReadWriteCloser
	// Sync makes the file's content durable (fsync).
	Sync() error
}

// FS is the file layer Write goes through: the operating system (OS), or in
// crash tests a file system that forgets whatever was not synced.
type FS interface {
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	// Rename replaces newpath by oldpath, atomically.
	Rename(oldpath, newpath string) error
	Remove(name string) error
	// SyncDir makes the entries of a directory durable: names created,
	// renamed or removed in it survive a power loss once it returns.
	SyncDir(dir string) error
}

// OS is the operating system's file layer.
type OS struct{}

func (OS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err // not a typed nil in an interface
	}
	return f, nil
}

func (OS) Rename(oldpath, newpath string) error { return os.Rename(oldpath, newpath) }
func (OS) Remove(name string) error             { return os.Remove(name) }

func (OS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Write replaces path with data through the operating system.
func Write(path string, data []byte) error { return WriteFS(OS{}, path, data) }

// WriteFS replaces path with data through fsys; see the package
// documentation for what a crash leaves. On an error before the rename the
// temporary file is removed and path is untouched.
func WriteFS(fsys FS, path string, data []byte) error {
	return WriteFrom(fsys, path, bytes.NewReader(data))
}

// WriteFrom is WriteFS for content read from r, for files too large to hold
// in memory (a rewritten log segment).
func WriteFrom(fsys FS, path string, r io.Reader) error {
	if err := WriteFromDirUnsynced(fsys, path, r); err != nil {
		return err
	}
	if err := fsys.SyncDir(filepath.Dir(path)); err != nil {
		// The new content is in place but may not survive a power loss.
		return fmt.Errorf("replacing %s: syncing its directory: %w", path, err)
	}
	return nil
}

// WriteFromDirUnsynced is WriteFrom without the directory's fsync, for a
// caller that replaces several files of one directory and fsyncs it once
// after the last. Until that fsync a crash may leave each file old or new,
// but each complete.
func WriteFromDirUnsynced(fsys FS, path string, r io.Reader) error {
	tmp := path + ".tmp"
	if err := writeSynced(fsys, tmp, r); err != nil {
		return errors.Join(fmt.Errorf("writing %s: %w", tmp, err), removeTemp(fsys, tmp))
	}
	if err := fsys.Rename(tmp, path); err != nil {
		return errors.Join(fmt.Errorf("replacing %s: %w", path, err), removeTemp(fsys, tmp))
	}
	return nil
}

func writeSynced(fsys FS, name string, r io.Reader) error {
	f, err := fsys.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func removeTemp(fsys FS, tmp string) error {
	if err := fsys.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing %s: %w", tmp, err)
	}
	return nil
}
