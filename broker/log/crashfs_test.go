package log

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// crashFS is a file system that remembers what is durable and can simulate
// a power loss. Files live in a real directory (so that reads, and the
// *os.File of Slices, see everything written, as they would through the
// page cache); beside that it keeps, per file, the content as of its last
// fsync and, per directory, the entries as of its last directory fsync. A
// power loss keeps exactly that: unsynced writes vanish, and so do
// creations, renames and removals not followed by a directory fsync. That is
// the strictest behaviour POSIX allows, which is what a durability test
// wants.
//
// Failure points name the sync boundaries: "before-" or "after-" followed by
// the operation: "segment-sync", "index-sync", "checkpoint-sync",
// "marker-sync", "gaps-sync", "other-sync" (a file fsync, by file kind; a
// quarantine file is "other"), "segment-rename", "gaps-rename",
// "checkpoint-rename", "marker-rename", "other-rename" and "dir-sync"; for
// the cleaner, "cleaned-sync" (a NNN.log.cleaned or NNN.gaps.cleaned file),
// "swap-marker-sync" and "swap-marker-rename" (the commit of a swap). Armed
// with a point and a count, the file system loses power at that hit of that
// point: the durable image is taken there and every later operation fails.
type crashFS struct {
	OSFS
	root string

	mu         sync.Mutex
	nextID     int
	ids        map[string]int            // live path -> file identity
	content    map[int][]byte            // file identity -> content at its last fsync
	dirs       map[string]map[string]int // directory -> entries at its last fsync
	point      string
	at         int
	hits       map[string]int
	image      map[string][]byte // what survives, once power is lost
	imageDirs  map[string]bool
	powerIsOut bool
}

var errPowerLost = errors.New("crashfs: power lost")

// newCrashFS returns a crash file system over root; files already in root
// count as durable.
func newCrashFS(root string) *crashFS {
	c := &crashFS{root: root, ids: map[string]int{}, content: map[int][]byte{},
		dirs: map[string]map[string]int{}, hits: map[string]int{}}
	ents, _ := os.ReadDir(root)
	if ents != nil {
		c.dirs[root] = map[string]int{}
	}
	for _, e := range ents {
		p := filepath.Join(root, e.Name())
		b, err := os.ReadFile(p)
		if err != nil || e.IsDir() {
			continue
		}
		c.nextID++
		c.ids[p], c.content[c.nextID], c.dirs[root][e.Name()] = c.nextID, b, c.nextID
	}
	return c
}

// arm makes the file system lose power at the n-th hit of point.
func (c *crashFS) arm(point string, n int) { c.point, c.at = point, n }

// crashed reports whether the armed point was reached.
func (c *crashFS) crashed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.powerIsOut
}

// reach counts a hit of point and loses power if it is the armed one.
// Call with mu held.
func (c *crashFS) reach(point string) {
	c.hits[point]++
	if point == c.point && c.hits[point] == c.at && !c.powerIsOut {
		c.image, c.imageDirs = c.durableImage()
		c.powerIsOut = true
	}
}

func (c *crashFS) durableImage() (map[string][]byte, map[string]bool) {
	img, dirs := map[string][]byte{}, map[string]bool{}
	for dir, ents := range c.dirs {
		dirs[dir] = true
		for name, id := range ents {
			img[filepath.Join(dir, name)] = c.content[id]
		}
	}
	return img, dirs
}

// powerLoss replaces the real directory by what survived, as a reboot
// would find it. Without an armed point reached, it loses power now.
func (c *crashFS) powerLoss() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.powerIsOut {
		c.image, c.imageDirs = c.durableImage()
		c.powerIsOut = true
	}
	if err := os.RemoveAll(c.root); err != nil {
		return err
	}
	if err := os.MkdirAll(c.root, 0o755); err != nil {
		return err
	}
	for dir := range c.imageDirs {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	for p, b := range c.image {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

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

// op runs a mutating operation at the failure points before and after it.
func (c *crashFS) op(point string, do func() error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reach("before-" + point)
	if c.powerIsOut {
		return errPowerLost
	}
	if err := do(); err != nil {
		return err
	}
	c.reach("after-" + point)
	if c.powerIsOut {
		return errPowerLost
	}
	return nil
}

// mutate runs an operation that has no failure point of its own.
func (c *crashFS) mutate(do func() error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.powerIsOut {
		return errPowerLost
	}
	return do()
}

func (c *crashFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	var f *os.File
	err := c.mutate(func() error {
		_, statErr := os.Stat(name)
		var err error
		if f, err = os.OpenFile(name, flag, perm); err != nil {
			return err
		}
		if _, ok := c.ids[name]; !ok || errors.Is(statErr, os.ErrNotExist) {
			c.nextID++
			c.ids[name] = c.nextID
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &crashFile{f: f, fs: c, name: name, id: c.ids[name]}, nil
}

func (c *crashFS) Rename(oldpath, newpath string) error {
	return c.op(kind(newpath)+"-rename", func() error {
		if err := os.Rename(oldpath, newpath); err != nil {
			return err
		}
		c.ids[newpath] = c.ids[oldpath]
		delete(c.ids, oldpath)
		return nil
	})
}

func (c *crashFS) Remove(name string) error {
	return c.mutate(func() error {
		delete(c.ids, name)
		return os.Remove(name)
	})
}

func (c *crashFS) RemoveAll(path string) error {
	return c.mutate(func() error { return os.RemoveAll(path) })
}

func (c *crashFS) Truncate(name string, size int64) error {
	return c.mutate(func() error { return os.Truncate(name, size) })
}

// MkdirAll is durable at once: the tests create the directory before the
// workload, so its own durability is not what they check.
func (c *crashFS) MkdirAll(path string, perm os.FileMode) error {
	return c.mutate(func() error {
		if err := os.MkdirAll(path, perm); err != nil {
			return err
		}
		if c.dirs[path] == nil {
			c.dirs[path] = map[string]int{}
		}
		return nil
	})
}

func (c *crashFS) SyncDir(dir string) error {
	return c.op("dir-sync", func() error {
		ents := map[string]int{}
		for p, id := range c.ids {
			if filepath.Dir(p) == dir {
				ents[filepath.Base(p)] = id
			}
		}
		c.dirs[dir] = ents
		return nil
	})
}

type crashFile struct {
	f    *os.File
	fs   *crashFS
	name string
	id   int
}

func (f *crashFile) ReadAt(p []byte, off int64) (int, error) { return f.f.ReadAt(p, off) }

func (f *crashFile) Write(p []byte) (n int, err error) {
	err = f.fs.mutate(func() error { n, err = f.f.Write(p); return err })
	return n, err
}

func (f *crashFile) WriteAt(p []byte, off int64) (n int, err error) {
	err = f.fs.mutate(func() error { n, err = f.f.WriteAt(p, off); return err })
	return n, err
}

func (f *crashFile) Truncate(size int64) error {
	return f.fs.mutate(func() error { return f.f.Truncate(size) })
}

func (f *crashFile) Sync() error {
	return f.fs.op(kind(f.name)+"-sync", func() error {
		// Read through the name: writers are opened write-only. Files are
		// only renamed after their last fsync, so the name still holds.
		b, err := os.ReadFile(f.name)
		if err != nil {
			return fmt.Errorf("crashfs: reading %s to sync it: %w", f.name, err)
		}
		f.fs.content[f.id] = b
		return nil
	})
}

func (f *crashFile) Close() error { return f.f.Close() }
