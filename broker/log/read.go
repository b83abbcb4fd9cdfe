package log

// The read side of a Log: finding the bytes of a fetch (Read) and of a
// timestamp lookup (OffsetForTime). Both hold the log's lock only to pick a
// segment and its index, then read the file without it.

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/tributary-io/tributary/internal/recordbatch"
)

// Read returns whole batches starting with the one that contains offset,
// from one segment, up to the high watermark and at most maxBytes, except
// that the first batch is always returned whole even when it alone is larger
// than maxBytes. An offset in [HighWatermark, LogEndOffset] gives an empty
// Slice (File nil) and no error: the data exists, or soon will, but is not
// flushed yet. Offsets below StartOffset or above LogEndOffset give
// ErrOffsetOutOfRange. Call Release on the Slice when done with it.
func (l *Log) Read(offset int64, maxBytes int64) (Slice, error) {
	return l.read(offset, maxBytes, false)
}

// read is Read, up to the log end instead of the high watermark when
// toEnd (ReadToEnd).
func (l *Log) read(offset, maxBytes int64, toEnd bool) (Slice, error) {
	return readRepaired(func() (Slice, error) { return l.readOnce(offset, maxBytes, toEnd) })
}

// readRepaired runs a read again after it had damage quarantined
// (readcheck.go): the repaired segment is served.
func readRepaired(read func() (Slice, error)) (Slice, error) {
	for tries := 0; ; tries++ {
		sl, err := read()
		if !errors.Is(err, errRepairedRead) {
			return sl, err
		}
		if tries == 3 {
			return Slice{}, fmt.Errorf("%w: damage found again after each of %d repairs", ErrCorruptBatch, tries+1)
		}
	}
}

func (l *Log) readOnce(offset, maxBytes int64, toEnd bool) (Slice, error) {
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
	if offset >= l.hw && !toEnd || offset == l.leo {
		l.mu.RUnlock()
		return Slice{}, nil
	}
	s, offset := l.segmentServing(offset)
	limit := s.size // whole batches only: size moves once a write is complete
	if s == l.hwSeg && !toEnd {
		limit = l.hwPos
	}
	entries, gaps := s.index, s.gaps
	s.ref()
	l.mu.RUnlock()

	pos, end, err := s.readRange(entries, offset, limit, maxBytes)
	err = l.checkRange(s, gaps, pos, end, limit, err)
	if err != nil {
		s.unref()
		return Slice{}, err
	}
	f, err := s.f.file()
	if err != nil {
		s.unref()
		return Slice{}, err
	}
	return Slice{File: f, Pos: pos, Size: end - pos, release: s.releaser()}, nil
}

// readRange finds the bytes [pos, end) for Read in a segment whose first
// limit bytes are readable: one index probe and a short forward scan to the
// batch holding offset, and the same to the last batch boundary that keeps
// the range within maxBytes.
func (s *segment) readRange(entries []indexEntry, offset, limit, maxBytes int64) (pos, end int64, err error) {
	r := readerPool.Get().(*reader)
	defer func() { r.f = nil; readerPool.Put(r) }()
	r.f, r.size, r.bufLen = s.f, limit, 0

	pos = int64(lookup(entries, uint32(offset-s.base)).pos)
	for {
		b, err := r.peek(pos, recordbatch.HeaderSize)
		if err != nil {
			return 0, 0, fmt.Errorf("segment %s: no batch holds offset %d below byte %d: %w", s.path, offset, limit, err)
		}
		h := recordbatch.ParseHeader(b)
		if h.Length < recordbatch.MinLength {
			return 0, 0, fmt.Errorf("segment %s: %w: length %d at byte %d", s.path, ErrCorruptBatch, h.Length, pos)
		}
		if h.NextOffset() > offset {
			end = pos + h.Size()
			break
		}
		pos += h.Size()
	}
	if limit-pos <= maxBytes || end >= limit {
		return pos, limit, nil
	}
	target := pos + maxBytes
	if e, ok := lookupPos(entries, target); ok && int64(e.pos) > end {
		end = int64(e.pos)
	}
	for end < limit {
		b, err := r.peek(end, recordbatch.LengthPrefix)
		if err != nil {
			return 0, 0, fmt.Errorf("segment %s: batch header at byte %d: %w", s.path, end, err)
		}
		n := recordbatch.LengthPrefix + int64(int32(binary.BigEndian.Uint32(b[recordbatch.OffLength:])))
		if n < recordbatch.HeaderSize {
			return 0, 0, fmt.Errorf("segment %s: %w: length %d at byte %d", s.path, ErrCorruptBatch, n, end)
		}
		if end+n > target {
			break
		}
		end += n
	}
	return pos, end, nil
}

// OffsetForTime returns the base offset and MaxTimestamp of the first
// flushed batch whose MaxTimestamp is at least ts, for ListOffsets by
// timestamp. Records are never decoded, so the answer is a batch's first
// offset: a consumer starting there may see a few earlier records of the
// same batch. The special timestamps -1 (latest) and -2 (earliest) are the
// caller's to map to HighWatermark and StartOffset.
func (l *Log) OffsetForTime(ts int64) (offset int64, timestamp int64, ok bool) {
	l.mu.RLock()
	if l.closed || l.hw == l.start {
		l.mu.RUnlock()
		return 0, 0, false
	}
	var s *segment
	for _, c := range l.segs {
		if c.base >= l.hw {
			break
		}
		if c.maxTs >= ts {
			s = c
			break
		}
	}
	if s == nil {
		l.mu.RUnlock()
		return 0, 0, false
	}
	limit := s.size
	if s == l.hwSeg {
		limit = l.hwPos
	}
	entries := s.index
	s.ref()
	l.mu.RUnlock()
	defer s.unref()

	r := newReader(s.f, limit, readWindow)
	for pos := int64(lookupTime(entries, ts).pos); pos < limit; {
		b, err := r.peek(pos, recordbatch.HeaderSize)
		if err != nil {
			l.logger.Error("reading segment for timestamp lookup", "file", s.path, "byte", pos, "err", err)
			return 0, 0, false
		}
		h := recordbatch.ParseHeader(b)
		if h.MaxTimestamp >= ts {
			return h.BaseOffset, h.MaxTimestamp, true
		}
		if h.Length < recordbatch.MinLength {
			return 0, 0, false
		}
		pos += h.Size()
	}
	return 0, 0, false
}
