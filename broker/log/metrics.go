package log

import "time"

// Flush describes one group commit, for Config.OnFlush.
type Flush struct {
	// Duration is the time spent in fsync (segment files and, after a roll,
	// the directory), from the moment the flush got its fsync slot.
	Duration time.Duration
	// Messages is how far the flush moved the high watermark: the offsets
	// it made visible at once.
	Messages int64
}

// Stats is a snapshot of a partition log, read at once under its lock, for
// operators' metrics.
type Stats struct {
	HighWatermark int64
	LogEndOffset  int64
	StartOffset   int64
	Size          int64 // bytes of all segment files
	Segments      int
	// UnflushedBytes are appended but not yet fsynced: what a power loss
	// would take back, and what readers do not see yet.
	UnflushedBytes int64
	// Producers is the number of idempotent producer ids tracked.
	Producers int
}

// Stats reads the log's state in one lock, so the numbers agree.
func (l *Log) Stats() Stats {
	l.mu.RLock()
	defer l.mu.RUnlock()
	st := Stats{
		HighWatermark: l.hw,
		LogEndOffset:  l.leo,
		StartOffset:   l.start,
		Size:          l.size,
		Segments:      len(l.segs),
		Producers:     len(l.producers.index),
	}
	after := false // past the segment holding the high watermark
	for _, s := range l.segs {
		switch {
		case s == l.hwSeg:
			st.UnflushedBytes += s.size - l.hwPos
			after = true
		case after || l.hwSeg == nil:
			st.UnflushedBytes += s.size
		}
	}
	return st
}

// observeFlush reports one flush to Config.OnFlush, if set.
func (l *Log) observeFlush(began time.Time, messages int64) {
	if l.cfg.OnFlush != nil {
		l.cfg.OnFlush(Flush{Duration: time.Since(began), Messages: messages})
	}
}
