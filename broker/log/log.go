package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tributary-io/tributary/internal/recordbatch"
)

// Log is one partition: a directory of segments. All methods are safe for
// concurrent use. Appends serialize on one lock; reads hold it only to find
// their segment and then read the file without it.
type Log struct {
	dir    string
	fs     FS
	cfg    Config
	logger *slog.Logger

	mu        sync.RWMutex
	segs      []*segment // sorted by base offset; the last is active
	active    *segment
	start     int64
	leo       int64
	hw        int64
	hwSeg     *segment // segment holding the high watermark...
	hwPos     int64    // ...and its byte position there
	size      int64
	changed   chan struct{}
	appended  chan struct{} // closed at the next append (Appended); nil until asked for
	closed    bool
	failed    error // a write or fsync failed: the log takes no more appends
	producers producers
	txns      openTxns   // open transactions (txn.go)
	dirty     []*segment // segments with bytes not yet fsynced
	// unsealed are segments rolled while clean (the flush that covered
	// them ended before the roll): no flush syncs them again, so the next
	// one seals them.
	unsealed    []*segment
	dirDirty    bool  // a segment file was created since the last flush
	flushTarget int64 // log end offset covered by the last flush started

	lastFlushStart time.Time // when the last flush started
	flushIsBusy    bool      // the last flush found the partition busy (flushBusy)
	flushAnswered  int       // WhenFlushed waiters the last flush answered (ackLinger)

	// waitMu guards waiters, WhenFlushed's callers by offset
	// (flush_waiters.go); it is taken after mu, never before.
	waitMu  sync.Mutex
	waiters []*flushWaiter

	// flushMu serializes flushes so that each knows what the previous one
	// covered; it is taken before mu, never while holding it.
	flushMu        sync.Mutex
	lastCheckpoint time.Time
	// repairMu keeps retention from deleting a segment the scrubber is
	// replacing; it is taken before mu.
	repairMu sync.Mutex

	flushReq chan struct{} // "flush now" (WaitFlushed, flush.messages)
	dirtyCh  chan struct{} // "unflushed data appeared": arms the flush.interval timer
	done     chan struct{}
	wg       sync.WaitGroup

	// keyed is set while the cleanup policy compacts: appends then refuse
	// records without a key. Atomic because validation runs before mu.
	keyed atomic.Bool
	// cleanMu serializes cleanings of this log (clean.go).
	cleanMu sync.Mutex
	// cleaned is the offset below which the log has been cleaned: where
	// the dirty section starts (persisted in cleaner-checkpoint).
	cleaned int64

	// epochs is the leader-epoch cache (epochs.go), guarded by mu;
	// stampEpoch, when not -1, is written into every batch appended by
	// Append (this broker leads the partition in that epoch).
	epochs     []epochEntry
	stampEpoch int32

	// Counters for tests and metrics.
	fsyncs  atomic.Int64 // segment files fsynced
	flushes atomic.Int64 // flushes that fsynced something

	// releaseDone is the callback of a pending ReleaseFiles (release.go),
	// guarded by mu.
	releaseDone func()
}

// Dir is the partition directory.
func (l *Log) Dir() string { return l.dir }

// Append writes one RecordBatch v2 at the end of the log; it is
// AppendBatches with a single batch.
func (l *Log) Append(batch []byte) (AppendResult, error) {
	return l.AppendBatches([][]byte{batch})
}

// AppendBatches writes RecordBatch v2 batches, in order, at the end of the
// log; see the package documentation for what is validated. Every batch is
// validated, idempotent producer sequences included, before any is written,
// so a refused batch leaves none of the others in the log. Each batch gets
// its base offset by overwriting its first 8 bytes, the only bytes changed.
// The result spans all the batches: BaseOffset is the first batch's,
// LastOffset the last one's, and Duplicate is set when every batch repeated
// one already in the log. The batches are readable once a flush covers them
// (HighWatermark); WaitFlushed waits for that.
func (l *Log) AppendBatches(batches [][]byte) (AppendResult, error) {
	return l.appendBatches(batches, nil, nil, TxnGuard{})
}

// AppendBatchesIn is AppendBatches for a topic that stores every batch in
// one codec (compression.type): each batch is validated as it was sent,
// then one in another codec is re-encoded (see Recompress) and the new
// bytes are written instead. A batch that re-encoding grows past maxSize
// bytes is refused with ErrBatchTooLarge, and then none is written.
func (l *Log) AppendBatchesIn(batches [][]byte, codec Codec, maxSize int64) (AppendResult, error) {
	return l.appendBatches(batches, &recoding{codec: codec, maxSize: maxSize}, nil, TxnGuard{})
}

// recoding is what AppendBatchesIn asks of appendBatches.
type recoding struct {
	codec   Codec
	maxSize int64
}

func (l *Log) appendBatches(batches [][]byte, rc *recoding, allow *Allowance, guard TxnGuard) (AppendResult, error) {
	if len(batches) == 0 {
		return AppendResult{}, fmt.Errorf("%w: no record batch to append", ErrCorruptBatch)
	}
	var small [2]plannedBatch
	plan := small[:0]
	keyed := l.keyed.Load()
	recoded := false
	for i, b := range batches {
		h, err := allow.validate(b, l.cfg.MaxDecompressedBytes, keyed) // decompress_allowance.go
		if err == nil && h.Control() {
			err = ErrControlBatch
		}
		if err == nil && rc != nil && recordbatch.BatchCodec(b) != rc.codec {
			// Validated as sent: the re-encoded records are the same bytes.
			var nb []byte
			if nb, err = l.reencode(b, &h, rc.codec, rc.maxSize); err == nil {
				if !recoded {
					batches, recoded = slices.Clone(batches), true // the caller's slice stays as it was
				}
				batches[i], h = nb, recordbatch.ParseHeader(nb)
			}
		}
		if err != nil {
			if len(batches) > 1 {
				err = fmt.Errorf("batch %d of %d: %w", i+1, len(batches), err)
			}
			return AppendResult{}, err
		}
		plan = append(plan, plannedBatch{h: h})
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
	if err := l.checkProducers(plan, now); err != nil {
		return AppendResult{}, err
	}
	if err := l.checkGuard(plan, guard); err != nil {
		return AppendResult{}, err
	}
	res := AppendResult{LogAppendTime: now.UnixMilli(), Duplicate: true}
	for i := range plan {
		p := &plan[i]
		if !p.dup {
			var err error
			if p.base, p.last, err = l.write(batches[i], &p.h, now, false); err != nil {
				return AppendResult{}, err
			}
			res.Duplicate = false
		}
		if i == 0 {
			res.BaseOffset = p.base
		}
		res.LastOffset = p.last
	}
	return res, nil
}

// plannedBatch is one batch of an AppendBatches call between validation
// and writing.
type plannedBatch struct {
	h          recordbatch.Header
	dup        bool  // repeats a batch already in the log: not written
	base, last int64 // offsets: the original ones for a duplicate
}

// checkProducers applies the idempotence rules to every batch of plan
// before any is written. A producer's later batches in the same call are
// checked against what its earlier ones would leave, kept in a scratch
// state, so the log's own state changes only as batches are written. Call
// with mu held.
func (l *Log) checkProducers(plan []plannedBatch, now time.Time) error {
	var scratch producers // producers seen earlier in this call
	next := l.leo
	for i := range plan {
		p := &plan[i]
		if p.h.ProducerID != -1 {
			state := &l.producers
			if scratch.lookup(p.h.ProducerID) != nil {
				state = &scratch
			}
			dup, err := state.check(&p.h)
			if err != nil {
				if len(plan) > 1 {
					err = fmt.Errorf("batch %d of %d: %w", i+1, len(plan), err)
				}
				return err
			}
			if dup != nil {
				p.dup, p.base, p.last = true, dup.base, dup.last
				continue
			}
			if len(plan) > 1 {
				scratch.record(&p.h, next, next+int64(p.h.LastOffsetDelta), now)
			}
		}
		next += int64(p.h.LastOffsetDelta) + 1
	}
	return nil
}

// write appends one validated batch at the log end and returns its offsets:
// from the log end, written into the batch, or, for a follower's copy of
// its leader's batch (keepBase), the batch's own, at or past the log end.
// Call with mu held.
func (l *Log) write(batch []byte, h *recordbatch.Header, now time.Time, keepBase bool) (base, last int64, err error) {
	if err := l.maybeRoll(h, now); err != nil {
		return 0, 0, err
	}
	s := l.active
	l.cancelReleaseLocked() // in use again
	if s.parked {
		if err := s.reopenWriters(); err != nil {
			return 0, 0, fmt.Errorf("reopen %s to append: %w", s.path, err)
		}
	}
	pos := s.size
	base = l.leo
	if keepBase {
		base = h.BaseOffset
		if base > l.leo {
			if err := l.recordLeadersGap(s, l.leo, base); err != nil {
				return 0, 0, err
			}
		}
	} else {
		binary.BigEndian.PutUint64(batch[recordbatch.OffBaseOffset:], uint64(base))
		if l.stampEpoch >= 0 {
			binary.BigEndian.PutUint32(batch[recordbatch.OffLeaderEpoch:], uint32(l.stampEpoch))
		}
	}
	h.BaseOffset = base
	if _, err := s.w.WriteAt(batch, pos); err != nil {
		return 0, 0, l.undoWrite(s, pos, fmt.Errorf("append to %s at byte %d: %w", s.path, pos, err))
	}
	maxTs := max(s.maxTs, h.MaxTimestamp)
	e, indexed := s.indexEntryFor(pos, base, maxTs, l.cfg.IndexIntervalBytes)
	if indexed {
		if err := s.addIndexEntry(e); err != nil {
			// The batch is written and indexed in memory; the entries
			// are written again with the next index fsync, which
			// reports the error if it persists.
			l.logger.Warn("writing index entries", "file", s.indexPath, "err", err)
		}
	}
	if s.size == 0 {
		s.firstTime = now
	}
	s.checked.add(pos, pos+h.Size()) // validated before it was written
	s.size += h.Size()
	s.maxTs = maxTs
	s.next = h.NextOffset()
	l.size += h.Size()
	if !s.dirty {
		s.dirty = true
		l.dirty = append(l.dirty, s)
	}
	wasFlushed := l.leo == l.flushTarget
	l.leo = s.next
	if l.appended != nil {
		close(l.appended)
		l.appended = nil
	}
	last = l.leo - 1
	if h.Transactional() && h.ProducerID != -1 {
		if err := l.txnWritten(batch, h, base, last, now); err != nil {
			l.logger.Error("recording a transactional batch", "dir", l.dir, "offset", base, "err", err)
		}
	} else if h.ProducerID != -1 {
		l.producers.record(h, base, last, now)
	}
	if l.leo-l.flushTarget >= l.cfg.FlushMessages {
		signal(l.flushReq)
	} else if wasFlushed {
		signal(l.dirtyCh)
	}
	return base, last, nil
}

// undoWrite cuts a partly written batch off the active segment. If even
// that fails the file holds bytes the log does not account for, so the log
// stops taking appends; recovery will cut them at the next Open.
func (l *Log) undoWrite(s *segment, pos int64, err error) error {
	if terr := s.w.Truncate(pos); terr != nil {
		l.failed = fmt.Errorf("log %s failed: %w (and truncating back failed: %v)", l.dir, err, terr)
		l.logger.Error("partition log stopped taking appends", "dir", l.dir, "err", l.failed)
		return l.failed
	}
	return err
}

// maybeRoll starts a new segment when the batch would not fit in the
// active one, the active one is older than SegmentAge, or the batch's
// offsets would not fit in the active segment's index.
func (l *Log) maybeRoll(h *recordbatch.Header, now time.Time) error {
	s := l.active
	if s.size == 0 {
		return nil
	}
	var why string
	switch {
	case s.size+h.Size() > l.cfg.SegmentBytes:
		why = "segment.bytes"
	case now.Sub(s.firstTime) >= l.cfg.SegmentAge:
		why = "segment.ms"
	case !relOffsetFits(s.base, l.leo+int64(h.LastOffsetDelta)):
		why = "relative offsets exhausted"
	default:
		return nil
	}
	ns, err := createSegment(l.fs, l.dir, l.leo)
	if err != nil {
		return fmt.Errorf("roll segment at offset %d: %w", l.leo, err)
	}
	ns.firstTime = now
	if !s.dirty {
		l.unsealed = append(l.unsealed, s)
	}
	l.segs = append(l.segs, ns)
	l.active = ns
	if !s.dirty {
		// Already fsynced: the next flush takes it anyway, to close its
		// writers (flushes seal what they sync), which a log rolling per
		// batch otherwise piled up until it was closed.
		s.dirty = true
		l.dirty = append(l.dirty, s)
	}
	l.dirDirty = true
	s.syncTxnIndexForSnapshot(l.logger) // txnindex.go
	l.snapshotProducers()               // a failure is logged: it only lengthens the next Open's scan
	l.logger.Debug("rolled segment", "dir", l.dir, "base_offset", ns.base, "reason", why, "previous_bytes", s.size)
	return nil
}

// signal does a non-blocking send on a channel of capacity 1: pending
// signals coalesce.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// HighWatermark is the offset after the last fsynced batch: the end of what
// readers may see, and what a crash can never take back.
func (l *Log) HighWatermark() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.hw
}

// LogEndOffset is the offset the next appended batch will get.
func (l *Log) LogEndOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.leo
}

// StartOffset is the first offset still in the log.
func (l *Log) StartOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.start
}

// Size is the number of bytes of all segment files.
func (l *Log) Size() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.size
}

// Changed returns a channel closed the next time HighWatermark advances,
// the log closes or it fails. Take a new channel after each wake-up.
func (l *Log) Changed() <-chan struct{} {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.changed
}

// wake closes the Changed channel and makes a new one, and hands the flush
// waiters the change decided to a goroutine of their own (the flush, the
// common case, calls its waiters itself: flushLocked). Call with mu held.
func (l *Log) wake() {
	l.broadcast()
	if ws := l.decidedWaiters(); len(ws) > 0 {
		go runWaiters(ws)
	}
}

// broadcast closes the Changed channel and makes a new one. Call with mu
// held.
func (l *Log) broadcast() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// Close flushes, fsyncs the indexes, writes a recovery checkpoint, a
// producer snapshot and the clean-shutdown marker, and stops the background
// goroutine. Slices already handed out stay readable until released.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	l.closed = true
	l.cancelReleaseLocked()
	l.mu.Unlock()
	close(l.done)
	l.wg.Wait()

	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	err := l.flushLocked()
	if err == nil {
		err = l.closeCheckpoint() // release.go
	}
	l.mu.Lock()
	if err == nil {
		l.snapshotProducersWith(writeUnsynced) // a failure is logged: it only lengthens the next Open's scan (closehints.go)
	}
	for _, s := range l.segs {
		err = errors.Join(err, s.close())
	}
	l.segs, l.active, l.hwSeg = nil, nil, nil
	l.wake()
	l.mu.Unlock()
	if err != nil {
		// Without the marker the next Open scans: the safe choice when the
		// last flush did not complete.
		l.logger.Error("closing partition log", "dir", l.dir, "err", err)
		return err
	}
	return markCleanShutdown(l.fs, l.dir) // closehints.go
}

// Delete closes the log and removes its directory (DeleteTopics).
func (l *Log) Delete() error {
	err := l.Close()
	if errors.Is(err, ErrClosed) {
		err = nil
	}
	if rerr := l.fs.RemoveAll(l.dir); rerr != nil {
		return errors.Join(err, rerr)
	}
	return nil
}
