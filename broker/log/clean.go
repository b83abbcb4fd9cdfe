package log

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/tributary-io/tributary/internal/recordbatch"
)

// Compaction (cleanup.policy=compact) keeps, for every key, the last record
// written with it, and removes tombstones (a key with a null value) once
// they are DeleteRetention old. It works as Kafka's cleaner does:
//
//   - The log has a clean part (already compacted) and a dirty part, from
//     Log.cleaned (persisted in cleaner-checkpoint) on. Only sealed segments
//     wholly below the high watermark and whose newest batch is older than
//     MinCompactionLag are cleanable; the active segment never is.
//   - A fixed-size offsetMap is filled with the latest offset of every key of
//     the dirty part, in order, until it is full: what does not fit is
//     cleaned in a later run.
//   - Every cleanable segment up to where the map stopped is rewritten: a
//     record stays if no later record of its key is in the map and it is not
//     an expired tombstone. A record without a key (written before the
//     topic became compacted) goes, as in Kafka. Time is the log's Clock
//     against a batch's MaxTimestamp (the producer's clock, or the
//     broker's under LogAppendTime): a tombstone goes once its batch is
//     DeleteRetention old, where Kafka counts from the cleaning that first
//     saw it; a log is overdue once its oldest dirty segment's newest batch
//     is MaxCompactionLag old, a little later than Kafka, which takes the
//     segment's oldest. Offsets never change: what is removed leaves a
//     gap, recorded in NNN.gaps like the gaps of a repair, and consumers
//     skip it as Kafka consumers skip compacted offsets.
//
// How a batch is written (the only place the log writes batches of its
// own): a batch that keeps every record is copied byte for byte. One that
// keeps some is written anew as a RecordBatch v2 holding the kept records'
// bytes unchanged, with the batch's base offset, last offset delta,
// timestamps and producer fields, so the kept records keep their offsets
// (their offset deltas now have holes, as in a batch Kafka's cleaner
// wrote) and the CRC is recomputed. Its records are compressed with the
// topic's codec when compression.type names one, and with the batch's own
// codec under compression.type=producer, as Kafka's cleaner keeps the
// source codec: a compacted topic stays as small on disk and on the wire
// as its settings promise. A batch that keeps no record is dropped, except the newest batch of an idempotent producer the
// log still tracks: its header stays, with no records, so that producer
// state rebuilt from the log (when a snapshot is lost) still deduplicates
// that producer's retries; Kafka keeps such empty batches for the same
// reason; having no records, it is written uncompressed, as Kafka writes
// it.
//
// The rewritten segments replace the old ones atomically as a set (see
// swap.go).

// CleanStats says what one cleaning of a log did.
type CleanStats struct {
	Segments          int   // segments rewritten
	BytesRead         int64 // bytes of the segments rewritten
	BytesWritten      int64 // bytes of their replacements
	RecordsRemoved    int64 // superseded records and expired tombstones removed
	TombstonesRemoved int64 // of which tombstones
	// DirtyFrom and CleanedTo bound the dirty section this run covered:
	// the log is now clean below CleanedTo.
	DirtyFrom, CleanedTo int64
}

// errCleanStopped ends a cleaning because the log or the cleaner closed.
var errCleanStopped = errors.New("cleaning stopped")

// cleanableLocked returns the segments the cleaner may rewrite now, each
// with a reference taken: sealed, wholly below the high watermark, fully
// fsynced and with their newest batch older than MinCompactionLag, from the
// start of the log up to the first that is not. Call with mu held.
func (l *Log) cleanableLocked(now time.Time) []*segment {
	var out []*segment
	lag := l.cfg.MinCompactionLag.Milliseconds()
	for _, s := range l.segs {
		// A sealed segment may still have its writers open (they close at
		// the flush after the roll only if it had unflushed data then);
		// wholly below the high watermark and not dirty, nothing writes it.
		if s == l.active || s == l.hwSeg || s.next > l.hw || s.dirty {
			break
		}
		if len(l.txns.m) > 0 && s.next > l.txns.first {
			break // a transaction open in it: whether its records count is not known yet
		}
		if lag > 0 && (s.maxTs < 0 || now.UnixMilli()-s.maxTs < lag) {
			break
		}
		s.ref()
		out = append(out, s)
	}
	return out
}

// cleanNeed says how much a cleaning would gain: the dirty share of the
// cleanable bytes, and whether the oldest dirty segment is past
// MaxCompactionLag (then it is cleaned whatever its ratio). A log that does
// not compact, or has nothing dirty, returns ok false.
func (l *Log) cleanNeed() (ratio float64, dirtyBytes int64, overdue, ok, closed bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed || !l.cfg.CleanupPolicy.compacts() {
		return 0, 0, false, false, l.closed
	}
	now := l.cfg.Clock()
	segs := l.cleanableLocked(now)
	defer func() {
		for _, s := range segs {
			s.unref()
		}
	}()
	from := max(l.cleaned, l.start)
	var clean, dirty int64
	first := true
	for _, s := range segs {
		if s.next <= from {
			clean += s.size
			continue
		}
		dirty += s.size
		if first && s.maxTs >= 0 && now.UnixMilli()-s.maxTs > l.cfg.MaxCompactionLag.Milliseconds() {
			overdue = true
		}
		first = false
	}
	if dirty == 0 {
		return 0, 0, false, false, false
	}
	ratio = float64(dirty) / float64(clean+dirty)
	return ratio, dirty, overdue, ratio >= l.cfg.MinCleanableDirtyRatio || overdue, false
}

// clean compacts the log once with m as its offset map (see the comment at
// the top of this file). stop, when closed, ends it early, leaving the log
// as it was.
func (l *Log) clean(m *offsetMap, stop <-chan struct{}) (CleanStats, error) {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	now := l.cfg.Clock()
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return CleanStats{}, ErrClosed
	}
	if !l.cfg.CleanupPolicy.compacts() {
		l.mu.RUnlock()
		return CleanStats{}, nil
	}
	segs := l.cleanableLocked(now)
	from := max(l.cleaned, l.start)
	horizon := now.Add(-l.cfg.DeleteRetention).UnixMilli()
	limit := l.cfg.MaxDecompressedBytes
	newest := l.producers.newestBases()
	ab := l.abortedSetLocked() // txn.go
	store := l.cfg.Compression
	l.mu.RUnlock()
	defer func() {
		for _, s := range segs {
			s.unref()
		}
	}()
	st := CleanStats{DirtyFrom: from, CleanedTo: from}
	if len(segs) == 0 || segs[len(segs)-1].next <= from {
		return st, nil
	}

	// The map: the dirty records in order, until it is full.
	m.reset()
	end := segs[len(segs)-1].next
	full := false
	for _, s := range segs {
		if s.next <= from || full {
			continue
		}
		err := eachRecord(s, limit, stop, func(h *recordbatch.Header, r *cleanRecord, _ []byte) bool {
			off := h.BaseOffset + r.delta
			if off < from || !r.hasKey || h.Control() || ab.aborted(h, off) {
				return true // an aborted record supersedes nothing (txn.go)
			}
			if !m.put(r.key, off) {
				end, full = off, true
				return false
			}
			return true
		})
		if err != nil {
			return st, err
		}
	}
	st.CleanedTo = end

	// The rewrite: every cleanable segment below end, into .cleaned files.
	var out []cleanedSegment
	defer func() {
		for _, c := range out {
			c.discard(l.fs)
		}
	}()
	for _, s := range segs {
		if s.base >= end {
			break
		}
		c, err := l.rewriteSegment(s, m, end, horizon, newest, ab, store, limit, stop, &st)
		if err != nil {
			return st, fmt.Errorf("clean %s: %w", s.path, err)
		}
		out = append(out, c)
	}
	committed, err := l.swapCleaned(out)
	if committed {
		out = nil // the next Open finishes the swap if this one failed: keep the files
	}
	if err != nil {
		return st, err
	}
	l.mu.Lock()
	l.cleaned = max(l.cleaned, end)
	l.mu.Unlock()
	if err := writeFileAtomic(l.fs, l.dir, cleanerCheckpointFile, fmt.Appendf(nil, "%d\n", end)); err != nil {
		// Only costs recleaning the same section after a restart.
		l.logger.Warn("writing cleaner checkpoint", "dir", l.dir, "err", err)
	}
	l.logger.Info("cleaned compacted log", "dir", l.dir, "segments", st.Segments,
		"dirty_offsets", [2]int64{st.DirtyFrom, st.CleanedTo}, "bytes_read", st.BytesRead,
		"bytes_written", st.BytesWritten, "records_removed", st.RecordsRemoved,
		"tombstones_removed", st.TombstonesRemoved, "map_full", full)
	return st, nil
}

// A cleanedSegment is the replacement of a segment, written to .cleaned
// files and fsynced, waiting to be swapped in.
type cleanedSegment struct {
	old   *segment
	index []indexEntry
	next  int64
	maxTs int64
	size  int64
}

func (c cleanedSegment) discard(fsys FS) {
	dir := filepath.Dir(c.old.path)
	fsys.Remove(c.old.path + cleanedSuffix)
	fsys.Remove(gapsPath(dir, c.old.base) + cleanedSuffix)
}

// rewriteSegment writes the records of s that compaction keeps to
// NNN.log.cleaned, and the gaps their removal leaves to NNN.gaps.cleaned;
// store is the topic's compression type, which the batches it rebuilds are
// written in.
func (l *Log) rewriteSegment(s *segment, m *offsetMap, end, horizon int64, newest map[int64]int64, ab abortedSet,
	store Compression, limit int64, stop <-chan struct{}, st *CleanStats) (cleanedSegment, error) {
	c := cleanedSegment{old: s, next: s.base, maxTs: -1}
	dir := filepath.Dir(s.path)
	f, err := l.fs.OpenFile(s.path+cleanedSuffix, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return c, err
	}
	w := bufio.NewWriterSize(f, 256<<10)
	gaps := map[int64]int64{}
	expect := s.base
	var kept []byte // records of the batch being rebuilt
	var count int32
	write := func(h *recordbatch.Header, b []byte) error {
		if h.BaseOffset > expect {
			gaps[expect] = h.BaseOffset
		}
		if n := len(c.index); n == 0 || c.size-int64(c.index[n-1].pos) >= l.cfg.IndexIntervalBytes {
			c.index = append(c.index, indexEntry{rel: uint32(h.BaseOffset - s.base), pos: uint32(c.size), maxTs: max(c.maxTs, h.MaxTimestamp)})
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		c.size += int64(len(b))
		c.maxTs = max(c.maxTs, h.MaxTimestamp)
		expect = h.NextOffset()
		c.next = expect
		return nil
	}
	var werr error
	err = eachBatch(s, limit, stop, func(h *recordbatch.Header, raw, records []byte, recs []cleanRecord) bool {
		kept, count = kept[:0], 0
		for i := range recs {
			r := &recs[i]
			off := h.BaseOffset + r.delta
			// Markers stay (their index entries and the replay need them);
			// an aborted transaction's records go, as in Kafka: no
			// read_committed consumer reads them, and they supersede
			// nothing. Committed ones are records like any other.
			keep := off >= end || h.Control()
			if !keep && ab.aborted(h, off) {
				st.RecordsRemoved++
				continue
			}
			if !keep && r.hasKey {
				latest, found := m.get(r.key)
				keep = !found || latest <= off
				if keep && r.tombstone && h.MaxTimestamp < horizon {
					keep = false
					st.TombstonesRemoved++
				}
			}
			if keep {
				kept = append(kept, records[r.start:r.end]...)
				count++
			} else {
				st.RecordsRemoved++
			}
		}
		switch {
		case int(count) == len(recs):
			werr = write(h, raw)
		case count > 0 || h.ProducerID != -1 && isNewest(newest, h):
			codec, ok := store.Codec()
			if !ok {
				codec = recordbatch.BatchCodec(raw)
			}
			var b []byte
			if b, werr = l.rebuildBatch(raw, kept, count, codec); werr == nil {
				werr = write(h, b)
			}
		}
		return werr == nil
	})
	if err == nil {
		err = werr
	}
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	err = errors.Join(err, f.Close())
	if err == nil {
		if after := s.gapEnd(s.next); after > expect {
			gaps[expect] = after
		}
		err = writeSynced(l.fs, gapsPath(dir, s.base)+cleanedSuffix, encodeGaps(gaps))
	}
	if err != nil {
		c.discard(l.fs)
		return c, err
	}
	st.Segments++
	st.BytesRead += s.size
	st.BytesWritten += c.size
	return c, nil
}

// isNewest says whether h is the newest batch of its producer as the
// log's producer state remembers it.
func isNewest(newest map[int64]int64, h *recordbatch.Header) bool {
	base, ok := newest[h.ProducerID]
	return ok && base == h.BaseOffset
}

// newestBases maps every tracked producer id to the base offset of its
// newest batch.
func (p *producers) newestBases() map[int64]int64 {
	out := make(map[int64]int64, len(p.index))
	for id, i := range p.index {
		if e := &p.entries[i]; e.n > 0 {
			out[id] = e.newest().base
		}
	}
	return out
}

// rebuildBatch is the batch raw with only the given records (their bytes
// unchanged), compressed with codec (uncompressed when it keeps none), its
// CRC recomputed.
func (l *Log) rebuildBatch(raw, records []byte, count int32, codec Codec) ([]byte, error) {
	header := make([]byte, recordbatch.HeaderSize)
	copy(header, raw[:recordbatch.HeaderSize])
	binary.BigEndian.PutUint32(header[recordbatch.OffRecordCount:], uint32(count))
	if count == 0 {
		codec = CodecNone
	}
	// It holds fewer records than a batch the log already accepted: only
	// the batch's int32 length field caps it.
	b, ok, err := recordbatch.Encode(header, records, codec, math.MaxInt32)
	if err == nil && !ok {
		err = fmt.Errorf("%w: rebuilt with %s the batch takes more than %d bytes", ErrBatchTooLarge, codec, math.MaxInt32)
	}
	return b, err
}

// writeSynced writes a whole file and fsyncs it.
func writeSynced(fsys FS, path string, data []byte) error {
	f, err := fsys.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// cleanRecord is what the cleaner needs of one record: its offset delta,
// key, whether it is a tombstone, and where its bytes lie in the records.
type cleanRecord struct {
	delta      int64
	key        []byte
	hasKey     bool
	tombstone  bool
	start, end int
}
