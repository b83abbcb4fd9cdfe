// Package crashfs simulates a power loss on a real directory, for crash
// tests of code that writes files through a seam (atomicfile.FS, the local
// warehouse's file layer).
//
// Every operation happens on the real files, so the code under test and
// its readers see ordinary files. Beside them FS keeps what a disk would
// still hold after losing power: a file's content as of its last Sync, a
// directory's entries as of its last SyncDir. PowerLoss rewrites the
// directory to exactly that, the harshest outcome POSIX allows: a file
// never synced is empty, a name never made durable by syncing its directory
// is gone (or back, if it was removed or renamed away).
//
// Two ways to choose when the power fails:
//   - CrashAfter(n): at the (n+1)th mutating operation, so a test can cut
//     the code under test at every step in turn;
//   - CrashAt(point, n): at the n-th pass of a named failure point. Every
//     fsync and rename passes two, before and after it: "before-" or
//     "after-" followed by "<kind>-sync", "<kind>-rename" or "dir-sync",
//     where a file's kind is what SetKind's function says of its name
//     ("file" without one). A storage engine names its files' kinds
//     ("segment", "index", ...) so its tests read as its sync boundaries.
package crashfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/tributary-io/tributary/internal/atomicfile"
)

// ErrPowerLost is returned by every operation from the simulated power loss
// until PowerLoss has rewritten the directory.
var ErrPowerLost = errors.New("crashfs: power lost")

// FS is a file layer over the directory Root that remembers what was
// synced. It implements atomicfile.FS and the local warehouse's file layer.
type FS struct {
	root string

	mu     sync.Mutex
	top    *node
	live   map[uint64]*node // inode → node, for names that exist now
	ops    int
	failAt int // the operation that loses power; -1: none
	lost   bool

	kind  func(name string) string
	point string // CrashAt's point and pass
	at    int
	hits  map[string]int
}

// node is what survives a power loss of one file or directory.
type node struct {
	dir     bool
	data    []byte           // file: content at the last Sync
	entries map[string]*node // directory: entries at the last SyncDir
}

// New starts tracking root; everything already in it counts as durable.
func New(root string) (*FS, error) {
	f := &FS{root: root, failAt: -1, hits: map[string]int{}}
	if err := f.snapshot(); err != nil {
		return nil, err
	}
	return f, nil
}

// Root is the directory FS works in.
func (f *FS) Root() string { return f.root }

// Ops is the number of mutating operations done so far (since New or the
// last PowerLoss).
func (f *FS) Ops() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ops
}

// CrashAfter lets n more mutating operations succeed; the next one, and
// every operation after it, fails with ErrPowerLost and does nothing.
func (f *FS) CrashAfter(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failAt = f.ops + n
}

// SetKind names the kind of each file for the failure points of CrashAt.
func (f *FS) SetKind(kind func(name string) string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.kind = kind
}

// CrashAt makes the power fail at the n-th pass of point, counted since New
// or the last PowerLoss: at a "before-" point the operation is not done, at
// an "after-" point it is; either way it and every later operation fail
// with ErrPowerLost.
func (f *FS) CrashAt(point string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.point, f.at = point, n
}

// Hits is how many times point was passed since New or the last PowerLoss.
func (f *FS) Hits(point string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hits[point]
}

// Crashed reports whether the power failed (CrashAfter or CrashAt reached).
func (f *FS) Crashed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lost
}

// PowerLoss rewrites the directory to what was durable, as a machine finds
// it after losing power, and then counts all of it as durable. Files still
// open through FS must not be used afterwards.
func (f *FS) PowerLoss() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	entries, err := os.ReadDir(f.root)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(f.root, e.Name())); err != nil {
			return err
		}
	}
	if err := materialize(f.root, f.top, 0); err != nil {
		return fmt.Errorf("crashfs: rebuilding %s: %w", f.root, err)
	}
	f.ops, f.failAt, f.lost = 0, -1, false
	f.point, f.at, f.hits = "", 0, map[string]int{}
	return f.snapshot()
}

func materialize(dir string, n *node, depth int) error {
	if depth > 64 {
		return errors.New("directories nested too deep (a cycle?)")
	}
	for name, c := range n.entries {
		p := filepath.Join(dir, name)
		if !c.dir {
			if err := os.WriteFile(p, c.data, 0o644); err != nil {
				return err
			}
			continue
		}
		if err := os.Mkdir(p, 0o755); err != nil {
			return err
		}
		if err := materialize(p, c, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// snapshot records the tree as it is now as durable.
func (f *FS) snapshot() error {
	f.live = map[uint64]*node{}
	fi, err := os.Lstat(f.root)
	if err != nil {
		return err
	}
	f.top = f.nodeFor(fi)
	return filepath.WalkDir(f.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		n := f.nodeFor(fi)
		if p != f.root {
			parent, err := os.Lstat(filepath.Dir(p))
			if err != nil {
				return err
			}
			f.nodeFor(parent).entries[d.Name()] = n
		}
		if !d.IsDir() {
			n.data, err = os.ReadFile(p)
		}
		return err
	})
}

func ino(fi fs.FileInfo) uint64 { return fi.Sys().(*syscall.Stat_t).Ino }

// nodeFor returns the node of an existing file, new (nothing durable) if
// FS has not seen it before.
func (f *FS) nodeFor(fi fs.FileInfo) *node {
	n := f.live[ino(fi)]
	if n == nil || n.dir != fi.IsDir() {
		n = &node{dir: fi.IsDir(), entries: map[string]*node{}}
		f.live[ino(fi)] = n
	}
	return n
}

// forget drops the node of a name about to disappear, so that a new file
// reusing its inode number starts with nothing durable.
func (f *FS) forget(p string) func() {
	var inos []uint64
	filepath.WalkDir(p, func(_ string, d fs.DirEntry, err error) error {
		if err == nil {
			if fi, err := d.Info(); err == nil {
				inos = append(inos, ino(fi))
			}
		}
		return nil
	})
	return func() {
		for _, i := range inos {
			delete(f.live, i)
		}
	}
}

// step counts a mutating operation; the caller holds f.mu.
func (f *FS) step() error {
	if f.lost {
		return ErrPowerLost
	}
	if f.failAt >= 0 && f.ops >= f.failAt {
		f.lost = true
		return ErrPowerLost
	}
	f.ops++
	return nil
}

// pass passes a failure point; the caller holds f.mu.
func (f *FS) pass(point string) error {
	f.hits[point]++
	if point == f.point && f.hits[point] == f.at {
		f.lost = true
	}
	if f.lost {
		return ErrPowerLost
	}
	return nil
}

// kindOf is the kind of the file name for failure points; the caller holds
// f.mu.
func (f *FS) kindOf(name string) string {
	if f.kind == nil {
		return "file"
	}
	return f.kind(name)
}

// around runs a mutating operation between the failure points before and
// after it; the caller holds f.mu.
func (f *FS) around(point string, do func() error) error {
	if err := f.step(); err != nil {
		return err
	}
	if err := f.pass("before-" + point); err != nil {
		return err
	}
	if err := do(); err != nil {
		return err
	}
	return f.pass("after-" + point)
}

func (f *FS) alive() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lost {
		return ErrPowerLost
	}
	return nil
}

// Open opens a file read-only, as os.Open does: an *os.File, for readers
// that need one (sendfile).
func (f *FS) Open(name string) (*os.File, error) {
	if err := f.alive(); err != nil {
		return nil, err
	}
	return os.Open(name)
}

// OpenFile opens a file. The *File it returns is also an io.ReaderAt and
// io.WriterAt and can Truncate. A file opened only for reading can still
// be synced (a storage engine fsyncs a file it found unsynced after a
// crash).
func (f *FS) OpenFile(name string, flag int, perm fs.FileMode) (atomicfile.File, error) {
	file, err := f.openFile(name, flag, perm)
	if err != nil {
		return nil, err // not a typed nil in an interface
	}
	return file, nil
}

func (f *FS) openFile(name string, flag int, perm fs.FileMode) (*File, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	writing := flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE|os.O_TRUNC) != 0
	if writing {
		if err := f.step(); err != nil {
			return nil, err
		}
		// Read access too, so that Sync can record the content.
		flag = flag&^os.O_WRONLY | os.O_RDWR
	} else if f.lost {
		return nil, ErrPowerLost
	}
	osf, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	fi, err := osf.Stat()
	if err != nil {
		osf.Close()
		return nil, err
	}
	f.nodeFor(fi)
	return &File{fs: f, f: osf, name: name}, nil
}

func (f *FS) SyncDir(dir string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.around("dir-sync", func() error { return f.syncDir(dir) })
}

func (f *FS) syncDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	durable := make(map[string]*node, len(entries))
	for _, e := range entries {
		efi, err := e.Info()
		if err != nil {
			return err
		}
		durable[e.Name()] = f.nodeFor(efi)
	}
	f.nodeFor(fi).entries = durable
	return nil
}

func (f *FS) Rename(oldpath, newpath string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.around(f.kindOf(newpath)+"-rename", func() error { return f.rename(oldpath, newpath) })
}

func (f *FS) rename(oldpath, newpath string) error {
	var forget func()
	if ofi, err := os.Lstat(oldpath); err == nil {
		if nfi, err := os.Lstat(newpath); err == nil && ino(nfi) != ino(ofi) {
			forget = f.forget(newpath)
		}
	}
	if err := os.Rename(oldpath, newpath); err != nil {
		return err
	}
	if forget != nil {
		forget()
	}
	return nil
}

// RenameNoReplace is Rename that fails with fs.ErrExist when newpath
// exists (renameat2 RENAME_NOREPLACE); it passes Rename's failure points.
func (f *FS) RenameNoReplace(oldpath, newpath string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.around(f.kindOf(newpath)+"-rename", func() error {
		err := unix.Renameat2(unix.AT_FDCWD, oldpath, unix.AT_FDCWD, newpath, unix.RENAME_NOREPLACE)
		if err != nil {
			return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
		}
		return nil
	})
}

func (f *FS) Remove(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.step(); err != nil {
		return err
	}
	forget := f.forget(name)
	if err := os.Remove(name); err != nil {
		return err
	}
	forget()
	return nil
}

func (f *FS) RemoveAll(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.step(); err != nil {
		return err
	}
	forget := f.forget(name)
	err := os.RemoveAll(name)
	forget() // what is gone is gone, even if not all of it
	return err
}

func (f *FS) MkdirAll(name string, perm fs.FileMode) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.step(); err != nil {
		return err
	}
	return os.MkdirAll(name, perm)
}

// Truncate changes a file's size by name; like a write, it is durable only
// once the file is synced.
func (f *FS) Truncate(name string, size int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.step(); err != nil {
		return err
	}
	return os.Truncate(name, size)
}

func (f *FS) ReadFile(name string) ([]byte, error) {
	if err := f.alive(); err != nil {
		return nil, err
	}
	return os.ReadFile(name)
}

func (f *FS) ReadDir(name string) ([]fs.DirEntry, error) {
	if err := f.alive(); err != nil {
		return nil, err
	}
	return os.ReadDir(name)
}

func (f *FS) Stat(name string) (fs.FileInfo, error) {
	if err := f.alive(); err != nil {
		return nil, err
	}
	return os.Stat(name)
}
