package log

// Truncation, for a follower whose log diverged from its new leader's: the
// records at and past the divergence point were never replicated (a leader
// that lost its leadership had written them alone) and go, so that the
// follower copies the leader's records at those offsets instead.

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/tributary-io/tributary/internal/recordbatch"
)

// TruncateTo removes every batch holding an offset at or past offset and
// returns the new log end offset: offset, or less when a batch straddles
// it (the whole batch goes, the leader's copy replaces it). An offset at
// or past the log end changes nothing.
//
// What the log keeps stays consistent: indexes, gaps, idempotent producer
// state (reloaded from a snapshot at or below the new end and the batch
// headers after it), the cleaner checkpoint, the leader-epoch cache and
// the recovery checkpoint. The truncation is durable when TruncateTo
// returns: a crash never brings the removed batches back. A crash during it
// leaves the log cut at the new end or not at all past it (the data is cut
// first, then the epochs, so a log never holds records of epochs its
// cache has forgotten), with recovery at the next Open cleaning up segments
// a crash left behind.
func (l *Log) TruncateTo(offset int64) (int64, error) {
	l.cleanMu.Lock() // no cleaning swaps segments meanwhile
	defer l.cleanMu.Unlock()
	l.repairMu.Lock() // nor the scrubber or retention
	defer l.repairMu.Unlock()
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	// Flush first so that no segment is half-synced: after this the
	// high watermark is the log end and nothing is dirty.
	if err := l.flushLocked(); err != nil {
		return 0, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, ErrClosed
	}
	if l.failed != nil {
		return 0, l.failed
	}
	if offset >= l.leo {
		return l.leo, nil
	}
	old := l.leo
	err := l.truncateData(max(offset, 0))
	if err != nil {
		l.failed = fmt.Errorf("log %s failed: truncating to offset %d: %w", l.dir, offset, err)
		l.logger.Error("partition log stopped taking appends", "dir", l.dir, "err", l.failed)
		l.wake()
		return 0, l.failed
	}
	l.logger.Warn("truncated partition log: its records past the new end diverged from the leader's",
		"dir", l.dir, "requested_offset", offset, "new_log_end_offset", l.leo, "old_log_end_offset", old)
	l.wake()
	return l.leo, nil
}

// truncateData does TruncateTo's work. Call with every lock held.
func (l *Log) truncateData(offset int64) error {
	var keep *segment // the new active segment
	var drop []*segment
	cutPos := int64(-1) // where keep is cut; -1: kept whole
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > offset }) - 1
	if i >= 0 {
		s := l.segs[i]
		pos, err := s.firstBatchEndingAfter(offset)
		if err != nil {
			return err
		}
		switch {
		case pos > 0 || i == 0:
			keep, cutPos, drop = s, pos, l.segs[i+1:]
		default:
			keep, drop = l.segs[i-1], l.segs[i:]
		}
	}
	if keep == nil {
		// offset is below the first segment: nothing survives, start over
		// with an empty segment there.
		ns, err := createSegment(l.fs, l.dir, offset)
		if err != nil {
			return fmt.Errorf("creating the segment at offset %d: %w", offset, err)
		}
		keep, drop = ns, l.segs
		l.start = offset
		if err := l.fs.Remove(filepath.Join(l.dir, startOffsetFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if cutPos >= 0 {
		if err := l.cutSegment(keep, cutPos); err != nil {
			return err
		}
	}
	for _, s := range drop {
		if s != keep {
			if err := s.remove(); err != nil {
				return err
			}
		}
	}
	kept := make([]*segment, 0, len(l.segs))
	for _, s := range l.segs {
		if s.base < keep.base {
			kept = append(kept, s)
		}
	}
	l.segs = append(kept, keep)
	if keep.w == nil {
		if err := keep.openWriters(); err != nil {
			return err
		}
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return err
	}
	l.active = keep
	l.leo = keep.next
	l.hw, l.hwSeg, l.hwPos, l.flushTarget = l.leo, keep, keep.size, l.leo
	for _, s := range l.unsealed {
		if s != keep {
			s.seal() // flushed before the cut: nothing left to sync
		}
	}
	l.dirty, l.dirDirty, l.unsealed = nil, false, nil
	l.size = 0
	for _, s := range l.segs {
		l.size += s.size
	}
	l.start = min(l.start, l.leo)

	// The data is cut: now what describes it.
	if err := l.truncateEpochs(l.leo); err != nil {
		return err
	}
	if err := writeFileAtomic(l.fs, l.dir, checkpointFile, []byte(strconv.FormatInt(l.leo, 10)+"\n")); err != nil {
		return fmt.Errorf("write recovery checkpoint: %w", err)
	}
	if l.cleaned > l.leo {
		l.cleaned = l.leo
		if err := writeFileAtomic(l.fs, l.dir, cleanerCheckpointFile, fmt.Appendf(nil, "%d\n", l.leo)); err != nil {
			return err
		}
	}
	if offsets, err := listProducerSnapshots(l.fs, l.dir); err == nil {
		for _, off := range offsets {
			if off > l.leo {
				l.fs.Remove(snapshotPath(l.dir, off))
			}
		}
	}
	return l.loadProducerState()
}

// firstBatchEndingAfter is the byte position of the first batch of s
// holding offsets past offset (s.size when none does).
func (s *segment) firstBatchEndingAfter(offset int64) (int64, error) {
	pos := int64(0)
	if len(s.index) > 0 && offset > s.base {
		pos = int64(lookup(s.index, uint32(offset-s.base)).pos)
	}
	r := newReader(s.f, s.size, readWindow)
	return s.scanTo(r, pos, s.size, func(h recordbatch.Header) bool { return h.NextOffset() > offset })
}

// scanTo walks the batch headers in the segment's bytes [pos, limit), read
// through r, and returns the position of the first batch for which found
// holds (limit when none does).
func (s *segment) scanTo(r *reader, pos, limit int64, found func(recordbatch.Header) bool) (int64, error) {
	for pos < limit {
		b, err := r.peek(pos, recordbatch.HeaderSize)
		if err != nil {
			return 0, fmt.Errorf("segment %s: batch header at byte %d: %w", s.path, pos, err)
		}
		h := recordbatch.ParseHeader(b)
		if h.Length < recordbatch.MinLength {
			return 0, fmt.Errorf("segment %s: %w: length %d at byte %d", s.path, ErrCorruptBatch, h.Length, pos)
		}
		if found(h) {
			return pos, nil
		}
		pos += h.Size()
	}
	return limit, nil
}

// cutSegment cuts s to its first pos bytes, durably, and makes its index,
// gaps, next offset and max timestamp describe what is left.
func (l *Log) cutSegment(s *segment, pos int64) error {
	if err := s.seal(); err != nil {
		return err
	}
	if err := l.fs.Truncate(s.path, pos); err != nil {
		return err
	}
	if err := syncFile(l.fs, s.path); err != nil {
		return err
	}
	n := sort.Search(len(s.index), func(i int) bool { return int64(s.index[i].pos) >= pos })
	s.index = s.index[:n]
	s.size = pos
	s.checked.clip(pos)
	from, next := int64(0), s.base
	s.maxTs = -1
	if n > 0 {
		last := s.index[n-1]
		from, next, s.maxTs = int64(last.pos), s.base+int64(last.rel), last.maxTs
	}
	if _, p := s.walk(newReader(s.f, pos, scanWindow), from, next, l.cfg.IndexIntervalBytes, false, nil); p != nil {
		return fmt.Errorf("segment %s after truncation: %s", s.path, p)
	}
	gaps := len(s.gaps)
	s.gaps = maps.Clone(s.gaps) // reads use the map they took without the log's lock
	for from := range s.gaps {
		if from >= s.next {
			delete(s.gaps, from)
		}
	}
	if len(s.gaps) != gaps {
		path := gapsPath(l.dir, s.base)
		var err error
		if len(s.gaps) == 0 {
			err = l.fs.Remove(path)
		} else {
			err = writeFileAtomic(l.fs, l.dir, filepath.Base(path), encodeGaps(s.gaps))
		}
		if err != nil {
			return err
		}
	}
	return nil
}
