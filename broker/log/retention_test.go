package log

import (
	"bytes"
	"os"
	"testing"
	"time"
)

// retentionLog has segments of two 150-byte-value batches each.
func retentionLog(t *testing.T, cfg Config, clock *fakeClock, batches int) *Log {
	t.Helper()
	cfg.Clock = clock.Now
	cfg.SegmentBytes = int64(len(makeBatch(batchOpts{valueSize: 150}))) * 2
	l, _ := openLog(t, t.TempDir(), cfg)
	for range batches {
		mustAppend(t, l, makeBatch(batchOpts{valueSize: 150, ts: clock.Now().UnixMilli()}))
		clock.Advance(time.Hour)
	}
	mustFlush(t, l)
	return l
}

func TestRetentionByAge(t *testing.T) {
	clock := newFakeClock()
	cfg := testConfig()
	cfg.RetentionAge = 3 * time.Hour
	l := retentionLog(t, cfg, clock, 7) // segments [0,1] [2,3] [4,5] [6]; now = ts(6)+1h
	n, err := l.ApplyRetention()
	if err != nil {
		t.Fatal(err)
	}
	// Segment [2,3] has newest batch ts(3) = now-4h: expired; [4,5] has now-2h.
	if n != 2 || l.StartOffset() != 4 || len(segmentFiles(t, l.dir)) != 2 {
		t.Fatalf("deleted %d, start %d, %d files; want 2, 4, 2", n, l.StartOffset(), len(segmentFiles(t, l.dir)))
	}
	// The active segment is never deleted, however old.
	clock.Advance(100 * time.Hour)
	n, _ = l.ApplyRetention()
	if n != 1 || l.StartOffset() != 6 || len(segmentFiles(t, l.dir)) != 1 {
		t.Fatalf("deleted %d, start %d; want 1, 6 and the active segment kept", n, l.StartOffset())
	}
	if l.LogEndOffset() != 7 {
		t.Fatalf("LEO = %d, want 7", l.LogEndOffset())
	}
}

func TestRetentionForever(t *testing.T) {
	clock := newFakeClock()
	cfg := testConfig()
	cfg.RetentionAge = -1
	l := retentionLog(t, cfg, clock, 7)
	clock.Advance(10000 * time.Hour)
	if n, _ := l.ApplyRetention(); n != 0 || l.StartOffset() != 0 {
		t.Fatalf("RetentionAge -1 deleted %d segments", n)
	}
}

func TestRetentionByBytes(t *testing.T) {
	clock := newFakeClock()
	cfg := testConfig()
	cfg.RetentionAge = -1
	segBytes := 2 * int64(len(makeBatch(batchOpts{valueSize: 150})))
	cfg.RetentionBytes = 2*segBytes + 1 // keep at least this much
	l := retentionLog(t, cfg, clock, 7)
	before := l.Size()
	n, err := l.ApplyRetention()
	if err != nil {
		t.Fatal(err)
	}
	// 3.5 segments: deleting one leaves 2.5 ≥ limit; a second would leave 1.5.
	if n != 1 || l.StartOffset() != 2 || l.Size() != before-segBytes {
		t.Fatalf("deleted %d, start %d, size %d; want 1, 2, %d", n, l.StartOffset(), l.Size(), before-segBytes)
	}
}

func TestRetentionKeepsUnflushedSegments(t *testing.T) {
	clock := newFakeClock()
	cfg := testConfig()
	cfg.RetentionAge = time.Hour
	cfg.Clock = clock.Now
	cfg.SegmentBytes = int64(len(makeBatch(batchOpts{valueSize: 150})))
	l, _ := openLog(t, t.TempDir(), cfg)
	for range 3 {
		mustAppend(t, l, makeBatch(batchOpts{valueSize: 150, ts: clock.Now().UnixMilli()}))
	}
	clock.Advance(10 * time.Hour)
	if n, _ := l.ApplyRetention(); n != 0 {
		t.Fatalf("retention deleted %d segments above the high watermark", n)
	}
	mustFlush(t, l)
	if n, _ := l.ApplyRetention(); n != 2 {
		t.Fatalf("retention deleted %d flushed segments, want 2", n)
	}
}

func TestSliceSurvivesDeletion(t *testing.T) {
	clock := newFakeClock()
	cfg := testConfig()
	cfg.RetentionAge = time.Hour
	l := retentionLog(t, cfg, clock, 5)
	s, err := l.Read(0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, s.Size)
	if _, err := s.File.ReadAt(want, s.Pos); err != nil {
		t.Fatal(err)
	}
	clock.Advance(10 * time.Hour)
	if n, _ := l.ApplyRetention(); n != 2 {
		t.Fatalf("deleted %d, want 2", n)
	}
	if _, err := os.Stat(l.segs[0].path); err != nil {
		t.Fatal(err)
	}
	p, _ := segmentPaths(l.dir, 0)
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatalf("deleted segment still on disk: %v", err)
	}
	if got := readAll(t, s); !bytes.Equal(got, want) {
		t.Fatal("a Slice held across deletion read different bytes")
	}
	// Close and Delete with a Slice outstanding are safe too.
	s2, err := l.Read(l.StartOffset(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Delete(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(l.dir); !os.IsNotExist(err) {
		t.Fatalf("Delete left the directory: %v", err)
	}
	if got := readAll(t, s2); len(got) == 0 {
		t.Fatal("Slice unreadable after Delete")
	}
	s2.Release() // twice is harmless
}

func TestRetentionRunsInBackground(t *testing.T) {
	clock := newFakeClock()
	cfg := testConfig()
	cfg.RetentionAge = time.Hour
	cfg.RetentionCheckInterval = 5 * time.Millisecond
	l := retentionLog(t, cfg, clock, 5)
	clock.Advance(10 * time.Hour)
	deadline := time.Now().Add(5 * time.Second)
	for l.StartOffset() != 4 {
		if time.Now().After(deadline) {
			t.Fatalf("StartOffset %d: background retention did not run", l.StartOffset())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
