package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tributary-io/tributary/internal/recordbatch"
)

// A producer snapshot is the table of idempotent producers as it stood at
// one log end offset, so that Open need not read every batch header of the
// log to answer the retry of a batch written long ago. The log writes one
// when it rolls a segment and when it closes, in a file named by the offset
// it covers (NNN.producers, %020d), and keeps the newest
// producerSnapshotsKept: if the newest is damaged, or recovery cut the log
// below it, the one before still saves most of the scan.
//
// The file is framed so that a torn or damaged snapshot is detected and
// ignored, never half-believed:
//
//	length uint32 | crc32c uint32 (of data) | data
//	data:  version uint8 (3) | offset int64 | count uint32 | count × producer |
//	       open uint32 | open × (producer id int64 | first offset int64)
//	producer: id int64 | epoch int16 | last append ms int64 |
//	          coordinator epoch int32 | n uint8 |
//	          n × (first sequence int32 | records int32 | base offset int64)
//
// all big-endian; producers least recently appended first, each one's
// batches oldest first, so loading rebuilds the recency order too. The
// open list is the transactions open at offset (txn.go): where each began.
// The coordinator epoch is that of the newest marker written for the
// producer, with which the log refuses an older coordinator's markers; a
// producer known here only by its markers has no batches (n = 0).
// Version 2 has no coordinator epoch and no producer without batches;
// version 1, written before transactions, has no open list either.
const (
	producerSnapshotSuffix  = ".producers"
	producerSnapshotVersion = 3
	producerSnapshotsKept   = 2

	snapshotFrame     = 8  // length and CRC
	snapshotHeader    = 13 // version, offset, count
	snapshotProducer  = 23 // a producer without its batches (19 before version 3)
	snapshotBatchSize = 16
)

func snapshotPath(dir string, offset int64) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", offset, producerSnapshotSuffix))
}

// encodeProducerSnapshot serializes p as the state at offset.
func encodeProducerSnapshot(p *producers, txns *openTxns, offset int64) []byte {
	size := snapshotFrame + snapshotHeader + p.len()*(snapshotProducer+producerBatchesKept*snapshotBatchSize) + 4 + 16*len(txns.m)
	b := make([]byte, snapshotFrame, size)
	b = append(b, producerSnapshotVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(offset))
	b = binary.BigEndian.AppendUint32(b, uint32(p.len()))
	p.each(func(e *producerEntry) {
		b = binary.BigEndian.AppendUint64(b, uint64(e.id))
		b = binary.BigEndian.AppendUint16(b, uint16(e.epoch))
		b = binary.BigEndian.AppendUint64(b, uint64(e.lastSeen))
		b = binary.BigEndian.AppendUint32(b, uint32(e.coordEpoch))
		b = append(b, e.n)
		for k := range int(e.n) {
			r := e.batches[(int(e.head)+producerBatchesKept-int(e.n)+k)%producerBatchesKept]
			b = binary.BigEndian.AppendUint32(b, uint32(r.firstSeq))
			b = binary.BigEndian.AppendUint32(b, uint32(r.count))
			b = binary.BigEndian.AppendUint64(b, uint64(r.base))
		}
	})
	b = binary.BigEndian.AppendUint32(b, uint32(len(txns.m)))
	for _, pid := range slices.Sorted(maps.Keys(txns.m)) {
		b = binary.BigEndian.AppendUint64(b, uint64(pid))
		b = binary.BigEndian.AppendUint64(b, uint64(txns.m[pid]))
	}
	binary.BigEndian.PutUint32(b[0:], uint32(len(b)-snapshotFrame))
	binary.BigEndian.PutUint32(b[4:], crc32.Checksum(b[snapshotFrame:], snapshotCRC))
	return b
}

// snapshotCRC is the table of the snapshot file's CRC32C.
var snapshotCRC = crc32.MakeTable(crc32.Castagnoli)

// decodeProducerSnapshot rebuilds the table a snapshot of offset holds. Any
// inconsistency (frame, CRC, version, an offset other than the file's, a
// batch at or past offset, a repeated producer) fails the whole snapshot.
func decodeProducerSnapshot(b []byte, offset int64, into producers, txns *openTxns) (producers, error) {
	if len(b) < snapshotFrame+snapshotHeader {
		return into, fmt.Errorf("%d bytes, shorter than a snapshot header", len(b))
	}
	if n := int64(binary.BigEndian.Uint32(b)); n != int64(len(b)-snapshotFrame) {
		return into, fmt.Errorf("length field says %d bytes of data, the file holds %d (torn write?)", n, len(b)-snapshotFrame)
	}
	data := b[snapshotFrame:]
	if want, got := binary.BigEndian.Uint32(b[4:]), crc32.Checksum(data, snapshotCRC); want != got {
		return into, fmt.Errorf("crc mismatch: header says %08x, bytes give %08x", want, got)
	}
	version := data[0]
	if version < 1 || version > producerSnapshotVersion {
		return into, fmt.Errorf("unknown snapshot version %d", data[0])
	}
	producerSize, minBatches := snapshotProducer, 0
	if version < 3 {
		producerSize, minBatches = snapshotProducer-4, 1
	}
	if at := int64(binary.BigEndian.Uint64(data[1:])); at != offset {
		return into, fmt.Errorf("snapshot says it covers offset %d, its name says %d", at, offset)
	}
	count := int(binary.BigEndian.Uint32(data[9:]))
	data = data[snapshotHeader:]
	if count > len(data)/producerSize {
		return into, fmt.Errorf("%d producers cannot fit in %d bytes", count, len(data))
	}
	for i := range count {
		if len(data) < producerSize {
			return into, fmt.Errorf("producer %d of %d: snapshot ends early", i, count)
		}
		id := int64(binary.BigEndian.Uint64(data))
		epoch := int16(binary.BigEndian.Uint16(data[8:]))
		lastSeen := int64(binary.BigEndian.Uint64(data[10:]))
		coordEpoch := int32(0)
		if version >= 3 {
			coordEpoch = int32(binary.BigEndian.Uint32(data[18:]))
		}
		n := int(data[producerSize-1])
		data = data[producerSize:]
		if id == -1 || n < minBatches || n > producerBatchesKept || len(data) < n*snapshotBatchSize || coordEpoch < -1 {
			return into, fmt.Errorf("producer %d of %d (id %d): malformed, %d batches, coordinator epoch %d", i, count, id, n, coordEpoch)
		}
		if into.lookup(id) != nil {
			return into, fmt.Errorf("producer id %d appears twice", id)
		}
		e := into.insert(id)
		e.epoch, e.lastSeen, e.coordEpoch = epoch, lastSeen, max(coordEpoch, 0)
		for range n {
			r := seqRange{
				firstSeq: int32(binary.BigEndian.Uint32(data)),
				count:    int32(binary.BigEndian.Uint32(data[4:])),
				base:     int64(binary.BigEndian.Uint64(data[8:])),
			}
			data = data[snapshotBatchSize:]
			if r.firstSeq < 0 || r.count < 1 || r.base < 0 || r.last() >= offset {
				return into, fmt.Errorf("producer id %d: batch of %d records at sequence %d, offset %d: not below offset %d",
					id, r.count, r.firstSeq, r.base, offset)
			}
			e.push(r)
		}
	}
	txns.reset()
	if version >= 2 {
		if len(data) < 4 {
			return into, fmt.Errorf("snapshot ends before its open transactions")
		}
		open := int(binary.BigEndian.Uint32(data))
		data = data[4:]
		if open > len(data)/16 {
			return into, fmt.Errorf("%d open transactions cannot fit in %d bytes", open, len(data))
		}
		prev := int64(-1)
		for range open {
			pid, first := int64(binary.BigEndian.Uint64(data)), int64(binary.BigEndian.Uint64(data[8:]))
			data = data[16:]
			if pid <= prev || first < 0 || first >= offset {
				return into, fmt.Errorf("open transaction of producer %d at offset %d: not below offset %d, or out of order", pid, first, offset)
			}
			prev = pid
			txns.begin(pid, first)
		}
	}
	if len(data) != 0 {
		return into, fmt.Errorf("%d bytes after the last producer", len(data))
	}
	return into, nil
}

// listProducerSnapshots returns the offsets of the snapshot files in dir,
// sorted.
func listProducerSnapshots(fsys FS, dir string) ([]int64, error) {
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var offsets []int64
	for _, e := range ents {
		name := e.Name()
		digits, ok := strings.CutSuffix(name, producerSnapshotSuffix)
		if !ok || len(digits) != 20 {
			continue
		}
		if off, err := strconv.ParseInt(digits, 10, 64); err == nil && off >= 0 {
			offsets = append(offsets, off)
		}
	}
	sort.Slice(offsets, func(i, j int) bool { return offsets[i] < offsets[j] })
	return offsets, nil
}

// snapshotProducers writes the producer table as of the log end offset,
// after forgetting expired producers, and deletes the snapshots no longer
// needed. A failure costs only a longer scan at the next Open, so it is
// logged and returned for the caller to decide. Call with mu held (or
// after the log stopped taking appends).
func (l *Log) snapshotProducers() error { return l.snapshotProducersWith(writeFileAtomic) }

// snapshotProducersWith is snapshotProducers writing the file with write:
// Close's snapshot is written without fsyncs (closehints.go).
func (l *Log) snapshotProducersWith(write func(fsys FS, dir, name string, data []byte) error) error {
	now := l.cfg.Clock()
	if n := l.producers.expire(now.Add(-l.cfg.ProducerIDExpiry)); n > 0 {
		l.logger.Debug("expired idle producer ids", "dir", l.dir, "count", n)
	}
	data := encodeProducerSnapshot(&l.producers, &l.txns, l.leo)
	name := filepath.Base(snapshotPath(l.dir, l.leo))
	if err := write(l.fs, l.dir, name, data); err != nil {
		err = fmt.Errorf("write producer snapshot %s: %w", name, err)
		l.logger.Warn("could not snapshot producer state: the next start scans more of the log to rebuild it",
			"dir", l.dir, "err", err)
		return err
	}
	l.pruneProducerSnapshots()
	return nil
}

// pruneProducerSnapshots keeps the newest snapshots and deletes the rest,
// and any whose offset retention has deleted from the log (a newer one
// then exists, the one written at the new start's roll or after).
func (l *Log) pruneProducerSnapshots() {
	offsets, err := listProducerSnapshots(l.fs, l.dir)
	if err != nil {
		return
	}
	for i, off := range offsets {
		if i < len(offsets)-producerSnapshotsKept || (off < l.start && i < len(offsets)-1) {
			if err := l.fs.Remove(snapshotPath(l.dir, off)); err != nil && !errors.Is(err, os.ErrNotExist) {
				l.logger.Warn("deleting old producer snapshot", "dir", l.dir, "offset", off, "err", err)
			}
		}
	}
}

// loadProducerSnapshot loads the newest valid snapshot at or below leo and
// returns the offset it covers, or -1 when there is none. Snapshots above
// leo (recovery cut the log below them) and damaged ones are deleted.
func (l *Log) loadProducerSnapshot(leo int64) (int64, error) {
	offsets, err := listProducerSnapshots(l.fs, l.dir)
	if err != nil {
		return -1, err
	}
	for i := len(offsets) - 1; i >= 0; i-- {
		off, path := offsets[i], snapshotPath(l.dir, offsets[i])
		why := "it covers offsets past the log end, which recovery cut"
		if off <= leo {
			b, err := l.fs.ReadFile(path)
			if err == nil {
				var p producers
				p, err = decodeProducerSnapshot(b, off, newProducers(l.cfg.MaxProducerIDs, l.logger, l.dir), &l.txns)
				if err == nil {
					l.producers = p
					return off, nil
				}
			}
			why = err.Error()
		}
		l.logger.Warn("discarding producer snapshot: rebuilding idempotent producer state from the log instead",
			"file", path, "log_end_offset", leo, "why", why)
		l.fs.Remove(path)
	}
	return -1, nil
}

// loadProducerState rebuilds the table of idempotent producers at Open:
// the newest valid snapshot at or below the recovered log end, then the
// batch headers after it (only headers are read, never records). Without
// a snapshot, as in a data directory written before snapshots existed,
// every segment's headers are read, so dedupe survives an upgrade too.
// Producers found in the headers count as active now: their real last
// append time is not stored in the log. It also sets the active segment's
// age for segment.ms.
func (l *Log) loadProducerState() error {
	now := l.cfg.Clock()
	leo := l.active.next
	l.producers = newProducers(l.cfg.MaxProducerIDs, l.logger, l.dir)
	l.txns.hold(l.start) // released once rebuilt; a failed reload keeps it
	l.txns.reset()
	for _, s := range l.segs {
		if err := s.loadAborted(l.dir); err != nil {
			return err
		}
	}
	from, err := l.loadProducerSnapshot(leo)
	if err != nil {
		return err
	}
	if from < 0 {
		l.txns.reset() // what a damaged snapshot left
	}
	replay := &txnReplay{from: max(from, 0), aborted: map[*segment][]AbortedTxn{}}
	l.setActiveFirstTime(now)
	scanned := 0
	for _, s := range l.segs {
		if s.next <= from || s.size == 0 {
			continue
		}
		pos := int64(0)
		if from > s.base && len(s.index) > 0 {
			pos = int64(lookup(s.index, uint32(from-s.base)).pos)
		}
		r := newReader(s.f, s.size, scanWindow)
		for pos < s.size {
			b, err := r.peek(pos, recordbatch.HeaderSize)
			if err != nil {
				return fmt.Errorf("segment %s: reading batch header at byte %d: %w", s.path, pos, err)
			}
			h := recordbatch.ParseHeader(b)
			if h.Length < recordbatch.MinLength {
				return fmt.Errorf("segment %s: %w: length %d at byte %d", s.path, ErrCorruptBatch, h.Length, pos)
			}
			if h.ProducerID != -1 && h.BaseOffset >= from {
				if h.Control() {
					b, err = r.peek(pos, int(min(h.Size(), markerPeek)))
					coordEpoch := int32(-1)
					if err == nil {
						_, coordEpoch, _ = recordbatch.ControlRecord(b) // a bad marker is reported below
					}
					l.producers.marker(&h, coordEpoch, now)
				} else {
					l.producers.record(&h, h.BaseOffset, h.NextOffset()-1, now)
				}
				if h.Transactional() {
					if err == nil {
						err = l.replayBatch(replay, s, &h, b)
					}
					if err != nil {
						return fmt.Errorf("segment %s: batch at byte %d: %w", s.path, pos, err)
					}
				}
				scanned++
			}
			pos += h.Size()
		}
	}
	if err := l.finishReplay(replay); err != nil {
		return err
	}
	l.txns.release()
	expired := l.producers.expire(now.Add(-l.cfg.ProducerIDExpiry))
	l.logger.Debug("loaded idempotent producer state", "dir", l.dir, "snapshot_offset", from,
		"batches_scanned", scanned, "producers", l.producers.len(), "expired", expired)
	return nil
}

// setActiveFirstTime sets when the active segment got its first batch, for
// segment.ms. The broker's append time is not stored; the first batch's
// timestamp stands in for it unless it is absent or in the future.
func (l *Log) setActiveFirstTime(now time.Time) {
	s := l.active
	s.firstTime = now
	if s.size < recordbatch.HeaderSize {
		return
	}
	b := make([]byte, recordbatch.HeaderSize)
	if _, err := s.f.ReadAt(b, 0); err != nil {
		return
	}
	if h := recordbatch.ParseHeader(b); h.MaxTimestamp > 0 && h.MaxTimestamp <= now.UnixMilli() {
		s.firstTime = time.UnixMilli(h.MaxTimestamp)
	}
}
