package log

import (
	"encoding/binary"
	"fmt"

	"github.com/tributary-io/tributary/internal/recordbatch"
)

// MaxTimestamp returns the largest timestamp among the flushed records and
// the offset of the first record that carries it (ListOffsets with
// timestamp -3). For a batch stamped by the broker (LogAppendTime) that is
// the batch's first offset; for an uncompressed batch the record is found
// by reading its records; a compressed batch is opaque to the log, so its
// last offset stands in. ok is false for a log without flushed records or
// whose batches carry no timestamps.
func (l *Log) MaxTimestamp() (offset, timestamp int64, ok bool) {
	l.mu.RLock()
	if l.closed || l.hw == l.start {
		l.mu.RUnlock()
		return 0, 0, false
	}
	var best, tail *segment
	var tailLimit int64
	for _, s := range l.segs {
		if s.base >= l.hw {
			break
		}
		if s == l.hwSeg {
			tail, tailLimit = s, l.hwPos
			break
		}
		if s.maxTs >= 0 && (best == nil || s.maxTs > best.maxTs) {
			best = s
		}
	}
	var bestLimit, bestTs int64 = 0, -1
	if best != nil {
		best.ref()
		bestLimit, bestTs = best.size, best.maxTs
	}
	if tail != nil {
		tail.ref()
	}
	start := l.start
	l.mu.RUnlock()
	if best != nil {
		defer best.unref()
	}
	if tail != nil {
		defer tail.unref()
	}

	// The segment holding the high watermark may have unflushed batches in
	// its maxTs: scan its flushed part instead.
	if tail != nil {
		if pos, h, found := l.scanMaxTimestamp(tail, tailLimit, -1); found && h.MaxTimestamp > bestTs {
			return max(start, l.maxTimestampOffset(tail, pos, h)), h.MaxTimestamp, true
		}
	}
	if best == nil {
		return 0, 0, false
	}
	pos, h, found := l.scanMaxTimestamp(best, bestLimit, bestTs)
	if !found {
		return 0, 0, false
	}
	return max(start, l.maxTimestampOffset(best, pos, h)), h.MaxTimestamp, true
}

// scanMaxTimestamp walks the batch headers of s below limit and returns
// the first batch whose MaxTimestamp is want, or, for want -1, the first
// one with the largest MaxTimestamp.
func (l *Log) scanMaxTimestamp(s *segment, limit, want int64) (pos int64, h recordbatch.Header, found bool) {
	r := newReader(s.f, limit, scanWindow)
	for p := int64(0); p < limit; {
		b, err := r.peek(p, recordbatch.HeaderSize)
		if err != nil {
			l.logger.Error("reading segment for the max timestamp", "file", s.path, "byte", p, "err", err)
			return pos, h, found
		}
		c := recordbatch.ParseHeader(b)
		if c.Length < recordbatch.MinLength {
			return pos, h, found
		}
		switch {
		case want >= 0 && c.MaxTimestamp == want:
			return p, c, true
		case want < 0 && c.MaxTimestamp >= 0 && (!found || c.MaxTimestamp > h.MaxTimestamp):
			pos, h, found = p, c, true
		}
		p += c.Size()
	}
	return pos, h, found
}

// maxTimestampOffset finds the offset of the first record of the batch at
// pos whose timestamp is the batch's MaxTimestamp.
func (l *Log) maxTimestampOffset(s *segment, pos int64, h recordbatch.Header) int64 {
	last := h.NextOffset() - 1
	buf := make([]byte, h.Size())
	if _, err := s.f.ReadAt(buf, pos); err != nil {
		return last
	}
	attrs := binary.BigEndian.Uint16(buf[recordbatch.OffAttributes:])
	switch {
	case attrs&0x08 != 0: // LogAppendTime: every record has the batch's time
		return h.BaseOffset
	case attrs&0x07 != 0: // compressed
		return last
	}
	first := int64(binary.BigEndian.Uint64(buf[recordbatch.OffFirstTimestamp:]))
	off, err := firstRecordAt(buf[recordbatch.HeaderSize:], h.MaxTimestamp-first)
	if err != nil {
		l.logger.Warn("cannot read the records of a batch; answering its last offset", "file", s.path, "byte", pos, "err", err)
		return last
	}
	return h.BaseOffset + off
}

// firstRecordAt returns the offset delta of the first record whose
// timestamp delta is tsDelta.
func firstRecordAt(records []byte, tsDelta int64) (int64, error) {
	var f recordbatch.Fields
	for pos := 0; pos < len(records); pos = f.End {
		if !f.Parse(records, pos) {
			return 0, fmt.Errorf("the record at byte %d of the records does not parse", pos)
		}
		if f.TimestampDelta == tsDelta {
			return f.OffsetDelta, nil
		}
	}
	return 0, fmt.Errorf("no record has the batch's max timestamp")
}
