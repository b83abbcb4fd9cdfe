package log

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tributary-io/tributary/internal/atomicfile"
)

// Under heavy load a partition that fsyncs back to back makes every append
// contend with an fsync of the same file: measured on this project's VMs,
// the appends' pwrite costs three times its CPU. A busy partition's flush
// is therefore followed by busyFlushGap before the next one (an acks=all
// request ends the gap, at once or by the ackLinger rule below), so each
// fsync covers more; at low load, where latency matters, flushes still
// follow each other at once.
//
// Busy means messages arrive at busyFlushMessages per busyFlushGap
// (100,000 a second) or faster, measured over the time since the previous
// flush started. A count per flush alone is not enough: on a disk whose
// fsync takes under a millisecond each flush covers only a few hundred
// messages even at that rate, so the partition would never count as busy
// and would fsync over a thousand times a second (measured: 1,400 fsyncs
// for a million messages, against 100 with the gap).
const (
	busyFlushMessages = 2000
	busyFlushGap      = 20 * time.Millisecond
)

// Many acks=all requests waiting on one partition are answered by the
// same flush, and each sends its next request at once: the flush that
// follows at once covers only those that made it before it started, and
// the rest wait for the one after. Each fsync costs a fixed amount of CPU
// whatever it covers (measured on this project's VMs: about 100 µs, mostly
// the device round trips of a virtual disk: data, inode, cache flush). So
// when the last flush answered ackLingerWaiters requests or more, the next
// one waits until as many wait again, or for ackLinger after the first
// does, whichever comes first: a producer that waits on one request at a
// time (the flush answered one) is never held back, nor are several whose
// next requests all come in, and the linger is paid only when requests
// wait concurrently. It is short because answers on one connection go out
// in order: a lingering answer holds back the connection's later ones.
// Measured: BenchmarkAppendWaitFlushedPartitions (16 producers a
// partition) fsyncs/op 0.147 → 0.090 and CPU a batch 26.9 → 21.1 µs;
// the broker at 8 connections, acks=all, 35 % fewer fsyncs a batch.
const (
	ackLinger        = time.Millisecond
	ackLingerWaiters = 4
)

// flushBusy tells whether a flush covering covered messages appended over
// span (since the previous flush started) leaves the partition busy.
func flushBusy(covered int64, span time.Duration) bool {
	if covered >= busyFlushMessages {
		return true
	}
	if covered <= 0 {
		return false
	}
	if span <= 0 {
		return true
	}
	return float64(covered)/span.Seconds() >= busyFlushMessages/busyFlushGap.Seconds()
}

const (
	cleanMarkerFile = ".clean-shutdown"
	checkpointFile  = "recovery-checkpoint"
	// checkpointEvery bounds how often a flush also rewrites the recovery
	// checkpoint (three fsyncs): a staler checkpoint only means a longer
	// scan after a crash.
	checkpointEvery = 5 * time.Second
)

// Flush fsyncs everything appended so far and advances the high watermark.
func (l *Log) Flush() error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.RLock()
	closed := l.closed
	l.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	if err := l.flushLocked(); err != nil {
		return err
	}
	if time.Since(l.lastCheckpoint) >= checkpointEvery {
		return l.writeCheckpoint()
	}
	return nil
}

// flushLocked is one group commit: it takes the log end offset, fsyncs
// every segment written since the previous flush without holding mu (appends
// go on meanwhile), then moves the high watermark to that offset and calls
// the waiters it covers (flush_waiters.go). Call with flushMu held.
func (l *Log) flushLocked() error {
	l.mu.Lock()
	if l.failed != nil {
		// An append that failed stopped the log without a flush: its
		// waiters learn it here.
		ws := l.decidedWaiters()
		l.mu.Unlock()
		runWaiters(ws)
		return l.failed
	}
	if l.leo == l.flushTarget && len(l.dirty) == 0 {
		l.mu.Unlock()
		return nil
	}
	target, tSeg, tPos := l.leo, l.active, l.active.size
	began := time.Now()
	l.flushIsBusy = flushBusy(target-l.flushTarget, began.Sub(l.lastFlushStart))
	l.lastFlushStart = began
	segs, syncDir, unsealed := l.dirty, l.dirDirty, l.unsealed
	l.dirty, l.dirDirty, l.unsealed = nil, false, nil
	for _, s := range segs {
		s.dirty = false
	}
	l.flushTarget = target
	l.mu.Unlock()

	release := acquireFsyncSlot()
	began = time.Now()
	var err error
	for _, s := range segs {
		if err = s.sync(); err != nil {
			break
		}
		l.fsyncs.Add(1)
		if s != tSeg { // rolled: about to be sealed, its index trusted
			if err = s.syncIndex(); err != nil {
				break
			}
		}
	}
	if err == nil && syncDir {
		err = l.fs.SyncDir(l.dir)
	}
	release()
	l.flushes.Add(1)

	l.mu.Lock()
	if err != nil {
		// After a failed fsync the kernel may have dropped the dirty pages:
		// nothing says what is on disk, so stop rather than guess.
		l.failed = fmt.Errorf("log %s failed: %w", l.dir, err)
		l.logger.Error("partition log stopped taking appends", "dir", l.dir, "err", err)
		l.broadcast()
		ws := l.decidedWaiters()
		l.mu.Unlock()
		runWaiters(ws)
		return l.failed
	}
	var ws []*flushWaiter
	l.observeFlush(began, target-l.hw)
	if target > l.hw {
		l.hw, l.hwSeg, l.hwPos = target, tSeg, tPos
		l.broadcast()
		ws = l.decidedWaiters()
	}
	l.flushAnswered = len(ws)
	// The waiters this flush covers are answered by it, here, before the
	// sealing below: nothing of theirs waits on that.
	l.mu.Unlock()
	runWaiters(ws)
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range append(segs, unsealed...) {
		if s != l.active && !s.dirty {
			if serr := s.seal(); serr != nil {
				l.logger.Warn("closing sealed segment writers", "file", s.path, "err", serr)
			}
		}
	}
	return nil
}

// run is the log's one background goroutine: it flushes as soon as data
// goes unflushed (continuous group commit; with IntervalFlush, FlushInterval
// after), flushes at once on request, and applies retention every
// RetentionCheckInterval. An idle log costs no wake-ups.
func (l *Log) run() {
	defer l.wg.Done()
	flushTimer := time.NewTimer(time.Hour)
	flushTimer.Stop()
	armed := false
	retention := time.NewTicker(l.cfg.RetentionCheckInterval)
	defer retention.Stop()
	for {
		select {
		case <-l.done:
			flushTimer.Stop()
			return
		case <-l.dirtyCh:
			if !l.cfg.IntervalFlush {
				// backgroundFlush signals dirtyCh again when appends
				// arrived during the fsync: the next one starts at once,
				// unless the log is busy (see busyFlushGap).
				l.backgroundFlush()
				l.pause(true)
				continue
			}
			if !armed {
				flushTimer.Reset(l.flushInterval())
				armed = true
			}
		case <-flushTimer.C:
			armed = false
			l.backgroundFlush()
		case <-l.flushReq:
			l.backgroundFlush()
			if !l.cfg.IntervalFlush {
				l.pause(false) // a requested flush is followed by no busy gap
			}
		case <-retention.C:
			if _, err := l.ApplyRetention(); err != nil && !errors.Is(err, ErrClosed) {
				l.logger.Error("applying retention", "dir", l.dir, "err", err)
			}
		}
	}
}

// pause holds back the flush after one that just ended: with gap, a busy
// partition's for busyFlushGap, until a request waits for it (flushReq);
// and for the ackLinger rule once requests wait. A request taken from
// flushReq is put back for run's loop, which flushes next.
func (l *Log) pause(gap bool) {
	l.mu.RLock()
	busy, target := gap && l.flushIsBusy, l.flushAnswered
	l.mu.RUnlock()
	linger := target >= ackLingerWaiters
	if !busy && !linger {
		return
	}
	wait := busyFlushGap
	if !busy {
		wait = ackLinger
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	asked, lingering := false, false
	defer func() {
		if asked {
			signal(l.flushReq)
		}
	}()
	for {
		select {
		case <-timer.C:
			return
		case <-l.flushReq:
			asked = true
			if !linger || l.waiting() >= target {
				return
			}
			if !lingering {
				lingering = true
				timer.Reset(ackLinger)
			}
		case <-l.done:
			return
		}
	}
}

func (l *Log) backgroundFlush() {
	// A failure is logged once by flushLocked and then sticks in l.failed.
	if err := l.Flush(); err != nil && !errors.Is(err, ErrClosed) && l.Failed() == nil {
		l.logger.Error("writing recovery checkpoint", "dir", l.dir, "err", err)
	}
	l.tryRelease(true) // a release waiting for this flush (release.go)
	// Data appended during the flush re-arms the timer through dirtyCh.
	l.mu.RLock()
	pending := l.leo > l.flushTarget
	l.mu.RUnlock()
	if pending {
		signal(l.dirtyCh)
	}
}

// Failed returns the error that stopped the log taking appends, or nil.
func (l *Log) Failed() error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.failed
}

// writeCheckpoint records the high watermark as the offset below which
// everything is known fsynced, so recovery after a crash scans only from
// the segment holding it. Call with flushMu held.
func (l *Log) writeCheckpoint() error {
	l.mu.RLock()
	hw := l.hw
	segs := slices.Clone(l.segs)
	l.mu.RUnlock()
	l.lastCheckpoint = time.Now() // also on failure: retry later, not on every flush
	// Recovery trusts the indexes of the segments before the checkpoint's
	// (flushes fsync data only): make them durable first.
	for _, s := range segs {
		if err := s.syncIndex(); err != nil {
			return fmt.Errorf("write recovery checkpoint: %w", err)
		}
	}
	if err := writeFileAtomic(l.fs, l.dir, checkpointFile, []byte(strconv.FormatInt(hw, 10)+"\n")); err != nil {
		return fmt.Errorf("write recovery checkpoint: %w", err)
	}
	return nil
}

// readCheckpoint returns the checkpointed offset, or -1 (scan everything)
// when there is none or it cannot be parsed.
func readCheckpoint(fsys FS, dir string) (int64, error) {
	b, err := fsys.ReadFile(filepath.Join(dir, checkpointFile))
	if errors.Is(err, os.ErrNotExist) {
		return -1, nil
	}
	if err != nil {
		return -1, err
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || v < 0 {
		return -1, fmt.Errorf("recovery checkpoint %q is not an offset", b)
	}
	return v, nil
}

// writeFileAtomic replaces dir/name so that a crash leaves either the old
// or the new content (internal/atomicfile).
func writeFileAtomic(fsys FS, dir, name string, data []byte) error {
	return atomicfile.WriteFS(atomicFS{fsys}, filepath.Join(dir, name), data)
}
