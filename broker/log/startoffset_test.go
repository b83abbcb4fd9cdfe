package log

import (
	"errors"
	"testing"
)

// fiveSegments opens a log of five sealed two-batch segments plus the
// active one (offsets 0..10, one record per batch), all flushed.
func fiveSegments(t *testing.T, dir string) *Log {
	t.Helper()
	cfg := testConfig()
	cfg.SegmentBytes = int64(len(makeBatch(batchOpts{}))) * 2
	l, _ := openLog(t, dir, cfg)
	for range 11 {
		mustAppend(t, l, makeBatch(batchOpts{}))
	}
	mustFlush(t, l)
	return l
}

func TestDeleteRecordsBefore(t *testing.T) {
	dir := t.TempDir()
	l := fiveSegments(t, dir)
	if n := len(segmentFiles(t, dir)); n != 6 {
		t.Fatalf("%d segments, want 6", n)
	}
	start, err := l.DeleteRecordsBefore(5)
	if err != nil || start != 5 {
		t.Fatalf("DeleteRecordsBefore(5) = %d, %v", start, err)
	}
	// Segments [0,2) and [2,4) go; [4,6) holds offset 5 and stays.
	if n := len(segmentFiles(t, dir)); n != 4 {
		t.Errorf("%d segments left, want 4", n)
	}
	if l.StartOffset() != 5 {
		t.Errorf("start offset %d, want 5", l.StartOffset())
	}
	if _, err := l.Read(4, 1<<20); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Errorf("reading below the start: %v, want out of range", err)
	}
	s, err := l.Read(5, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if hs := batchesIn(t, readAll(t, s)); len(hs) == 0 || hs[0].BaseOffset > 5 || hs[len(hs)-1].NextOffset() <= 5 {
		t.Errorf("reading at the start gave batches %+v", hs)
	}
	s.Release()

	if start, _ := l.DeleteRecordsBefore(3); start != 5 {
		t.Errorf("moving the start back gave %d, want it kept at 5", start)
	}
	if _, err := l.DeleteRecordsBefore(12); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Errorf("beyond the high watermark: %v, want out of range", err)
	}

	// The start survives a clean restart and a crash.
	l.Close()
	l2, _ := openLog(t, dir, testConfig())
	if l2.StartOffset() != 5 {
		t.Errorf("after a restart the start offset is %d, want 5", l2.StartOffset())
	}
	crash(l2)
	l3, _ := openLog(t, dir, testConfig())
	if l3.StartOffset() != 5 {
		t.Errorf("after a crash the start offset is %d, want 5", l3.StartOffset())
	}
	if start, err := l3.DeleteRecordsBefore(-1); err != nil || start != 11 || l3.HighWatermark() != 11 {
		t.Errorf("DeleteRecordsBefore(high watermark) = %d, %v", start, err)
	}
	if n := len(segmentFiles(t, dir)); n != 1 {
		t.Errorf("%d segments left after deleting everything, want the active one", n)
	}
}

func TestReconfigureAppliesToOpenLog(t *testing.T) {
	dir := t.TempDir()
	l, _ := openLog(t, dir, testConfig())
	for range 4 {
		mustAppend(t, l, makeBatch(batchOpts{}))
	}
	if n := len(segmentFiles(t, dir)); n != 1 {
		t.Fatalf("%d segments before, want 1", n)
	}
	cfg := testConfig()
	cfg.SegmentBytes = int64(len(makeBatch(batchOpts{})))
	cfg.RetentionBytes = 1
	l.Reconfigure(cfg)
	for range 3 {
		mustAppend(t, l, makeBatch(batchOpts{}))
	}
	mustFlush(t, l)
	if n := len(segmentFiles(t, dir)); n != 4 {
		t.Errorf("%d segments after lowering segment.bytes, want 4 (one per new batch)", n)
	}
	if _, err := l.ApplyRetention(); err != nil {
		t.Fatal(err)
	}
	if l.StartOffset() != 6 {
		t.Errorf("start offset %d after lowering retention.bytes, want 6", l.StartOffset())
	}
}
