package log

import (
	"errors"
	"os"
	"sync"
	"testing"
)

// readDirHook is the operating system's file system calling hook before
// each directory listing: a reload lists the producer snapshots midway,
// so the hook sees what lock-free readers see then.
type readDirHook struct {
	OSFS
	hook func()
}

func (f readDirHook) ReadDir(name string) ([]os.DirEntry, error) {
	f.hook()
	return f.OSFS.ReadDir(name)
}

// A reload of the producer state (a follower's truncation, which a broker
// that just lost the leadership does while fetches it accepted as the
// leader are still being answered) never shows readers a first unstable
// offset above an open transaction's first offset: a read_committed fetch
// taking the high watermark for stable then would return records of a
// transaction that may still abort. The Jepsen test of transactions saw
// exactly that after a paused partition leader resumed.
func TestFirstUnstableOffsetHoldsDuringTruncation(t *testing.T) {
	var mu sync.Mutex
	var l *Log
	var seen []int64
	cfg := testConfig()
	cfg.FS = readDirHook{hook: func() {
		mu.Lock()
		defer mu.Unlock()
		if l != nil {
			seen = append(seen, l.FirstUnstableOffset())
		}
	}}
	dir := t.TempDir()
	opened, _ := openLog(t, dir, cfg)
	mustAppend(t, opened, makeBatch(batchOpts{records: 4})) // 0-3
	mustAppend(t, opened, txnBatch(7, 0, 0, 3))             // 4-6, open
	mustAppend(t, opened, makeBatch(batchOpts{records: 4})) // 7-10
	mustFlush(t, opened)
	if got := opened.FirstUnstableOffset(); got != 4 {
		t.Fatalf("first unstable offset %d before the truncation, want 4", got)
	}
	mu.Lock()
	l = opened
	mu.Unlock()
	if _, err := opened.TruncateTo(9); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 {
		t.Fatal("the truncation listed no directory: the test no longer looks inside the reload")
	}
	for i, v := range seen {
		if v < 0 || v > 4 {
			t.Fatalf("listing %d of the truncation: first unstable offset %d, want at most 4 (transaction open at 4)", i+1, v)
		}
	}
	if got := opened.FirstUnstableOffset(); got != 4 {
		t.Fatalf("first unstable offset %d after the truncation, want 4", got)
	}
}

// A transactional batch whose transaction ended in the partition between
// the guard (taken before its coordinator was asked) and the append is
// refused: appended, it would open a transaction no coordinator knows of,
// which the producer's next marker would decide (a commit would show an
// aborted transaction's records). Markers for other producers do not
// matter, and a guard taken after the marker lets the batch in.
func TestLateTransactionalBatchRefused(t *testing.T) {
	l, _ := openLog(t, t.TempDir(), testConfig())
	mustAppend(t, l, txnBatch(7, 0, 0, 2)) // 0-1, producer 7's transaction
	guard := l.GuardTxn(7)
	other := l.GuardTxn(8)
	mustMarker(t, l, 7, 0, false) // 2: the client gave up and aborted
	mustMarker(t, l, 8, 0, true)  // 3: another producer's marker
	allow := NewAllowance(1 << 20)
	if _, err := l.AppendBatchesWithin([][]byte{txnBatch(7, 0, 2, 1)}, allow, guard); !errors.Is(err, ErrTxnEndedMeanwhile) {
		t.Fatalf("late batch: %v, want ErrTxnEndedMeanwhile", err)
	}
	if _, ok := l.OpenTransaction(7); ok || l.LogEndOffset() != 4 {
		t.Fatalf("the refused batch was written: log end %d, open %v", l.LogEndOffset(), ok)
	}
	if _, err := l.AppendBatchesWithin([][]byte{makeBatch(batchOpts{})}, allow, guard); err != nil {
		t.Fatalf("a batch that is not the guarded producer's transaction: %v", err)
	}
	mustAppend(t, l, txnBatch(9, 0, 0, 1))
	if _, err := l.AppendBatchesWithin([][]byte{txnBatch(9, 0, 1, 1)}, allow, other); err != nil {
		t.Fatalf("producer 9 guarded as 8: %v", err)
	}
	if _, err := l.AppendBatchesWithin([][]byte{txnBatch(7, 0, 2, 1)}, allow, l.GuardTxn(7)); err != nil {
		t.Fatalf("the next transaction's batch, guarded after the marker: %v", err)
	}
}

// DescribeProducers reports the coordinator epoch of a producer's last
// marker (kafka-transactions abort sends its marker with it: one below it
// is refused as a fenced coordinator's), and -1 before any marker.
func TestActiveProducersShowTheCoordinatorEpoch(t *testing.T) {
	l, _ := openLog(t, t.TempDir(), testConfig())
	mustAppend(t, l, txnBatch(7, 0, 0, 1))
	mustAppend(t, l, txnBatch(8, 0, 0, 1))
	if _, err := l.AppendMarker(7, 0, false, 3); err != nil {
		t.Fatal(err)
	}
	got := map[int64]int32{}
	for _, p := range l.ActiveProducers() {
		got[p.ID] = p.CoordinatorEpoch
	}
	if got[7] != 3 || got[8] != -1 {
		t.Fatalf("coordinator epochs %v, want producer 7 at 3 and 8 at -1", got)
	}
	if _, err := l.AppendMarker(8, 0, false, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendMarker(7, 0, false, 2); !errors.Is(err, ErrCoordinatorFenced) {
		t.Fatalf("a marker below the reported epoch: %v, want ErrCoordinatorFenced", err)
	}
}
