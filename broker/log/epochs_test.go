package log

import (
	"slices"
	"testing"
	"time"
)

// epochLog has leader epochs 0, 1 and 2 starting at offsets 0, 10 and 20,
// one record a batch, 30 records, all flushed.
func epochLog(t *testing.T, dir string, cfg Config) *Log {
	t.Helper()
	l, _ := openLog(t, dir, cfg)
	for epoch := range int32(3) {
		if err := l.AssignLeaderEpoch(epoch); err != nil {
			t.Fatal(err)
		}
		for range 10 {
			mustAppend(t, l, makeBatch(batchOpts{valueSize: 100}))
		}
	}
	mustFlush(t, l)
	return l
}

func epochsOf(l *Log) []epochEntry {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return slices.Clone(l.epochs)
}

// When DeleteRecords moves the log start into epoch 1, the cache keeps
// epoch 1 starting at the log start and epoch 2; epoch 0, older than every
// remaining epoch, ends at the log start (Kafka's answer for an epoch
// below the earliest entry). Both hold after a reopen.
func TestEpochsTrimmedByDeleteRecords(t *testing.T) {
	dir := t.TempDir()
	l := epochLog(t, dir, testConfig())
	if start, err := l.DeleteRecordsBefore(15); err != nil || start != 15 {
		t.Fatalf("DeleteRecordsBefore(15) = %d, %v", start, err)
	}
	want := []epochEntry{{1, 15}, {2, 20}}
	check := func(l *Log, when string) {
		t.Helper()
		if got := epochsOf(l); !slices.Equal(got, want) {
			t.Fatalf("%s: epochs %v, want %v", when, got, want)
		}
		for _, c := range []struct {
			ask, epoch int32
			end        int64
		}{{0, 0, 15}, {1, 1, 20}, {2, 2, 30}} {
			if e, off := l.EndOffsetForEpoch(c.ask); e != c.epoch || off != c.end {
				t.Errorf("%s: epoch %d ends (%d, %d), want (%d, %d)", when, c.ask, e, off, c.epoch, c.end)
			}
		}
	}
	check(l, "after DeleteRecords")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2, _ := openLog(t, dir, testConfig())
	check(l2, "reopened")

	// A start exactly at an epoch's first offset keeps that epoch alone.
	if _, err := l2.DeleteRecordsBefore(20); err != nil {
		t.Fatal(err)
	}
	want = []epochEntry{{2, 20}}
	if got := epochsOf(l2); !slices.Equal(got, want) {
		t.Fatalf("start 20: epochs %v, want %v", got, want)
	}
}

// Retention deleting whole segments trims the cache the same way.
func TestEpochsTrimmedByRetention(t *testing.T) {
	clock := newFakeClock()
	cfg := testConfig()
	cfg.Clock = clock.Now
	cfg.SegmentBytes = int64(len(makeBatch(batchOpts{valueSize: 100}))) * 4 // 4 offsets a segment
	cfg.RetentionAge = time.Hour
	dir := t.TempDir()
	l := epochLog(t, dir, cfg)
	clock.Advance(2 * time.Hour)
	if _, err := l.ApplyRetention(); err != nil {
		t.Fatal(err)
	}
	start := l.StartOffset() // the active segment's base: 28
	if start <= 20 {
		t.Fatalf("retention left start %d, want it past 20", start)
	}
	want := []epochEntry{{2, start}}
	if got := epochsOf(l); !slices.Equal(got, want) {
		t.Fatalf("epochs %v, want %v", got, want)
	}
	if e, off := l.EndOffsetForEpoch(1); e != 1 || off != start {
		t.Fatalf("epoch 1 ends (%d, %d), want (1, %d)", e, off, start)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2, _ := openLog(t, dir, cfg)
	if got := epochsOf(l2); !slices.Equal(got, want) {
		t.Fatalf("reopened: epochs %v, want %v", got, want)
	}
}

// A checkpoint older than the log start (a crash between moving the start
// and rewriting it) is trimmed at Open.
func TestEpochsTrimmedAtOpen(t *testing.T) {
	dir := t.TempDir()
	l := epochLog(t, dir, testConfig())
	old := encodeEpochs(epochsOf(l))
	if _, err := l.DeleteRecordsBefore(15); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := writeFileAtomic(OSFS{}, dir, leaderEpochFile, old); err != nil {
		t.Fatal(err)
	}
	l2, _ := openLog(t, dir, testConfig())
	if got, want := epochsOf(l2), []epochEntry{{1, 15}, {2, 20}}; !slices.Equal(got, want) {
		t.Fatalf("epochs %v, want %v", got, want)
	}
}
