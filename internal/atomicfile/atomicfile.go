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
// A file that separate processes replace (the broker and the offline
// `tributary users` both replace credentials.json) is written with
// UniqueTemp instead, so that each write has a temporary file of its own.
package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
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

// An Option changes how a write creates the new file.
type Option func(*options)

type options struct {
	perm   fs.FileMode
	unique bool
}

// Perm gives the new file the permission bits perm (less the umask)
// instead of 0644: 0600 for a file of secrets. The bits are set when the
// temporary file is created; a name.tmp that a crash left keeps its own,
// so a file whose mode guards secrets is written with UniqueTemp as well.
func Perm(perm fs.FileMode) Option { return func(o *options) { o.perm = perm } }

// UniqueTemp writes through a temporary file of its own, created anew
// (name.<random>.tmp), instead of the shared name.tmp, for a file that
// separate processes may replace at the same moment: with a shared name
// one could rename the other's half-written file into place, or find its
// own renamed away. Each write then still leaves a whole file, the last to
// rename winning. The price: a temporary file a crash leaves is not reused
// by the next write and stays until someone removes it (still *.tmp).
func UniqueTemp() Option { return func(o *options) { o.unique = true } }

// Write replaces path with data through the operating system.
func Write(path string, data []byte, opts ...Option) error {
	return WriteFS(OS{}, path, data, opts...)
}

// WriteFS replaces path with data through fsys; see the package
// documentation for what a crash leaves. On an error before the rename the
// temporary file is removed and path is untouched.
func WriteFS(fsys FS, path string, data []byte, opts ...Option) error {
	return WriteFrom(fsys, path, bytes.NewReader(data), opts...)
}

// WriteFrom is WriteFS for content read from r, for files too large to hold
// in memory (a rewritten log segment).
func WriteFrom(fsys FS, path string, r io.Reader, opts ...Option) error {
	if err := WriteFromDirUnsynced(fsys, path, r, opts...); err != nil {
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
func WriteFromDirUnsynced(fsys FS, path string, r io.Reader, opts ...Option) error {
	o := options{perm: 0o644}
	for _, opt := range opts {
		opt(&o)
	}
	f, tmp, err := createTemp(fsys, path, o)
	if err != nil {
		return fmt.Errorf("writing %s: %w", tmp, err)
	}
	if err := writeSynced(f, r); err != nil {
		return errors.Join(fmt.Errorf("writing %s: %w", tmp, err), removeTemp(fsys, tmp))
	}
	if err := fsys.Rename(tmp, path); err != nil {
		return errors.Join(fmt.Errorf("replacing %s: %w", path, err), removeTemp(fsys, tmp))
	}
	return nil
}

// createTemp opens the temporary file path's new content goes to: the
// shared name.tmp, truncated, or under UniqueTemp a new file no other
// write can have opened.
func createTemp(fsys FS, path string, o options) (File, string, error) {
	if !o.unique {
		tmp := path + ".tmp"
		f, err := fsys.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, o.perm)
		return f, tmp, err
	}
	for range 10 {
		tmp := path + "." + strconv.FormatUint(rand.Uint64(), 36) + ".tmp"
		f, err := fsys.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, o.perm)
		if !errors.Is(err, fs.ErrExist) {
			return f, tmp, err
		}
	}
	return nil, path + ".*.tmp", errors.New("no free temporary name after 10 tries")
}

func writeSynced(f File, r io.Reader) error {
	_, err := io.Copy(f, r)
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
