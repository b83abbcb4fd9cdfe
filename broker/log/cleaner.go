package log

import (
	"errors"
	"log/slog"
	"sync"
	"time"
)

// Defaults of CleanerConfig.
const (
	DefaultCleanerThreads     = 1
	DefaultCleanerBufferBytes = 128 << 20
	DefaultCleanerBackoff     = 15 * time.Second

	// minCleanerMapBytes is the smallest offset map: a few dozen keys.
	minCleanerMapBytes = 64 * mapSlotSize
	// minRecordBytes is the least a record takes in a batch (its length,
	// attributes, timestamp and offset deltas, key and value lengths and
	// header count, one byte each, and a one-byte key).
	minRecordBytes = 8
)

// CleanerConfig sizes a broker's log cleaner (Kafka's log.cleaner.*).
type CleanerConfig struct {
	// Threads is how many logs are cleaned at once
	// (log.cleaner.threads). Default 1.
	Threads int
	// DedupeBufferBytes is the memory of all the threads' offset maps
	// together, split evenly (log.cleaner.dedupe.buffer.size); a map holds
	// one key per 24 bytes, and a dirty section with more keys than a map
	// holds is cleaned in parts. Default 128 MiB, allocated when a thread
	// first cleans.
	DedupeBufferBytes int64
	// Backoff is how long a thread that found nothing to clean waits
	// before looking again (log.cleaner.backoff.ms). Default 15s.
	Backoff time.Duration
}

func (c CleanerConfig) withDefaults() CleanerConfig {
	if c.Threads <= 0 {
		c.Threads = DefaultCleanerThreads
	}
	if c.DedupeBufferBytes <= 0 {
		c.DedupeBufferBytes = DefaultCleanerBufferBytes
	}
	if c.Backoff <= 0 {
		c.Backoff = DefaultCleanerBackoff
	}
	return c
}

// A Cleaner compacts the logs given to it (Add) whose cleanup policy
// compacts, in the background: each of its threads takes the log whose
// dirty ratio is highest among those over their min.cleanable.dirty.ratio
// (or past max.compaction.lag.ms first), cleans it, and looks again. One
// Cleaner serves a whole broker, so the memory and disk bandwidth spent on
// cleaning are bounded however many partitions there are.
type Cleaner struct {
	cfg    CleanerConfig
	logger *slog.Logger

	mu   sync.Mutex
	logs map[*Log]bool // value: a thread is cleaning it
	done chan struct{}
	wg   sync.WaitGroup
}

// NewCleaner starts a cleaner; Close stops it.
func NewCleaner(cfg CleanerConfig, logger *slog.Logger) *Cleaner {
	cfg = cfg.withDefaults()
	if logger == nil {
		logger = slog.Default()
	}
	c := &Cleaner{cfg: cfg, logger: logger, logs: map[*Log]bool{}, done: make(chan struct{})}
	per := max(cfg.DedupeBufferBytes/int64(cfg.Threads), minCleanerMapBytes)
	for range cfg.Threads {
		c.wg.Add(1)
		go c.run(per)
	}
	return c
}

// Add makes l a candidate for cleaning whenever its policy compacts. A log
// closed later is dropped by itself.
func (c *Cleaner) Add(l *Log) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.logs[l]; !ok {
		c.logs[l] = false
	}
}

// Close stops the threads, ending a cleaning in progress without changing
// its log.
func (c *Cleaner) Close() {
	c.mu.Lock()
	select {
	case <-c.done:
		c.mu.Unlock()
		return
	default:
	}
	close(c.done)
	c.mu.Unlock()
	c.wg.Wait()
}

func (c *Cleaner) run(mapBytes int64) {
	defer c.wg.Done()
	var m *offsetMap
	for {
		l, dirty := c.pick()
		if l == nil {
			select {
			case <-c.done:
				return
			case <-time.After(c.cfg.Backoff):
			}
			continue
		}
		// A record takes at least minRecordBytes of a batch, so a map of
		// mapSlotSize per such record holds every key of the dirty bytes:
		// small logs do not cost the whole buffer.
		if want := min(mapBytes, max(minCleanerMapBytes, dirty/minRecordBytes*mapSlotSize*10/9)); m == nil || int64(len(m.slots))*mapSlotSize < want {
			m = nil // let the old one go first
			m = newOffsetMap(want)
		}
		_, err := l.clean(m, c.done)
		if err != nil && !errors.Is(err, ErrClosed) {
			if _, _, _, _, closed := l.cleanNeed(); closed {
				err = ErrClosed // closed or deleted under the cleaning: not a failure
			}
		}
		c.mu.Lock()
		if errors.Is(err, ErrClosed) {
			delete(c.logs, l)
		} else if _, ok := c.logs[l]; ok {
			c.logs[l] = false
		}
		c.mu.Unlock()
		switch {
		case err == nil, errors.Is(err, ErrClosed), errors.Is(err, errCleanStopped):
		default:
			c.logger.Error("cleaning compacted log: retrying after the backoff", "dir", l.Dir(), "err", err)
			select {
			case <-c.done:
				return
			case <-time.After(c.cfg.Backoff):
			}
		}
	}
}

// pick takes the log most in need of cleaning and marks it taken, or
// returns nil when none needs it; dirty is its dirty bytes.
func (c *Cleaner) pick() (*Log, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.done:
		return nil, 0
	default:
	}
	var best *Log
	var bestRatio float64
	var bestDirty int64
	bestOverdue := false
	for l, busy := range c.logs {
		if busy {
			continue
		}
		ratio, dirty, overdue, ok, closed := l.cleanNeed()
		if closed {
			delete(c.logs, l)
		}
		if !ok {
			continue
		}
		if best == nil || overdue && !bestOverdue || overdue == bestOverdue && ratio > bestRatio {
			best, bestRatio, bestOverdue, bestDirty = l, ratio, overdue, dirty
		}
	}
	if best != nil {
		c.logs[best] = true
	}
	return best, bestDirty
}
