package log

import (
	"io"
	"io/fs"
	"os"

	"github.com/tributary-io/tributary/internal/atomicfile"
)

// FS is every file-system operation the log performs, so that tests can run
// the log on a file system that simulates power loss (only what was fsynced
// survives: internal/crashfs, see crashfs_test.go) and check the durability promises at each
// fsync. Production uses OSFS.
type FS interface {
	// Open opens a file read-only. It is an *os.File because the Slices
	// that Read hands out are sent with sendfile.
	Open(name string) (*os.File, error)
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	ReadFile(name string) ([]byte, error)
	ReadDir(name string) ([]os.DirEntry, error)
	Stat(name string) (os.FileInfo, error)
	MkdirAll(path string, perm os.FileMode) error
	Remove(name string) error
	RemoveAll(path string) error
	Rename(oldpath, newpath string) error
	Truncate(name string, size int64) error
	// SyncDir fsyncs a directory, making the creations, renames and
	// removals of its entries durable.
	SyncDir(dir string) error
}

// File is a file opened for writing. It is an atomicfile.File (read,
// write, sync, close), so small files are replaced through
// internal/atomicfile on the same FS.
type File interface {
	atomicfile.File
	io.WriterAt
	io.ReaderAt
	Truncate(size int64) error
}

// atomicFS is an FS as internal/atomicfile's file layer.
type atomicFS struct{ FS }

func (a atomicFS) OpenFile(name string, flag int, perm fs.FileMode) (atomicfile.File, error) {
	f, err := a.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err // not a non-nil File holding nil
	}
	return f, nil
}

// OSFS is the operating system's file system.
type OSFS struct{}

func (OSFS) Open(name string) (*os.File, error) { return os.Open(name) }
func (OSFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err // not a non-nil File holding a nil *os.File
	}
	return f, nil
}
func (OSFS) ReadFile(name string) ([]byte, error)         { return os.ReadFile(name) }
func (OSFS) ReadDir(name string) ([]os.DirEntry, error)   { return os.ReadDir(name) }
func (OSFS) Stat(name string) (os.FileInfo, error)        { return os.Stat(name) }
func (OSFS) MkdirAll(path string, perm os.FileMode) error { return os.MkdirAll(path, perm) }
func (OSFS) Remove(name string) error                     { return os.Remove(name) }
func (OSFS) RemoveAll(path string) error                  { return os.RemoveAll(path) }
func (OSFS) Rename(oldpath, newpath string) error         { return os.Rename(oldpath, newpath) }
func (OSFS) Truncate(name string, size int64) error       { return os.Truncate(name, size) }

func (OSFS) SyncDir(dir string) error { return atomicfile.OS{}.SyncDir(dir) }

// syncFile fsyncs a file the log holds only a read descriptor of (segments
// recovery kept).
func syncFile(fsys FS, name string) error {
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
