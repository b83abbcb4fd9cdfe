package log

import (
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
