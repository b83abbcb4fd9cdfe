package log

import (
	"errors"
	"fmt"
	"time"
)

// ApplyRetention deletes whole segments from the front of the log while
// they are older than RetentionAge or the log is larger than RetentionBytes
// without them, and moves StartOffset to the first remaining segment. It
// never deletes the active segment nor a segment holding data above the high
// watermark. A segment's age is that of its newest batch's MaxTimestamp (the
// producer's clock, as in Kafka); a segment whose batches all carry no
// timestamp (-1) falls back to the file's modification time.
//
// Segments a Slice still holds are unlinked now and their files closed when
// the last Slice is released. ApplyRetention also forgets idempotent
// producers idle for longer than ProducerIDExpiry. The log calls it every
// RetentionCheckInterval by itself. A log whose cleanup policy is compact
// alone deletes nothing: compaction decides what goes.
func (l *Log) ApplyRetention() (deletedSegments int, err error) {
	l.repairMu.Lock()
	defer l.repairMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, ErrClosed
	}
	now := l.cfg.Clock()
	if n := l.producers.expire(now.Add(-l.cfg.ProducerIDExpiry)); n > 0 {
		l.logger.Debug("expired idle producer ids", "dir", l.dir, "count", n)
	}
	for len(l.segs) > 1 && l.cfg.CleanupPolicy.deletes() {
		s := l.segs[0]
		if s == l.active || s.next > l.hw {
			break
		}
		var reason string
		switch {
		case l.cfg.RetentionBytes >= 0 && l.size-s.size >= l.cfg.RetentionBytes:
			reason = "retention.bytes"
		case l.cfg.RetentionAge >= 0 && segmentExpired(s, now, l.cfg.RetentionAge):
			reason = "retention.ms"
		default:
			return deletedSegments, errors.Join(err, l.trimEpochsAfterRetention(deletedSegments))
		}
		l.segs = l.segs[1:]
		l.start = l.segs[0].base
		l.size -= s.size
		deletedSegments++
		l.logger.Info("deleted segment", "dir", l.dir, "file", s.path, "reason", reason,
			"bytes", s.size, "offsets", [2]int64{s.base, s.next - 1}, "start_offset", l.start)
		err = errors.Join(err, s.remove())
	}
	return deletedSegments, errors.Join(err, l.trimEpochsAfterRetention(deletedSegments))
}

// trimEpochsAfterRetention follows the log start offset with the
// leader-epoch cache once segments went. Call with mu held.
func (l *Log) trimEpochsAfterRetention(deleted int) error {
	if deleted == 0 {
		return nil
	}
	if err := l.trimEpochsToStart(); err != nil {
		return fmt.Errorf("after retention moved the log start to %d: %w", l.start, err)
	}
	return nil
}

func segmentExpired(s *segment, now time.Time, age time.Duration) bool {
	newest := s.maxTs
	if newest < 0 {
		fi, err := s.f.Stat()
		if err != nil {
			return false
		}
		newest = fi.ModTime().UnixMilli()
	}
	return now.UnixMilli()-newest > age.Milliseconds()
}
