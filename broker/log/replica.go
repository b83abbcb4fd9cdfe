package log

// What replication needs from a partition's log: a follower appends its
// leader's batches with the offsets the leader gave them (AppendReplica),
// a leader serves its followers up to its log end, flushed or not
// (ReadToEnd, Appended), and its consumers only up to the replicated high
// watermark, below its own flushed end (ReadUpTo).

import (
	"fmt"
	"maps"
	"path/filepath"

	"github.com/tributary-io/tributary/internal/recordbatch"
)

// AppendReplica appends batches copied from the partition's leader,
// keeping their base offsets: a follower's log holds every record at the
// offset the leader gave it. Each batch is validated as Append validates
// it (a leader's bytes are checked like any client's: they went through a
// network), idempotent producers' state is recorded so that this log
// deduplicates retries when it becomes the leader, and no sequence is
// checked (the leader did). A batch that ends at or below the log end is
// one already held and is skipped; one that starts inside the log but
// ends past it means the logs diverged, which is refused
// (ErrOffsetOutOfRange); one that starts past the log end, where the
// leader's log has a gap (compaction, damage no replica held), is written
// with that gap recorded (recordLeadersGap). Batches become readable, and
// count as held for the leader, once flushed.
func (l *Log) AppendReplica(batches [][]byte) (AppendResult, error) {
	plan := make([]recordbatch.Header, len(batches))
	for i, b := range batches {
		h, err := recordbatch.Validate(b, l.cfg.MaxDecompressedBytes)
		if err != nil {
			return AppendResult{}, fmt.Errorf("batch %d of %d from the leader: %w", i+1, len(batches), err)
		}
		plan[i] = h
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return AppendResult{}, ErrClosed
	}
	if l.failed != nil {
		return AppendResult{}, l.failed
	}
	now := l.cfg.Clock()
	res := AppendResult{BaseOffset: -1, LastOffset: l.leo - 1, Duplicate: true, LogAppendTime: now.UnixMilli()}
	for i := range plan {
		h := &plan[i]
		switch {
		case h.NextOffset() <= l.leo:
			continue
		case h.BaseOffset < l.leo:
			return res, fmt.Errorf("%w: the leader's batch [%d, %d] overlaps this log's end %d", ErrOffsetOutOfRange, h.BaseOffset, h.NextOffset()-1, l.leo)
		}
		base, last, err := l.write(batches[i], h, now, true)
		if err != nil {
			return res, err
		}
		if err := l.learnEpoch(batches[i], base); err != nil {
			return res, err
		}
		if res.BaseOffset < 0 {
			res.BaseOffset = base
		}
		res.LastOffset, res.Duplicate = last, false
	}
	return res, nil
}

// ReadUpTo is Read that stops before offset end (a batch boundary), for a
// leader serving consumers up to the replicated high watermark while its
// own flushed end is further. An offset at or past end gives an empty
// Slice.
func (l *Log) ReadUpTo(offset, maxBytes, end int64) (Slice, error) {
	return readRepaired(func() (Slice, error) { return l.readUpToOnce(offset, maxBytes, end) })
}

func (l *Log) readUpToOnce(offset, maxBytes, end int64) (Slice, error) {
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return Slice{}, ErrClosed
	}
	if offset < l.start || offset > l.leo {
		err := fmt.Errorf("%w: offset %d, log holds [%d, %d)", ErrOffsetOutOfRange, offset, l.start, l.leo)
		l.mu.RUnlock()
		return Slice{}, err
	}
	// Readable: below end and below the flushed end, both as of this
	// lock. (Reading "to the flushed end" after letting go of it once
	// returned what a flush had added meanwhile, past end.)
	bounded := end < l.hw
	if offset >= min(end, l.hw) {
		l.mu.RUnlock()
		return Slice{}, nil
	}
	s, offset := l.segmentServing(offset)
	limit := s.size
	if s == l.hwSeg {
		limit = l.hwPos
	}
	entries, gaps := s.index, s.gaps
	s.ref()
	l.mu.RUnlock()

	if bounded {
		// end may lie in this segment: stop at the batch starting there.
		readable := limit
		var err error
		limit, err = s.positionOf(entries, end, limit)
		if err != nil {
			err = l.checkRange(s, gaps, 0, 0, readable, err)
			s.unref()
			return Slice{}, err
		}
		if limit == 0 {
			s.unref()
			return Slice{}, nil
		}
	}
	pos, stop, err := s.readRange(entries, offset, limit, maxBytes)
	err = l.checkRange(s, gaps, pos, stop, limit, err)
	if err != nil {
		s.unref()
		return Slice{}, err
	}
	f, err := s.f.file()
	if err != nil {
		s.unref()
		return Slice{}, err
	}
	return Slice{File: f, Pos: pos, Size: stop - pos, release: s.releaser()}, nil
}

// positionOf is the byte position of the first batch at or past offset
// in the segment's first limit bytes (limit when there is none).
func (s *segment) positionOf(entries []indexEntry, offset, limit int64) (int64, error) {
	if offset <= s.base {
		return 0, nil
	}
	r := readerPool.Get().(*reader)
	defer func() { r.f = nil; readerPool.Put(r) }()
	r.f, r.size, r.bufLen = s.f, limit, 0
	pos := int64(lookup(entries, uint32(offset-s.base)).pos)
	return s.scanTo(r, pos, limit, func(h recordbatch.Header) bool { return h.BaseOffset >= offset })
}

// ReadToEnd is Read up to the log end offset rather than the high
// watermark: a leader serves its followers what it appended before its own
// fsync covers it, so that their copy and fsync overlap its own. What it
// returns may yet be lost by a crash of this broker; the replicated high
// watermark, which counts this log's flushed end, never covers such
// records, and a follower holding them past a returned leader's end is cut
// back by leader epoch. An offset at the log end gives an empty Slice.
func (l *Log) ReadToEnd(offset, maxBytes int64) (Slice, error) {
	return l.read(offset, maxBytes, true)
}

// Appended returns a channel closed at the next append, for a leader's
// Fetch from a follower waiting on records not flushed yet (Changed waits
// for the flush). It is made only when asked for, so appends nobody waits
// on cost nothing.
func (l *Log) Appended() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.appended == nil {
		l.appended = make(chan struct{})
	}
	return l.appended
}

// recordLeadersGap records in s, the active segment, that the offsets
// [from, to) are missing from the leader's log too (quarantined damage no
// replica held, or compaction), before the batch after them is written:
// every later scan of this log then accepts the jump, as it does the
// leader's. Call with mu held.
func (l *Log) recordLeadersGap(s *segment, from, to int64) error {
	gaps := maps.Clone(s.gaps) // readers use the map they took without the lock
	if gaps == nil {
		gaps = map[int64]int64{}
	}
	gaps[from] = to
	if err := writeFileAtomic(l.fs, l.dir, filepath.Base(gapsPath(l.dir, s.base)), encodeGaps(gaps)); err != nil {
		return fmt.Errorf("recording the leader's gap [%d, %d) in %s: %w", from, to, s.path, err)
	}
	s.gaps = gaps
	return nil
}
