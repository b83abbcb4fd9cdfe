package log

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/recordbatch"
)

// damageFixture closes the recovery fixture cleanly and flips a byte in the
// records of the second batch of the segment at 6 (offsets 8 and 9): the
// middle of a multi-segment log. It returns the damaged batch's bytes.
func damageFixture(t *testing.T, dir string) []byte {
	t.Helper()
	S := fixtureBatchSize()
	p := segPath(dir, 6)
	flipByte(t, p, S+S/2)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b[S : 2*S]
}

// After a clean shutdown Open trusts the segments, so the damage stays until
// the scrubber (or a read, readcheck.go) finds it; then the batch is
// quarantined and every other offset reads as before.
func TestScrubRepairsDamageAfterCleanShutdown(t *testing.T) {
	dir := writeFixture(t)
	damagedBytes := damageFixture(t, dir)
	l, rep := openLog(t, dir, fixtureConfig())
	if !rep.Clean || len(rep.Lost) != 0 {
		t.Fatalf("report %+v: a clean open should not scan", rep)
	}
	if _, err := recordbatch.CheckFraming(damagedBytes); err == nil {
		t.Fatal("the fixture's damage is not where the test expects it")
	}

	lost, err := l.Scrub()
	if err != nil {
		t.Fatal(err)
	}
	if len(lost) != 1 || lost[0].FirstOffset != 8 || lost[0].NextOffset != 10 {
		t.Fatalf("scrub lost %v, want offsets [8, 10)", lost)
	}
	q, err := os.ReadFile(lost[0].Quarantine)
	if err != nil || !bytes.Equal(q, damagedBytes) {
		t.Fatalf("quarantine file does not hold the damaged batch: %v", err)
	}
	if filepath.Dir(lost[0].Quarantine) != dir || !strings.HasPrefix(filepath.Base(lost[0].Quarantine), "00000000000000000006.log.quarantine-") {
		t.Fatalf("quarantine file %s is not beside its segment", lost[0].Quarantine)
	}
	checkRecovered(t, l, 22, 4, true, [2]int64{8, 10})
	if again, err := l.Scrub(); err != nil || len(again) != 0 {
		t.Fatalf("second scrub: %v, %v; want nothing left to repair", again, err)
	}

	// The repair holds across a clean and an unclean restart.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2, rep2 := openLog(t, dir, fixtureConfig())
	if !rep2.Clean || rep2.IndexesRebuilt != 0 {
		t.Fatalf("reopen: %+v", rep2)
	}
	checkRecovered(t, l2, 22, 4, true, [2]int64{8, 10})
	crash(l2)
	os.Remove(filepath.Join(dir, checkpointFile)) // scan everything
	l3, rep3 := openLog(t, dir, fixtureConfig())
	if rep3.Clean || rep3.TruncatedAt != -1 || len(rep3.Lost) != 0 {
		t.Fatalf("unclean reopen of a repaired log: %+v", rep3)
	}
	checkRecovered(t, l3, 22, 4, true, [2]int64{8, 10})
	if r, err := Verify(dir); err != nil || r.Damaged() {
		t.Fatalf("verify after repair: %+v, %v", r, err)
	}
}

// The scrubber runs by itself when ScrubInterval is set.
func TestScrubberRunsInBackground(t *testing.T) {
	dir := writeFixture(t)
	damageFixture(t, dir)
	cfg := fixtureConfig()
	cfg.ScrubInterval = 5 * time.Millisecond
	l, _ := openLog(t, dir, cfg)
	for {
		l.mu.RLock()
		gaps := l.segs[1].gaps
		l.mu.RUnlock()
		if len(gaps) > 0 {
			break
		}
		time.Sleep(time.Millisecond) // polls; the test's timeout bounds the wait
	}
	checkRecovered(t, l, 22, 4, true, [2]int64{8, 10})
}

func TestVerify(t *testing.T) {
	dir := writeFixture(t)
	rep, err := Verify(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Damaged() || len(rep.Partitions) != 1 {
		t.Fatalf("clean fixture: %+v", rep)
	}
	p := rep.Partitions[0]
	if p.Segments != 4 || p.Batches != fixtureBatches || p.StartOffset != 0 || p.EndOffset != 22 {
		t.Fatalf("clean fixture: %+v", p)
	}

	S := fixtureBatchSize()
	damageFixture(t, dir)
	b, _ := os.ReadFile(idxPath(dir, 12))
	b[len(b)-indexEntrySize+7]++ // the last entry points one byte into its batch
	os.WriteFile(idxPath(dir, 12), b, 0o644)
	before := snapshotDir(t, dir)
	rep, err = Verify(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Damaged() {
		t.Fatal("damage not found")
	}
	got := rep.Partitions[0].Problems
	if len(got) != 2 || got[0].File != "00000000000000000006.log" || got[0].FromByte != S || got[0].ToByte != 2*S ||
		got[0].FirstOffset != 8 || got[0].NextOffset != 10 || !strings.Contains(got[0].Reason, "crc mismatch") ||
		got[1].File != "00000000000000000012.index" {
		t.Fatalf("problems: %v", got)
	}
	if rep.Partitions[0].Batches != fixtureBatches-1 {
		t.Fatalf("%d valid batches, want %d", rep.Partitions[0].Batches, fixtureBatches-1)
	}
	if after := snapshotDir(t, dir); after != before {
		t.Fatal("Verify changed the directory")
	}
	// A data directory: every partition below it.
	parent := filepath.Dir(dir)
	rep, err = Verify(parent)
	if err != nil || len(rep.Partitions) != 1 || !rep.Damaged() {
		t.Fatalf("verify of the parent: %+v, %v", rep, err)
	}
}

func snapshotDir(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range ents {
		c, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		b.WriteString(e.Name())
		b.Write(c)
	}
	return b.String()
}

// A segment rolled right after the flush that covered it was never sealed
// (the flush that sealed segments only looked at those it synced), and the
// scrubber stopped at the first segment still holding its writers: under
// acks=all traffic, which flushes after every batch, nothing was ever
// scrubbed.
func TestScrubCoversSegmentsRolledAfterTheirFlush(t *testing.T) {
	dir := t.TempDir()
	cfg := fixtureConfig()
	l, _ := openLog(t, dir, cfg)
	for range fixtureBatches {
		mustAppend(t, l, fixtureBatch())
		mustFlush(t, l) // as acks=all does: every batch flushed before the next arrives
	}
	S := fixtureBatchSize()
	flipByte(t, segPath(dir, 6), S+S/2)
	lost, err := l.Scrub()
	if err != nil {
		t.Fatal(err)
	}
	if len(lost) != 1 || lost[0].FirstOffset != 8 || lost[0].NextOffset != 10 {
		t.Fatalf("scrub lost %v, want offsets [8, 10)", lost)
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	for _, s := range l.segs[:len(l.segs)-1] {
		if s.w != nil {
			t.Errorf("segment %d is sealed and flushed but still holds its writers", s.base)
		}
	}
}
