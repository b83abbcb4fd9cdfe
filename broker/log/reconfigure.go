package log

import "time"

// Reconfigure changes, on an open log, the settings a topic's configs
// control (AlterConfigs): segment size and age, flush bounds, retention,
// index spacing, the cleanup policy with its compaction settings and the
// compression type. Each takes effect at the next append, flush, retention
// check or cleaning; nothing already written is rewritten and the active
// segment is not rolled for it. The clock, the retention check interval and the producer
// id settings stay as the log was opened with.
func (l *Log) Reconfigure(cfg Config) {
	cfg = cfg.WithDefaults()
	l.mu.Lock()
	l.cfg.SegmentBytes = cfg.SegmentBytes
	l.cfg.SegmentAge = cfg.SegmentAge
	l.cfg.FlushMessages = cfg.FlushMessages
	l.cfg.FlushInterval = cfg.FlushInterval
	l.cfg.RetentionAge = cfg.RetentionAge
	l.cfg.RetentionBytes = cfg.RetentionBytes
	l.cfg.IndexIntervalBytes = cfg.IndexIntervalBytes
	l.cfg.CleanupPolicy = cfg.CleanupPolicy
	l.cfg.MinCleanableDirtyRatio = cfg.MinCleanableDirtyRatio
	l.cfg.MinCompactionLag = cfg.MinCompactionLag
	l.cfg.MaxCompactionLag = cfg.MaxCompactionLag
	l.cfg.DeleteRetention = cfg.DeleteRetention
	l.cfg.Compression = cfg.Compression
	l.keyed.Store(cfg.CleanupPolicy.compacts())
	flushNow := l.leo-l.flushTarget >= l.cfg.FlushMessages
	l.mu.Unlock()
	if flushNow {
		signal(l.flushReq) // a lowered flush.messages is already exceeded
	}
}

// flushInterval reads FlushInterval under the lock Reconfigure writes it
// with.
func (l *Log) flushInterval() time.Duration {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.cfg.FlushInterval
}
