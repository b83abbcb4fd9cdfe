package log

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// startOffsetFile records a log start offset moved by DeleteRecordsBefore
// into the middle of a segment, which the segment files alone cannot tell.
const startOffsetFile = "log-start-offset"

// DeleteRecordsBefore makes offset the log's first offset (Kafka's
// DeleteRecords): readers can no longer read below it, and the sealed
// segments that hold only offsets below it are deleted at once. The rest of
// the segment holding offset stays on disk until retention deletes it
// whole. offset -1 means the high watermark; an offset above the high
// watermark gives ErrOffsetOutOfRange, one at or below StartOffset changes
// nothing. The new start survives restarts and crashes: it is persisted
// (fsynced) before this returns. It returns the log's start offset.
func (l *Log) DeleteRecordsBefore(offset int64) (int64, error) {
	l.flushMu.Lock() // one persister of the start offset at a time
	defer l.flushMu.Unlock()
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return 0, ErrClosed
	}
	if offset == -1 {
		offset = l.hw
	}
	if offset < 0 || offset > l.hw {
		err := fmt.Errorf("%w: cannot delete records before %d, the high watermark is %d", ErrOffsetOutOfRange, offset, l.hw)
		l.mu.Unlock()
		return 0, err
	}
	if offset <= l.start {
		start := l.start
		l.mu.Unlock()
		return start, nil
	}
	l.start = offset
	var removed []*segment
	for len(l.segs) > 1 && l.segs[0] != l.active && l.segs[0].next <= offset {
		s := l.segs[0]
		l.segs = l.segs[1:]
		l.size -= s.size
		removed = append(removed, s)
	}
	start, firstBase := l.start, l.segs[0].base
	l.mu.Unlock()

	// Persist before unlinking: a crash in between leaves segments that the
	// recorded start already hides, never a start that went back.
	var err error
	if start > firstBase {
		err = writeFileAtomic(l.fs, l.dir, startOffsetFile, []byte(strconv.FormatInt(start, 10)+"\n"))
	} else if rerr := l.fs.Remove(filepath.Join(l.dir, startOffsetFile)); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		err = rerr
	}
	if err != nil {
		err = fmt.Errorf("recording log start offset %d: %w", start, err)
	}
	// The epochs follow the recorded start; a crash before this leaves
	// loadEpochs to trim them at Open.
	l.mu.Lock()
	if !l.closed {
		if terr := l.trimEpochsToStart(); terr != nil {
			err = errors.Join(err, fmt.Errorf("after moving the log start to %d: %w", start, terr))
		}
	}
	l.mu.Unlock()
	for _, s := range removed {
		l.logger.Info("deleted segment", "dir", l.dir, "file", s.path, "reason", "delete records",
			"bytes", s.size, "offsets", [2]int64{s.base, s.next - 1}, "start_offset", start)
		err = errors.Join(err, s.remove())
	}
	return start, err
}

// restoredStartOffset is the start offset Open should use: the one
// DeleteRecordsBefore recorded when it lies within the log, else the first
// segment's base. Call with mu held, after the segments are loaded.
func (l *Log) restoredStartOffset() int64 {
	start := l.segs[0].base
	b, err := l.fs.ReadFile(filepath.Join(l.dir, startOffsetFile))
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			l.logger.Warn("cannot read the recorded log start offset; starting at the first segment", "dir", l.dir, "err", err)
		}
		return start
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		l.logger.Warn("recorded log start offset is not a number; starting at the first segment", "dir", l.dir, "content", string(b))
		return start
	}
	return max(start, min(v, l.leo))
}
