package log

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A flush fsyncs what an acknowledgement needs, the active segment's data,
// and not its index: the index fsync was a second journal commit that every
// acks=all request waited for. A rolled segment's index is fsynced by the
// flush that covers its end, before recovery may trust it.
func TestFlushFsyncsActiveDataOnly(t *testing.T) {
	// segmentBytes 0: one segment; else rolls every three batches.
	run := func(segmentBytes int64, appends int) (segmentSyncs, indexSyncs int) {
		dir := filepath.Join(t.TempDir(), "p")
		cfs := newCrashFS(t, dir)
		cfg := fixtureConfig() // an index entry per batch
		if segmentBytes > 0 {
			cfg.SegmentBytes = segmentBytes
		} else {
			cfg.SegmentBytes = 1 << 30
		}
		cfg.FS = cfs
		l, _, err := Open(dir, cfg, quietLogger())
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		l.Flush() // the new segment's files and directory entry
		segs, idxs := cfs.Hits("before-segment-sync"), cfs.Hits("before-index-sync")
		for range appends {
			_, err := appendAcked(l, fixtureBatch())
			if err != nil {
				t.Fatal(err)
			}
		}
		return cfs.Hits("before-segment-sync") - segs, cfs.Hits("before-index-sync") - idxs
	}
	segs, idxs := run(0, 20)
	if segs < 1 {
		t.Errorf("20 acks=all appends fsynced the segment %d times", segs)
	}
	if idxs != 0 {
		t.Errorf("20 acks=all appends in one segment fsynced its index %d times, want 0 (a flush syncs data only)", idxs)
	}
	// The flush that covers a rolled segment's end fsyncs its index.
	if _, idxs := run(3*fixtureBatchSize()+10, 10); idxs < 3 {
		t.Errorf("three rolls fsynced %d indexes, want one per rolled segment", idxs)
	}
}

// Power fails after acks=all appends over several segments and a recovery
// checkpoint, with the active segment's index never fsynced: the rolled
// segments' indexes are whole on disk (fsynced at the roll, so recovery can
// trust them), the next Open scans from the checkpoint's segment on, and
// every acknowledged batch is read back at its offset.
func TestPowerLossWithUnsyncedActiveIndex(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p")
	cfs := newCrashFS(t, dir)
	cfg := fixtureConfig()
	cfg.FS = cfs
	l, _, err := Open(dir, cfg, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	acked := map[int64][]byte{}
	appendMany := func(n int) {
		for range n {
			b := fixtureBatch()
			res, err := appendAcked(l, b)
			if err != nil {
				t.Fatal(err)
			}
			acked[res.BaseOffset] = bytes.Clone(b)
		}
	}
	appendMany(10) // four segments
	l.flushMu.Lock()
	l.lastCheckpoint = time.Time{} // the next flush writes the checkpoint
	l.flushMu.Unlock()
	appendMany(2)
	cfs.CrashAfter(0) // the power fails now: nothing more reaches the disk
	l.Close()
	if err := cfs.PowerLoss(); err != nil {
		t.Fatal(err)
	}
	// What survived: every rolled segment's index whole (an entry per
	// batch, three batches a segment), fsynced when it rolled.
	indexes, _ := filepath.Glob(filepath.Join(dir, "*.index"))
	if len(indexes) != 4 {
		t.Fatalf("%d indexes after the power loss, want 4: %v", len(indexes), indexes)
	}
	for _, p := range indexes[:len(indexes)-1] {
		if fi, err := os.Stat(p); err != nil || fi.Size() != 3*indexEntrySize {
			t.Errorf("rolled segment's index %s after the power loss: %v, want %d bytes", filepath.Base(p), err, 3*indexEntrySize)
		}
	}
	l2, rep, err := Open(dir, fixtureConfig(), quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if rep.Clean || rep.SegmentsScanned == 0 || rep.SegmentsScanned > 2 {
		t.Errorf("recovery %+v: want a scan from the checkpoint's segment only", rep)
	}
	for base, want := range acked {
		s, err := l2.Read(base, 1)
		if err != nil {
			t.Fatalf("acknowledged batch at offset %d: %v (recovery %+v)", base, err, rep)
		}
		if got := readAll(t, s); !bytes.HasPrefix(got, want) {
			t.Fatalf("acknowledged batch at offset %d changed (recovery %+v)", base, rep)
		}
	}
}

// The aborted-transaction index is fsynced by the flush that covers an
// abort marker, before the data, and not again by later flushes of the
// same segment: each such fsync is a disk-cache flush that acks=all
// requests would wait for, on every flush of a segment that once held an
// abort.
func TestFlushFsyncsAbortedIndexOnlyWithNewEntries(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p")
	cfs := newCrashFS(t, dir)
	cfg := fixtureConfig()
	cfg.SegmentBytes = 1 << 30 // one segment: no roll, no producer snapshot
	cfg.FS = cfs
	l, _, err := Open(dir, cfg, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	acked := func(b []byte) {
		t.Helper()
		_, err := appendAcked(l, b)
		if err != nil {
			t.Fatal(err)
		}
	}
	l.Flush()
	// "other" is every file that is not data, index, checkpoint or
	// marker; with no roll, only the aborted index is fsynced as one.
	before := cfs.Hits("before-other-sync")
	acked(txnBatch(7, 0, 0, 2))
	off := mustMarker(t, l, 7, 0, false)
	if err := l.WaitFlushed(context.Background(), off); err != nil {
		t.Fatal(err)
	}
	if n := cfs.Hits("before-other-sync") - before; n != 1 {
		t.Fatalf("the flush covering an abort marker fsynced the aborted index %d times, want 1", n)
	}
	before = cfs.Hits("before-other-sync")
	for range 10 {
		acked(fixtureBatch())
	}
	if n := cfs.Hits("before-other-sync") - before; n != 0 {
		t.Errorf("10 acks=all appends after the abort fsynced the aborted index %d times, want 0", n)
	}
}

// Index entries reach the file when it is fsynced (roll, checkpoint,
// release, seal), not one write per indexed append: that was a second
// syscall on every produce request past the index interval. Whatever the
// path, the file matches the in-memory index once the segment is released
// or closed, so a clean Open trusts it and rebuilds nothing.
func TestIndexEntriesWrittenWithTheIndexFsync(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p")
	cfg := fixtureConfig() // an index entry per batch
	cfg.SegmentBytes = 1 << 30
	l, _, err := Open(dir, cfg, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	l.flushMu.Lock()
	l.lastCheckpoint = time.Now().Add(time.Hour) // no checkpoint (and its index fsync) however slow the machine
	l.flushMu.Unlock()
	indexSize := func() int64 {
		t.Helper()
		paths, _ := filepath.Glob(filepath.Join(dir, "*.index"))
		if len(paths) != 1 {
			t.Fatalf("indexes %v, want one", paths)
		}
		fi, err := os.Stat(paths[0])
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	for range 5 {
		if _, err := appendAcked(l, fixtureBatch()); err != nil {
			t.Fatal(err)
		}
	}
	if n := indexSize(); n != 0 {
		t.Errorf("index file after 5 acks=all appends: %d bytes, want 0 (entries wait for the index fsync)", n)
	}
	release(t, l)
	if n := indexSize(); n != 5*indexEntrySize {
		t.Errorf("index file after a release: %d bytes, want %d", n, 5*indexEntrySize)
	}
	for range 3 { // reopens the writers, the file as it is
		if _, err := appendAcked(l, fixtureBatch()); err != nil {
			t.Fatal(err)
		}
	}
	l.mu.RLock()
	want := encodeIndex(l.active.index)
	l.mu.RUnlock()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(idxPath(dir, 0)); err != nil || !bytes.Equal(got, want) || len(want) != 8*indexEntrySize {
		t.Fatalf("index file after close: %d bytes (%v), want the 8 entries in memory", len(got), err)
	}
	l2, rep, err := Open(dir, cfg, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if !rep.Clean || rep.IndexesRebuilt != 0 {
		t.Errorf("reopen after a clean close: %+v, want clean with no index rebuilt", rep)
	}
}

// A log flushed at long intervals writes no checkpoint for a long time:
// its pending index entries are bounded all the same, the append that
// fills maxPendingIndex writing them.
func TestPendingIndexEntriesAreBounded(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p")
	cfg := fixtureConfig()
	cfg.SegmentBytes = 1 << 30
	cfg.IntervalFlush, cfg.FlushInterval, cfg.FlushMessages = true, time.Hour, 1<<40
	l, _, err := Open(dir, cfg, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const perWrite = maxPendingIndex / indexEntrySize
	batch := fixtureBatch()
	for range perWrite + 10 {
		if _, err := l.Append(bytes.Clone(batch)); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(idxPath(dir, 0))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != maxPendingIndex {
		t.Fatalf("index file after %d indexed appends and no fsync: %d bytes, want the first %d written", perWrite+10, fi.Size(), maxPendingIndex)
	}
	l.mu.RLock()
	s := l.active
	l.mu.RUnlock()
	s.idxMu.Lock()
	defer s.idxMu.Unlock()
	if len(s.idxPending) != 10*indexEntrySize {
		t.Errorf("%d bytes of entries pending, want the last 10 entries'", len(s.idxPending))
	}
}
