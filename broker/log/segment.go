package log

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// A segment is one file of consecutive batches, named by the offset of its
// first batch, with its sparse index. Sealed segments keep one read-only
// descriptor, shared with the Slices handed to readers; the active segment
// also has a writer for the data and one for the index, kept until the
// segment has been rolled and its last bytes fsynced.
type segment struct {
	base      int64
	fs        FS
	path      string
	indexPath string

	f    *segFile // read-only, opened on demand (segfile.go); Slices point at it
	refs atomic.Int32

	// wmu makes sync and seal exclusive: a flush fsyncs the writers
	// outside Log.mu, and a seal must not close them underneath it. The
	// seal that meets it is retention's: a segment rolled while clean is
	// queued for the next flush (maybeRoll) although the high watermark
	// already covers it, so ApplyRetention may delete it mid-fsync. Its
	// data is going anyway; sync finds the writers gone and does nothing.
	wmu sync.Mutex

	// Guarded by Log.mu (and by wmu where sync and seal meet).
	w         File // data writer, nil once sealed
	idx       File // index writer, nil once sealed
	size      int64
	next      int64 // offset after the last batch
	maxTs     int64 // largest batch MaxTimestamp, -1 when none
	firstTime time.Time
	index     []indexEntry
	gaps      map[int64]int64 // offsets lost to repaired damage: from -> to (exclusive); see gaps.go
	dirty     bool            // has bytes not yet fsynced
	// idxDirty: the index file has writes not yet fsynced. A flush fsyncs
	// the data of the active segment only; its index is rebuilt by the
	// scan after a crash (recovery starts at the checkpoint's segment), so
	// it is fsynced when the segment is sealed, rolled, or before a
	// checkpoint (syncIndex), not on every flush.
	idxDirty atomic.Bool
	// idxPending holds the encoded entries added since the index file was
	// last written, and idxLen the file's length in bytes; idxMu guards
	// both. Entries reach the file when it is fsynced (syncIndexLocked),
	// not one pwrite per indexed append: with batches past the index
	// interval that was a second syscall on every produce request, for a
	// file nothing reads while the segment is active (reads use index, and
	// Open rebuilds the active segment's entries from its batches).
	idxMu      sync.Mutex
	idxPending []byte
	idxLen     int64
	indexStale bool // the index file on disk differs from index

	// aborted lists the transactions aborted by markers in this segment
	// (txnindex.go), guarded by Log.mu; txnW writes NNN.txnindex and, like
	// w, is set and closed under wmu as well; txnNew says its directory
	// entry is not yet fsynced.
	aborted []AbortedTxn
	txnW    File
	txnNew  bool
	// txnDirty: txnW has entries not yet fsynced (set by addAborted), so
	// a flush fsyncs the aborted index only when it carries a new abort
	// marker, not on every flush of a segment that once held one.
	txnDirty atomic.Bool

	// parked: the active segment's writers were closed by ReleaseFiles
	// (release.go) and are reopened by the next append; guarded like w.
	parked bool

	// checked holds the stretches known to hold valid batches: appended
	// or scanned by this process, or CRC-checked by a read (readcheck.go).
	checked *checkedRanges
}

func segmentPaths(dir string, base int64) (logPath, indexPath string) {
	name := fmt.Sprintf("%020d", base)
	return filepath.Join(dir, name+".log"), filepath.Join(dir, name+".index")
}

// openSegment opens an existing segment file read-only.
func openSegment(fsys FS, dir string, base int64) (*segment, error) {
	s := &segment{fs: fsys, base: base, next: base, maxTs: -1, checked: &checkedRanges{}}
	s.path, s.indexPath = segmentPaths(dir, base)
	f, fi, err := openSegFile(fsys, dir, s.path, &s.refs)
	if err != nil {
		return nil, err
	}
	s.f, s.size = f, fi.Size()
	if s.gaps, err = readGaps(fsys, gapsPath(dir, base)); err != nil {
		f.Close()
		return nil, err
	}
	s.refs.Store(1)
	return s, nil
}

// createSegment creates an empty segment ready for appends. It refuses to
// overwrite an existing file: offsets only grow, so one would mean a bug.
func createSegment(fsys FS, dir string, base int64) (*segment, error) {
	logPath, _ := segmentPaths(dir, base)
	f, err := fsys.OpenFile(logPath, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	f.Close()
	s, err := openSegment(fsys, dir, base)
	if err != nil {
		return nil, err
	}
	if err := s.openWriters(); err != nil {
		s.close()
		fsys.Remove(logPath)
		return nil, err
	}
	return s, nil
}

// openWriters makes s appendable and writes its whole in-memory index to
// the index file, so that later entries can be written at their position.
func (s *segment) openWriters() error {
	w, err := s.fs.OpenFile(s.path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	idx, err := s.fs.OpenFile(s.indexPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		w.Close()
		return err
	}
	if len(s.index) > 0 {
		if _, err := idx.WriteAt(encodeIndex(s.index), 0); err != nil {
			w.Close()
			idx.Close()
			return err
		}
	}
	s.wmu.Lock()
	s.w, s.idx, s.indexStale, s.parked = w, idx, false, false
	s.idxMu.Lock()
	s.idxPending, s.idxLen = s.idxPending[:0], int64(len(s.index))*indexEntrySize
	s.idxMu.Unlock()
	s.wmu.Unlock()
	s.idxDirty.Store(true)  // O_TRUNC and rewritten: durable at the next syncIndex
	s.f.sealed.Store(false) // the active segment keeps its descriptor
	return nil
}

// indexEntryFor returns the entry to add for a batch at pos, if the index
// interval has passed since the last entry.
func (s *segment) indexEntryFor(pos, base, maxTs, interval int64) (indexEntry, bool) {
	if n := len(s.index); n > 0 && pos-int64(s.index[n-1].pos) < interval {
		return indexEntry{}, false
	}
	return indexEntry{rel: uint32(base - s.base), pos: uint32(pos), maxTs: maxTs}, true
}

// maxPendingIndex bounds the entries kept for the index file between its
// fsyncs (a checkpoint every few seconds under load, but a log flushed at
// long intervals could gather them for hours): past it, the append that
// adds one writes them all.
const maxPendingIndex = 64 << 10

// addIndexEntry adds e, for a batch just written, to s.index and to the
// entries the index file is still to get. Call with Log.mu held, on the
// active segment: its writers stay open while Log.mu is held.
func (s *segment) addIndexEntry(e indexEntry) error {
	s.index = append(s.index, e)
	s.idxMu.Lock()
	s.idxPending = e.appendTo(s.idxPending)
	full := len(s.idxPending) >= maxPendingIndex
	s.idxMu.Unlock()
	// Set once the entry is pending: a syncIndex running meanwhile either
	// writes the entry or finds the flag set again for the next one.
	s.idxDirty.Store(true)
	if full {
		return s.writePendingIndex()
	}
	return nil
}

// writePendingIndex writes the entries added since the last call at the
// end of the index file. Call with wmu or Log.mu held (seal and release,
// which close the writers, hold both), on a segment with writers; the
// entries stay pending if the write fails.
func (s *segment) writePendingIndex() error {
	s.idxMu.Lock()
	defer s.idxMu.Unlock()
	if len(s.idxPending) == 0 {
		return nil
	}
	n, err := s.idx.WriteAt(s.idxPending, s.idxLen)
	s.idxLen += int64(n)
	s.idxPending = s.idxPending[:copy(s.idxPending, s.idxPending[n:])]
	if err != nil {
		return fmt.Errorf("write %s: %w", s.indexPath, err)
	}
	return nil
}

// sync fsyncs the segment's data writer: what an acknowledgement and the
// high watermark need. The index is not needed to read the data back after
// a crash, so its fsync (a second journal commit per flush, which an
// acks=all request would wait for) is left to syncIndex.
func (s *segment) sync() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.w == nil {
		return nil
	}
	// The aborted index first, when it has a new entry: a durable marker
	// has a durable entry. Open would rebuild the active segment's entries
	// anyway (it replays the headers after the producer snapshot, taken at
	// roll and close), so this is belt and braces that costs only the rare
	// flush that carries an abort marker.
	if s.txnDirty.Swap(false) {
		if err := s.syncTxnIndex(); err != nil {
			s.txnDirty.Store(true)
			return err
		}
	}
	if err := s.w.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", s.path, err)
	}
	return nil
}

// syncIndex fsyncs the index writer if it has unsynced writes. Recovery
// trusts the index of every segment before the one holding the recovery
// checkpoint (and, after a clean shutdown, of all), so it runs for a
// segment that has rolled, before a checkpoint is written, and at seal.
func (s *segment) syncIndex() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.syncIndexLocked()
}

func (s *segment) syncIndexLocked() error {
	if s.idx == nil || !s.idxDirty.Swap(false) {
		return nil
	}
	if err := s.writePendingIndex(); err != nil {
		s.idxDirty.Store(true)
		return err
	}
	if err := s.idx.Sync(); err != nil {
		s.idxDirty.Store(true)
		return fmt.Errorf("fsync %s: %w", s.indexPath, err)
	}
	return nil
}

// seal closes the writers of a segment that will never be appended to again.
func (s *segment) seal() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.w == nil {
		if s.parked { // released clean (release.go): nothing to sync or close
			s.parked = false
			s.f.markSealed()
		}
		return nil
	}
	err := errors.Join(s.syncIndexLocked(), s.syncTxnIndex(), s.w.Close(), s.idx.Close())
	if s.txnW != nil {
		err = errors.Join(err, s.txnW.Close())
	}
	s.w, s.idx, s.txnW = nil, nil, nil
	s.dropPendingIndex()
	s.f.markSealed()
	return err
}

// dropPendingIndex frees the pending entries' buffer once the index writer
// is closed: written, or after a failed write left out, and Open extends an
// index that stops short of its segment by walking the batches after it.
func (s *segment) dropPendingIndex() {
	s.idxMu.Lock()
	s.idxPending = nil
	s.idxMu.Unlock()
}

func (s *segment) ref() { s.refs.Add(1) }

// unref drops a reference; the last one closes the read descriptor.
func (s *segment) unref() {
	if s.refs.Add(-1) == 0 {
		s.f.Close()
	}
}

// close releases the Log's own hold on s: its writers now, its read
// descriptor once no Slice holds it.
func (s *segment) close() error {
	err := s.seal()
	s.f.released.Store(true) // what readers still hold stays open for them
	s.unref()
	return err
}

// remove unlinks the segment's files and releases the Log's hold; Slices
// already handed out keep reading the unlinked file.
func (s *segment) remove() error {
	err := s.close()
	dir := filepath.Dir(s.path)
	for _, p := range []string{s.path, s.indexPath, gapsPath(dir, s.base), txnIndexPath(dir, s.base)} {
		if rerr := s.fs.Remove(p); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			err = errors.Join(err, rerr)
		}
	}
	return err
}

// releaser returns an idempotent function dropping one reference, for a
// Slice: copies of a Slice may each call Release.
func (s *segment) releaser() func() {
	var once sync.Once
	return func() { once.Do(s.unref) }
}

// A reader serves small reads of one segment from a window of the file, so
// walking the headers of small batches costs one pread per window rather
// than one per batch.
type reader struct {
	f      io.ReaderAt
	size   int64 // bytes of the file the reader may see
	buf    []byte
	bufPos int64
	bufLen int
}

const (
	readWindow = 8 << 10  // for Read's short forward scans
	scanWindow = 64 << 10 // for recovery's sequential scans
)

var readerPool = sync.Pool{New: func() any { return &reader{buf: make([]byte, readWindow)} }}

func newReader(f io.ReaderAt, size int64, window int) *reader {
	return &reader{f: f, size: size, buf: make([]byte, window)}
}

// peek returns the n bytes at pos (n at most the window size), or
// io.ErrUnexpectedEOF when they extend past the reader's size.
func (r *reader) peek(pos int64, n int) ([]byte, error) {
	if pos < 0 || n > len(r.buf) || pos+int64(n) > r.size {
		return nil, io.ErrUnexpectedEOF
	}
	if pos >= r.bufPos && pos+int64(n) <= r.bufPos+int64(r.bufLen) {
		off := pos - r.bufPos
		return r.buf[off : off+int64(n)], nil
	}
	want := min(int64(len(r.buf)), r.size-pos)
	got, err := r.f.ReadAt(r.buf[:want], pos)
	if int64(got) < want {
		r.bufLen = 0
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	r.bufPos, r.bufLen = pos, got
	return r.buf[:n], nil
}
