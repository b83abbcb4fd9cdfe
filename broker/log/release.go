package log

// Releasing an idle log's descriptors. An open log holds three descriptors
// on its active segment (the data writer, the index writer, the read
// descriptor Slices share) and the sealed ones it read lately, so a broker
// whose partitions outnumber a third of its descriptor budget had to close
// logs to make room, and a request naming them all closed and reopened
// thousands: each close a last flush, a checkpoint, a producer snapshot and
// a clean-shutdown marker (about eight fsyncs), each reopen reading the
// directory, the indexes and the snapshot again.
//
// ReleaseFiles gives the descriptors back while the log stays open: its
// state (offsets, indexes, producers, transactions) stays in memory, and
// the next append reopens the active segment's writers, the next read the
// file it reads. A log is released only when it is clean: everything
// appended has been fsynced through the descriptors being closed, and no
// flush is running, so closing them costs no fsync and loses no write-back
// error (an error not yet reported would be lost with the descriptor that
// could report it). A log with unflushed data is released after the flush
// that covers it; an append before that cancels the release (the log is in
// use again). Nothing on disk changes, so crash recovery is what it was.

import (
	"os"
	"strconv"
	"time"
)

// ReleaseFiles closes the log's descriptors once it is clean, keeping it
// open. done is called exactly once, in its own goroutine: after the
// release, or when it is cancelled (an append came first, the log failed
// or closed). A second call replaces a pending one, whose done is then
// called.
func (l *Log) ReleaseFiles(done func()) {
	l.mu.Lock()
	prev := l.releaseDone
	l.releaseDone = done
	closed := l.closed
	l.mu.Unlock()
	if prev != nil {
		go prev()
	}
	if closed {
		l.cancelRelease()
		return
	}
	if !l.tryRelease(false) {
		// Dirty, or a flush is running: the run loop's next flush
		// (asked for now) releases it when it ends.
		signal(l.flushReq)
	}
}

// tryRelease releases the descriptors if a release is pending and the log
// is clean; wait says whether to wait for a running flush. It reports
// whether nothing is left pending.
func (l *Log) tryRelease(wait bool) bool {
	l.mu.RLock()
	pending := l.releaseDone != nil
	l.mu.RUnlock()
	if !pending {
		return true
	}
	if wait {
		l.flushMu.Lock()
	} else if !l.flushMu.TryLock() {
		return false
	}
	defer l.flushMu.Unlock()
	l.mu.Lock()
	done := l.releaseDone
	if done == nil {
		l.mu.Unlock()
		return true
	}
	if l.closed || l.failed != nil {
		l.releaseDone = nil
		l.mu.Unlock()
		go done()
		return true
	}
	// A directory fsync still owed alone (a new log's first segment, which
	// no append has needed yet: flushes sync the directory only with
	// data) does not keep a log from being released: closing descriptors
	// changes nothing in the directory, and the flush of the next append
	// syncs it. Waiting for it parked such a log for ever, and openers
	// waited on its descriptors (a produce or a fetch round opening many
	// new partitions together, past the descriptor budget).
	if len(l.dirty) > 0 || len(l.unsealed) > 0 || l.leo != l.flushTarget {
		l.mu.Unlock()
		return false
	}
	l.releaseDone = nil
	if err := l.checkpointUnsynced(); err != nil {
		l.logger.Warn("writing the recovery checkpoint of an idle log", "dir", l.dir, "err", err)
	}
	for _, s := range l.segs {
		s.release()
	}
	l.mu.Unlock()
	go done()
	return true
}

// cancelRelease drops a pending release (the log is in use again, or
// closed), calling its done.
func (l *Log) cancelRelease() {
	l.mu.Lock()
	done := l.releaseDone
	l.releaseDone = nil
	l.mu.Unlock()
	if done != nil {
		go done()
	}
}

// cancelReleaseLocked is cancelRelease with mu held.
func (l *Log) cancelReleaseLocked() {
	if done := l.releaseDone; done != nil {
		l.releaseDone = nil
		go done()
	}
}

// release closes the segment's writers, if it is the active one, and its
// read descriptor if no reader holds it. Call with Log.mu and flushMu held
// on a clean log: the data's last bytes are fsynced. The active index is
// fsynced only at roll, checkpoint and seal (flush.go), so it is fsynced
// here: a parked segment's seal syncs nothing, and a clean shutdown's
// marker makes recovery trust every index. If that fsync fails the
// segment keeps its writers.
func (s *segment) release() {
	s.wmu.Lock()
	if s.w != nil && s.syncIndexLocked() != nil {
		s.wmu.Unlock()
		return
	}
	if s.w != nil {
		s.w.Close()
		s.idx.Close()
		if s.txnW != nil {
			s.txnW.Close() // fsynced with the data; addAborted reopens it
		}
		s.w, s.idx, s.txnW = nil, nil, nil
		s.dropPendingIndex() // written by syncIndexLocked
		s.parked = true
	}
	s.wmu.Unlock()
	s.f.closeUnused()
}

// reopenWriters makes a released active segment appendable again. Its
// index file matches s.index (release wrote its pending entries), so
// it is reopened as it is rather than rewritten. Call with Log.mu held.
func (s *segment) reopenWriters() error {
	if s.indexStale {
		return s.openWriters()
	}
	w, err := s.fs.OpenFile(s.path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	idx, err := s.fs.OpenFile(s.indexPath, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		w.Close()
		return err
	}
	s.wmu.Lock()
	s.w, s.idx, s.parked = w, idx, false
	s.wmu.Unlock()
	return nil
}

// closeUnused closes the descriptor, sealed or not, if nobody but the log
// holds the segment; the next read reopens it (file).
func (sf *segFile) closeUnused() {
	if sf.released.Load() || sf.refs.Load() > 1 || !sf.mu.TryLock() {
		return
	}
	f := sf.f
	if f != nil && sf.refs.Load() <= 1 {
		sf.f = nil
	} else {
		f = nil
	}
	sf.mu.Unlock()
	if f != nil {
		f.Close()
		sf.cache.forget(sf)
	}
}

// A released log is idle, so it is likely to be one of thousands open when
// the process is killed; without a clean-shutdown marker each would then
// be recovered at start with about four fsyncs (its scanned segments, the
// directory, a new checkpoint): 10,000 partitions took 40 s to listen
// again. So a release also brings the recovery checkpoint to the log end,
// written without an fsync (checkpointUnsynced), and recovery that finds
// nothing past the checkpoint makes nothing durable (durableToCheckpoint).

// checkpointUnsynced writes the recovery checkpoint at the high watermark
// if it is behind, without fsyncs. The checkpoint only bounds recovery's
// scan, and everything below the high watermark is fsynced already, so
// the file need not be durable: a power loss leaves the old checkpoint
// (more to scan) or an unreadable one (everything scanned, with a
// warning). Call with flushMu and mu held on a clean log.
func (l *Log) checkpointUnsynced() error {
	if cp, err := readCheckpoint(l.fs, l.dir); err == nil && cp == l.hw {
		return nil
	}
	return writeUnsynced(l.fs, l.dir, checkpointFile, []byte(strconv.FormatInt(l.hw, 10)+"\n")) // closehints.go
}

// durableToCheckpoint tells whether recovery found nothing to make
// durable: the log ends exactly at the checkpoint cp, nothing was cut or
// lost, and every scanned segment holds data below cp, so its bytes were
// fsynced, and its directory entry with the flush that covered them,
// before cp was written. A segment starting at cp may be a roll whose
// entry no flush synced yet; then recovery syncs as before.
func (l *Log) durableToCheckpoint(cp int64, scanned []*segment, rep RecoveryReport) bool {
	if cp < 0 || l.leo != cp || rep.TruncatedAt >= 0 || len(rep.Lost) > 0 {
		return false
	}
	for _, s := range scanned {
		if s.base >= cp {
			return false
		}
	}
	l.logger.Debug("partition log ends at its recovery checkpoint: nothing to make durable", "dir", l.dir, "log_end_offset", l.leo)
	return true
}

// closeCheckpoint writes the recovery checkpoint for Close, unless the one
// on disk (a release's, unsynced) is at the high watermark already: the
// clean-shutdown marker makes the next Open trust the segments without
// it, and should a power loss take it, recovery scans more. Thousands of
// released logs closing at shutdown save two fsyncs each. Call with
// flushMu held.
func (l *Log) closeCheckpoint() error {
	l.mu.RLock()
	hw := l.hw
	l.mu.RUnlock()
	if cp, err := readCheckpoint(l.fs, l.dir); err == nil && cp == hw {
		l.lastCheckpoint = time.Now()
		return nil
	}
	return l.writeCheckpoint()
}
