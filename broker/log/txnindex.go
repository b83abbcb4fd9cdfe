package log

// The aborted-transaction index of a segment, NNN.txnindex, as Kafka keeps
// it: one 34-byte entry per transaction aborted by a marker in the
// segment, in marker order,
//
//	version int16 (0) | producer id int64 | first offset int64 |
//	last offset int64 (the marker) | last stable offset int64
//
// big-endian. The file exists only for segments that hold an abort marker.
// An entry is written when its marker is appended, and fsynced with the
// segment, before the segment's data: a durable marker always has its
// durable entry. What the file holds past the log end (a marker the crash
// or a truncation cut) is dropped at Open, and entries at or after the
// producer snapshot's offset are rebuilt from the batch headers, so a torn
// or missing file costs nothing below the snapshot either: a rolled
// segment's index is fsynced before the snapshot taken at the roll.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
)

const (
	txnIndexSuffix    = ".txnindex"
	txnIndexEntrySize = 34
)

func txnIndexPath(dir string, base int64) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", base, txnIndexSuffix))
}

func (a AbortedTxn) appendTo(b []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, 0)
	b = binary.BigEndian.AppendUint64(b, uint64(a.ProducerID))
	b = binary.BigEndian.AppendUint64(b, uint64(a.FirstOffset))
	b = binary.BigEndian.AppendUint64(b, uint64(a.LastOffset))
	return binary.BigEndian.AppendUint64(b, uint64(a.FirstOffset))
}

// decodeTxnIndex reads the entries of a segment [base, next): a torn last
// entry is ignored, and an entry that does not fit the segment ends the
// list (the replay after the snapshot rebuilds what follows).
func decodeTxnIndex(b []byte, base, next int64) []AbortedTxn {
	var out []AbortedTxn
	for ; len(b) >= txnIndexEntrySize; b = b[txnIndexEntrySize:] {
		a := AbortedTxn{
			ProducerID:  int64(binary.BigEndian.Uint64(b[2:])),
			FirstOffset: int64(binary.BigEndian.Uint64(b[10:])),
			LastOffset:  int64(binary.BigEndian.Uint64(b[18:])),
		}
		if binary.BigEndian.Uint16(b) != 0 || a.ProducerID < 0 || a.FirstOffset < 0 ||
			a.FirstOffset > a.LastOffset || a.LastOffset < base || a.LastOffset >= next ||
			len(out) > 0 && a.LastOffset <= out[len(out)-1].LastOffset {
			break
		}
		out = append(out, a)
	}
	return out
}

// loadAborted reads the segment's index file, if any.
func (s *segment) loadAborted(dir string) error {
	b, err := s.fs.ReadFile(txnIndexPath(dir, s.base))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", txnIndexPath(dir, s.base), err)
	}
	// Entries past the segment's end are kept for now: the replay after
	// the snapshot drops them and rewrites the file (finishReplay).
	s.aborted = decodeTxnIndex(b, s.base, math.MaxInt64)
	return nil
}

// addAborted appends an entry, opening the index file on the segment's
// first abort; the flush fsyncs it with the segment (sync). Call with
// Log.mu held.
func (s *segment) addAborted(a AbortedTxn, dir string) error {
	if s.txnW == nil {
		f, err := s.fs.OpenFile(txnIndexPath(dir, s.base), os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return fmt.Errorf("opening %s: %w", txnIndexPath(dir, s.base), err)
		}
		s.wmu.Lock()
		s.txnW, s.txnNew = f, true
		s.wmu.Unlock()
	}
	_, err := s.txnW.WriteAt(a.appendTo(nil), int64(len(s.aborted))*txnIndexEntrySize)
	s.txnDirty.Store(true)
	if err != nil {
		return fmt.Errorf("writing %s: %w", txnIndexPath(dir, s.base), err)
	}
	s.aborted = append(s.aborted, a)
	return nil
}

// rewriteAborted replaces the segment's index with entries, atomically
// (an empty list removes the file).
func (s *segment) rewriteAborted(entries []AbortedTxn) error {
	dir := filepath.Dir(s.path)
	s.closeTxnIndex()
	s.aborted = entries
	if len(entries) == 0 {
		if err := s.fs.Remove(txnIndexPath(dir, s.base)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	b := make([]byte, 0, len(entries)*txnIndexEntrySize)
	for _, a := range entries {
		b = a.appendTo(b)
	}
	return writeFileAtomic(s.fs, dir, filepath.Base(txnIndexPath(dir, s.base)), b)
}

// syncTxnIndex fsyncs the index writer, if any; call with wmu held.
func (s *segment) syncTxnIndex() error {
	if s.txnW == nil {
		return nil
	}
	if err := s.txnW.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", txnIndexPath(filepath.Dir(s.path), s.base), err)
	}
	if s.txnNew {
		// The file is new: its directory entry must be as durable as
		// the entries in it before the marker's bytes are.
		if err := s.fs.SyncDir(filepath.Dir(s.path)); err != nil {
			return err
		}
		s.txnNew = false
	}
	return nil
}

// closeTxnIndex closes the index writer; call without wmu.
func (s *segment) closeTxnIndex() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.txnW == nil {
		return nil
	}
	err := s.txnW.Close()
	s.txnW = nil
	return err
}

// syncTxnIndexForSnapshot fsyncs a rolled segment's aborted index before
// the roll's producer snapshot is written: Open trusts the files for what
// lies below a snapshot. A failure is logged; the next flush tries again.
func (s *segment) syncTxnIndexForSnapshot(logger *slog.Logger) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.syncTxnIndex(); err != nil {
		logger.Warn("fsync of an aborted-transaction index failed", "file", s.path, "err", err)
	}
}
