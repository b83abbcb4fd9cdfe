package log

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/tributary-io/tributary/internal/recordbatch"
)

// The leader-epoch cache answers OffsetForLeaderEpoch as the protocol
// says: the latest epoch ends at the log end, an older one where the next
// known one starts, an unknown one between two known ones at the next
// known start with the epoch below it.
func TestEndOffsetForEpoch(t *testing.T) {
	l, _ := openLog(t, t.TempDir(), testConfig())
	if e, off := l.EndOffsetForEpoch(3); e != -1 || off != -1 {
		t.Fatalf("empty cache: (%d, %d), want (-1, -1)", e, off)
	}
	for _, step := range []struct {
		epoch   int32
		records int
	}{{2, 3}, {4, 2}, {7, 5}} {
		if err := l.AssignLeaderEpoch(step.epoch); err != nil {
			t.Fatal(err)
		}
		for range step.records {
			mustAppend(t, l, makeBatch(batchOpts{}))
		}
	}
	// epochs: 2 at 0, 4 at 3, 7 at 5; log end 10.
	for _, c := range []struct {
		ask, epoch int32
		end        int64
	}{
		{7, 7, 10}, {4, 4, 5}, {2, 2, 3}, {5, 4, 5}, {6, 4, 5}, {1, 1, 0}, {8, -1, -1}, {-1, -1, -1},
	} {
		if e, off := l.EndOffsetForEpoch(c.ask); e != c.epoch || off != c.end {
			t.Errorf("epoch %d: (%d, %d), want (%d, %d)", c.ask, e, off, c.epoch, c.end)
		}
	}
	// Appended batches carry the leader's epoch.
	mustFlush(t, l)
	s, err := l.Read(5, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	raw := readAll(t, s)
	if got := int32(binary.BigEndian.Uint32(raw[recordbatch.OffLeaderEpoch:])); got != 7 {
		t.Fatalf("batch at offset 5 carries epoch %d, want 7", got)
	}
}

// TruncateTo cuts the log at a batch boundary, durably, keeps what describes
// the log consistent (index, producer state, epochs) and lets the leader's
// batches be appended at the freed offsets.
func TestTruncateTo(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	cfg.SegmentBytes = 400 // a few batches a segment
	cfg.IndexIntervalBytes = 1
	l, _ := openLog(t, dir, cfg)
	if err := l.AssignLeaderEpoch(1); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		mustAppend(t, l, makeBatch(batchOpts{records: 2, pid: 9, seq: int32(2 * i)}))
	}
	if err := l.AssignLeaderEpoch(2); err != nil {
		t.Fatal(err)
	}
	for i := 10; i < 20; i++ {
		mustAppend(t, l, makeBatch(batchOpts{records: 2, pid: 9, seq: int32(2 * i)}))
	}
	// Offsets 0-39, two a batch; epoch 2 starts at 20. Offset 13 is inside
	// the batch [12, 13]: that batch goes too.
	if len(segmentFiles(t, dir)) < 3 {
		t.Fatalf("want several segments, have %v", segmentFiles(t, dir))
	}
	end, err := l.TruncateTo(13)
	if err != nil || end != 12 {
		t.Fatalf("TruncateTo(13) = %d, %v; want 12", end, err)
	}
	if l.LogEndOffset() != 12 || l.HighWatermark() != 12 || l.LatestEpoch() != 1 {
		t.Fatalf("after truncation: end %d, hw %d, epoch %d", l.LogEndOffset(), l.HighWatermark(), l.LatestEpoch())
	}
	// The producer's state went back with the log: its next sequence is
	// 12, and 20 (the next before truncation) is a gap.
	if _, err := l.Append(makeBatch(batchOpts{records: 2, pid: 9, seq: 40})); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("sequence from before truncation: %v, want ErrOutOfOrderSequence", err)
	}
	if err := l.AssignLeaderEpoch(3); err != nil {
		t.Fatal(err)
	}
	res := mustAppend(t, l, makeBatch(batchOpts{records: 2, pid: 9, seq: 12}))
	if res.BaseOffset != 12 {
		t.Fatalf("appended at %d after truncation, want 12", res.BaseOffset)
	}
	mustFlush(t, l)
	before := readAll(t, mustRead(t, l, 0))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	// A clean reopen and a crash reopen see the same log and epochs.
	for _, unclean := range []bool{false, true} {
		if unclean {
			makeUnclean(t, dir, true)
		}
		l2, _ := openLog(t, dir, cfg)
		if l2.LogEndOffset() != 14 {
			t.Fatalf("reopened (unclean %v): end %d, want 14", unclean, l2.LogEndOffset())
		}
		if e, off := l2.EndOffsetForEpoch(1); e != 1 || off != 12 {
			t.Fatalf("reopened: epoch 1 ends (%d, %d), want (1, 12)", e, off)
		}
		if l2.LatestEpoch() != 3 {
			t.Fatalf("reopened: latest epoch %d, want 3", l2.LatestEpoch())
		}
		if got := readAll(t, mustRead(t, l2, 0)); !bytes.Equal(got, before) {
			t.Fatal("reopened log differs from the truncated one")
		}
		if err := l2.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// Truncating below the first segment's base starts the log over there.
func TestTruncateToEverything(t *testing.T) {
	l, _ := openLog(t, t.TempDir(), testConfig())
	for range 3 {
		mustAppend(t, l, makeBatch(batchOpts{}))
	}
	if end, err := l.TruncateTo(0); err != nil || end != 0 {
		t.Fatalf("TruncateTo(0) = %d, %v", end, err)
	}
	if res := mustAppend(t, l, makeBatch(batchOpts{})); res.BaseOffset != 0 {
		t.Fatalf("appended at %d, want 0", res.BaseOffset)
	}
}

func mustRead(t testing.TB, l *Log, offset int64) Slice {
	t.Helper()
	s, err := l.Read(offset, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A power loss at any step of TruncateTo leaves a log cut at the new end
// or not cut at all, never one holding records of an epoch its cache has
// forgotten; once TruncateTo returned, the cut records never come back.
func TestTruncateToSurvivesPowerLoss(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 400
	build := func(dir string) {
		l, _ := openLog(t, dir, cfg)
		for i, epoch := range []int32{1, 1, 2, 2} {
			if i%2 == 0 {
				if err := l.AssignLeaderEpoch(epoch); err != nil {
					t.Fatal(err)
				}
			}
			for range 5 {
				mustAppend(t, l, makeBatch(batchOpts{records: 2}))
			}
		}
		if err := l.Close(); err != nil { // offsets 0-39, epoch 2 from 20
			t.Fatal(err)
		}
	}
	for n := 0; ; n++ {
		dir := t.TempDir()
		build(dir)
		cfs := newCrashFS(t, dir)
		ccfg := cfg
		ccfg.FS = cfs
		l, _, err := Open(dir, ccfg, quietLogger())
		if err != nil {
			t.Fatal(err)
		}
		cfs.CrashAfter(n)
		_, terr := l.TruncateTo(13)
		done := !cfs.Crashed()
		if done && terr != nil {
			t.Fatalf("TruncateTo without a crash: %v", terr)
		}
		crash(l)
		if err := cfs.PowerLoss(); err != nil {
			t.Fatal(err)
		}
		l2, _ := openLog(t, dir, cfg)
		end, latest := l2.LogEndOffset(), l2.LatestEpoch()
		switch {
		case end == 12 && latest == 1:
		case end == 40 && latest == 2 && !done:
			if e, off := l2.EndOffsetForEpoch(1); e != 1 || off != 20 {
				t.Fatalf("step %d: uncut log's epoch 1 ends (%d, %d), want (1, 20)", n, e, off)
			}
		default:
			t.Fatalf("power loss after %d steps (finished %v): log end %d, latest epoch %d", n, done, end, latest)
		}
		l2.Close()
		if done {
			if n < 3 {
				t.Fatalf("TruncateTo finished in %d steps: the crash points were not reached", n)
			}
			return
		}
	}
}
