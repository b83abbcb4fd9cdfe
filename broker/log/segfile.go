package log

// Descriptors of sealed segments. A log used to hold one read descriptor
// per segment for as long as it was open, so a partition that rolled a
// segment per batch (segment.ms=1, or a tiny segment.bytes) held thousands
// of descriptors and starved every other partition of the process (produce
// elsewhere failed with EMFILE). Now a log keeps at most
// maxOpenSealedSegments descriptors of sealed segments open, closing the
// least recently read one that no reader holds, and reopens a segment on
// its next read. The active segment, and any segment a Slice or a reader
// holds (segment.refs above the log's own), always keeps its descriptor.

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
)

// maxOpenSealedSegments bounds the sealed-segment descriptors one log
// keeps open: enough for consumers reading a few places of the log at once.
const maxOpenSealedSegments = 16

// segFile is a segment's read-only file, opened on demand.
type segFile struct {
	fs    FS
	path  string
	refs  *atomic.Int32 // the segment's references; 1: the log's own only
	cache *fileCache
	// id is the file first opened: a reopen that finds another file at
	// the path (the cleaner or a repair swapped one in) fails instead of
	// reading it with the old segment's index.
	id os.FileInfo

	mu     sync.RWMutex
	f      *os.File // nil while closed for idleness
	closed bool     // closed for good: the segment is gone

	sealed atomic.Bool // no writer: the descriptor may be closed when idle
	// released: the log let go of the segment (removed, replaced, closed);
	// refs are then readers only, and the descriptor stays theirs.
	released atomic.Bool
	lastUse  atomic.Uint64 // the cache's tick at the last read
}

// openSegFile opens path and registers it with the log of dir.
func openSegFile(fsys FS, dir, path string, refs *atomic.Int32) (*segFile, os.FileInfo, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	sf := &segFile{fs: fsys, path: path, refs: refs, cache: fileCacheOf(dir), f: f, id: fi}
	sf.sealed.Store(true) // until openWriters says otherwise
	sf.lastUse.Store(sf.cache.tick.Add(1))
	sf.cache.opened(sf)
	return sf, fi, nil
}

// file returns the open descriptor, reopening it if it was closed for
// idleness. A caller that keeps it (a Slice) holds a segment reference,
// which keeps it open.
func (sf *segFile) file() (*os.File, error) {
	sf.lastUse.Store(sf.cache.tick.Add(1))
	sf.mu.RLock()
	f := sf.f
	sf.mu.RUnlock()
	if f != nil {
		return f, nil
	}
	sf.mu.Lock()
	if sf.f == nil {
		if sf.closed {
			sf.mu.Unlock()
			return nil, os.ErrClosed
		}
		nf, err := sf.fs.Open(sf.path)
		if err != nil {
			sf.mu.Unlock()
			return nil, err
		}
		if fi, err := nf.Stat(); err != nil || !os.SameFile(fi, sf.id) {
			nf.Close()
			sf.mu.Unlock()
			return nil, fmt.Errorf("segment %s was replaced while its descriptor was closed: read again", sf.path)
		}
		sf.f = nf
	}
	f = sf.f
	sf.mu.Unlock()
	sf.cache.opened(sf)
	return f, nil
}

// ReadAt reads from the file, reopening it if needed. The read lock keeps
// an idle close from landing in the middle of the read.
func (sf *segFile) ReadAt(p []byte, off int64) (int, error) {
	for {
		if _, err := sf.file(); err != nil {
			return 0, err
		}
		sf.mu.RLock()
		if sf.f != nil {
			n, err := sf.f.ReadAt(p, off)
			sf.mu.RUnlock()
			return n, err
		}
		sf.mu.RUnlock() // closed for idleness between the two: again
	}
}

// Stat describes the file.
func (sf *segFile) Stat() (os.FileInfo, error) {
	f, err := sf.file()
	if err != nil {
		return nil, err
	}
	return f.Stat()
}

// Close closes the file for good (the segment's last reference went).
func (sf *segFile) Close() error {
	sf.mu.Lock()
	f := sf.f
	sf.f, sf.closed = nil, true
	sf.mu.Unlock()
	sf.cache.forget(sf)
	if f == nil {
		return nil
	}
	return f.Close()
}

// closeIdle closes the descriptor if nobody but the log holds the segment
// and nobody is reading it; it reports whether it did.
func (sf *segFile) closeIdle() bool {
	if !sf.idle() || !sf.mu.TryLock() {
		return false
	}
	defer sf.mu.Unlock()
	if sf.f == nil || !sf.idle() {
		return false
	}
	sf.f.Close()
	sf.f = nil
	return true
}

// idle: sealed, still the log's, and held by nobody else.
func (sf *segFile) idle() bool {
	return sf.sealed.Load() && !sf.released.Load() && sf.refs.Load() <= 1
}

// fileCache is one log directory's open sealed-segment files.
type fileCache struct {
	tick atomic.Uint64
	mu   sync.Mutex
	open map[*segFile]struct{}
}

var fileCaches struct {
	mu sync.Mutex
	m  map[string]*fileCache
}

// fileCacheOf is the cache of a log directory. The logs of one directory
// (a log closed and opened again) share it.
func fileCacheOf(dir string) *fileCache {
	fileCaches.mu.Lock()
	defer fileCaches.mu.Unlock()
	if fileCaches.m == nil {
		fileCaches.m = map[string]*fileCache{}
	}
	c := fileCaches.m[dir]
	if c == nil {
		c = &fileCache{open: map[*segFile]struct{}{}}
		fileCaches.m[dir] = c
	}
	return c
}

// opened records that sf holds a descriptor, and closes the least recently
// read idle sealed files past the bound.
func (c *fileCache) opened(sf *segFile) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.open[sf] = struct{}{}
	c.trimLocked(sf)
}

// sealed is called when sf's segment lost its writers: its descriptor may
// now go, and so may others' past the bound.
func (sf *segFile) markSealed() {
	sf.sealed.Store(true)
	sf.cache.mu.Lock()
	defer sf.cache.mu.Unlock()
	sf.cache.trimLocked(nil)
}

// trimLocked closes idle sealed files past the bound, least recently read
// first, never keep.
func (c *fileCache) trimLocked(keep *segFile) {
	var busy map[*segFile]bool
	for len(c.open) > maxOpenSealedSegments {
		var victim *segFile
		for o := range c.open {
			if o != keep && !busy[o] && o.idle() && (victim == nil || o.lastUse.Load() < victim.lastUse.Load()) {
				victim = o
			}
		}
		if victim == nil {
			return // everything open is in use: readers bound it
		}
		if !victim.closeIdle() {
			if busy == nil {
				busy = map[*segFile]bool{}
			}
			busy[victim] = true
			continue
		}
		delete(c.open, victim)
	}
}

// forget drops a file closed for good. (The table of caches keeps an
// entry per directory ever opened: a few words each.)
func (c *fileCache) forget(sf *segFile) {
	c.mu.Lock()
	delete(c.open, sf)
	c.mu.Unlock()
}
