package log

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/internal/recordbatch"
	"github.com/tributary-io/tributary/internal/recordbatch/rbtest"
)

// txnBatch is a transactional batch of n records from producer pid.
func txnBatch(pid int64, epoch int16, seq int32, n int) []byte {
	b := makeBatch(batchOpts{records: n, pid: pid, epoch: epoch, seq: seq})
	b[recordbatch.OffAttributes+1] |= recordbatch.AttrTransactional
	recordbatch.SetCRC(b)
	return b
}

func mustMarker(t testing.TB, l *Log, pid int64, epoch int16, commit bool) int64 {
	t.Helper()
	off, err := l.AppendMarker(pid, epoch, commit, 0)
	if err != nil {
		t.Fatalf("AppendMarker(%d, commit=%v): %v", pid, commit, err)
	}
	return off
}

func wantLSO(t testing.TB, l *Log, want int64) {
	t.Helper()
	if got := l.LastStableOffset(); got != want {
		t.Fatalf("last stable offset %d, want %d (high watermark %d)", got, want, l.HighWatermark())
	}
}

func wantAborted(t testing.TB, l *Log, want ...AbortedTxn) {
	t.Helper()
	got := l.AbortedTransactions(0, l.LogEndOffset())
	if !slices.Equal(got, want) {
		t.Fatalf("aborted transactions %v, want %v", got, want)
	}
}

// The last stable offset stops at the oldest open transaction and moves
// once markers decide it; an abort is listed for read_committed readers.
func TestTransactionMarkersAndLastStableOffset(t *testing.T) {
	l, _ := openLog(t, t.TempDir(), testConfig())
	mustAppend(t, l, txnBatch(7, 0, 0, 3))   // 0-2
	mustAppend(t, l, makeBatch(batchOpts{})) // 3
	mustAppend(t, l, txnBatch(8, 0, 0, 2))   // 4-5
	mustAppend(t, l, txnBatch(7, 0, 3, 1))   // 6
	mustFlush(t, l)
	wantLSO(t, l, 0)
	if got := l.FirstUnstableOffset(); got != 0 {
		t.Fatalf("first unstable offset %d, want 0", got)
	}
	if c := mustMarker(t, l, 7, 0, true); c != 7 {
		t.Fatalf("commit marker at %d, want 7", c)
	}
	mustFlush(t, l)
	wantLSO(t, l, 4)
	a := mustMarker(t, l, 8, 0, false)
	wantLSO(t, l, 8) // the high watermark: the marker is not flushed yet
	mustFlush(t, l)
	wantLSO(t, l, 9)
	wantAborted(t, l, AbortedTxn{ProducerID: 8, FirstOffset: 4, LastOffset: a})
	if got := l.AbortedTransactions(a+1, 100); len(got) != 0 {
		t.Fatalf("a fetch from past the marker is told of %v", got)
	}

	// A client's control batch is refused; so is a marker of an old epoch.
	ctrl := recordbatch.MarkerBatch(9, 0, true, 0, 1000)
	if _, err := l.Append(ctrl); !errors.Is(err, ErrControlBatch) || !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("client control batch: %v, want ErrControlBatch", err)
	}
	mustMarker(t, l, 7, 2, false) // the coordinator fenced producer 7 at epoch 2
	if _, err := l.AppendMarker(7, 1, false, 0); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("marker of an older epoch: %v, want ErrInvalidProducerEpoch", err)
	}
	if _, err := l.Append(txnBatch(7, 0, 4, 1)); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("a fenced epoch's batch: %v, want ErrInvalidProducerEpoch", err)
	}
	mustAppend(t, l, txnBatch(7, 2, 0, 1)) // the new epoch starts at sequence 0
}

// Open transactions and the aborted index survive a clean restart, a
// crash, and losing the snapshot and index files (rebuilt from the log);
// a truncation below an abort marker forgets that abort.
func TestTransactionStateSurvivesRestartAndTruncation(t *testing.T) {
	dir := t.TempDir()
	l, _ := openLog(t, dir, testConfig())
	mustAppend(t, l, txnBatch(5, 0, 0, 2))   // 0-1
	a := mustMarker(t, l, 5, 0, false)       // 2
	mustAppend(t, l, txnBatch(6, 0, 0, 1))   // 3
	mustAppend(t, l, makeBatch(batchOpts{})) // 4
	mustFlush(t, l)
	abort := AbortedTxn{ProducerID: 5, FirstOffset: 0, LastOffset: a}
	check := func(l *Log, how string) {
		t.Helper()
		if got := l.AbortedTransactions(0, 100); !slices.Equal(got, []AbortedTxn{abort}) {
			t.Fatalf("%s: aborted %v, want %v", how, got, abort)
		}
		if first, ok := l.OpenTransaction(6); !ok || first != 3 {
			t.Fatalf("%s: producer 6's transaction open at %d (%v), want 3", how, first, ok)
		}
		if got := l.LastStableOffset(); got != 3 {
			t.Fatalf("%s: last stable offset %d, want 3", how, got)
		}
	}
	check(l, "before restart")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, _ = openLog(t, dir, testConfig())
	check(l, "after a clean restart")
	mustFlush(t, l)
	crash(l)
	l, _ = openLog(t, dir, testConfig())
	check(l, "after a crash")
	crash(l)
	for _, pattern := range []string{"*.producers", "*.txnindex"} {
		files, _ := filepath.Glob(filepath.Join(dir, pattern))
		if len(files) == 0 {
			t.Fatalf("no %s file to remove", pattern)
		}
		for _, f := range files {
			os.Remove(f)
		}
	}
	l, _ = openLog(t, dir, testConfig())
	check(l, "rebuilt from the log")
	if _, err := os.Stat(txnIndexPath(dir, 0)); err != nil {
		t.Fatalf("the rebuilt index was not written: %v", err)
	}

	if _, err := l.TruncateTo(a); err != nil {
		t.Fatal(err)
	}
	wantAborted(t, l)
	if first, ok := l.OpenTransaction(5); !ok || first != 0 {
		t.Fatalf("after truncating the abort marker, producer 5's transaction is open at %d (%v), want 0", first, ok)
	}
	if _, err := os.Stat(txnIndexPath(dir, 0)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the index still exists after its only entry was truncated: %v", err)
	}
}

// Every acknowledged abort marker keeps its entry in the aborted index
// through a power loss at each sync boundary, across segment rolls.
func TestAbortedIndexSurvivesPowerLoss(t *testing.T) {
	points := []string{"before-other-sync", "after-other-sync", "before-segment-sync", "after-segment-sync", "before-dir-sync", "after-dir-sync"}
	for _, point := range points {
		for n := 1; n <= 6; n++ {
			reached := false
			t.Run(fmt.Sprintf("%s#%d", point, n), func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "p")
				cfs := newCrashFS(t, dir)
				cfs.CrashAt(point, n)
				cfg := fixtureConfig()
				cfg.FS = cfs
				cfg.SegmentBytes = 300
				var acked []AbortedTxn
				seq := map[int64]int32{}
				for run := range 2 {
					l, _, err := Open(dir, cfg, quietLogger())
					if err != nil {
						break
					}
					for i := range 6 {
						pid := int64(100*run + i + 1)
						first, err := l.Append(txnBatch(pid, 0, seq[pid], 2))
						if err != nil {
							break
						}
						seq[pid] += 2
						off, err := l.AppendMarker(pid, 0, i%2 == 0, 0)
						if err != nil || l.WaitFlushed(context.Background(), off) != nil {
							break
						}
						if i%2 != 0 {
							acked = append(acked, AbortedTxn{ProducerID: pid, FirstOffset: first.BaseOffset, LastOffset: off})
						}
					}
					l.Close()
				}
				reached = cfs.Crashed()
				if err := cfs.PowerLoss(); err != nil {
					t.Fatal(err)
				}
				l, _, err := Open(dir, fixtureConfig(), quietLogger())
				if err != nil {
					t.Fatalf("open after power loss: %v", err)
				}
				defer l.Close()
				got := l.AbortedTransactions(0, l.LogEndOffset())
				for _, a := range acked {
					if !slices.Contains(got, a) {
						t.Fatalf("acknowledged abort %v lost; index holds %v", a, got)
					}
				}
				for _, a := range got {
					if a.LastOffset >= l.LogEndOffset() {
						t.Fatalf("index holds %v past the log end %d", a, l.LogEndOffset())
					}
				}
			})
			if !reached {
				break
			}
		}
	}
}

// Compaction and transactions: an aborted transaction's records go (they
// never supersede a committed value: the older committed one stays until
// a committed one replaces it), a committed transaction's records are
// records like any other, markers stay, and nothing at or past the first
// unstable offset is cleaned (its transactions are not decided yet).
func TestCleanRemovesAbortedRecords(t *testing.T) {
	clock := newFakeClock()
	l, _ := openLog(t, t.TempDir(), compactConfig(clock))
	ts := clock.Now().UnixMilli()
	txnRecord := func(pid int64, seq int32, key, value string) []byte {
		b := keyedBatch(ts, nil, kv{key, []byte(value)})
		binary.BigEndian.PutUint64(b[recordbatch.OffProducerID:], uint64(pid))
		binary.BigEndian.PutUint16(b[recordbatch.OffProducerEpoch:], 0)
		binary.BigEndian.PutUint32(b[recordbatch.OffBaseSequence:], uint32(seq))
		b[recordbatch.OffAttributes+1] |= recordbatch.AttrTransactional
		return rbtest.FixBatch(b)
	}
	mustAppend(t, l, keyedBatch(ts, nil, kv{"k", []byte("committed-old")})) // 0
	mustAppend(t, l, txnRecord(9, 0, "k", "aborted"))                       // 1
	abort := mustMarker(t, l, 9, 0, false)                                  // 2
	mustAppend(t, l, keyedBatch(ts, nil, kv{"j", []byte("old")}))           // 3: superseded by a committed transaction
	mustAppend(t, l, txnRecord(8, 0, "j", "committed-in-txn"))              // 4
	commit := mustMarker(t, l, 8, 0, true)                                  // 5
	for range 20 {
		mustAppend(t, l, keyedBatch(ts, nil, kv{"filler", []byte("x")}))
		mustFlush(t, l)
	}
	open := mustAppend(t, l, txnRecord(7, 0, "k", "pending")).BaseOffset // an open transaction
	for range 20 {
		mustAppend(t, l, keyedBatch(ts, nil, kv{"filler", []byte("y")}))
		mustFlush(t, l)
	}
	st, err := l.clean(newOffsetMap(1<<20), nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.CleanedTo > open {
		t.Fatalf("cleaned to %d, past the open transaction at %d", st.CleanedTo, open)
	}
	var kept []string
	for _, r := range readRecords(t, l) {
		if r.key == "k" || r.key == "j" || r.offset == abort || r.offset == commit {
			kept = append(kept, fmt.Sprintf("%d:%s", r.offset, r.value))
		}
	}
	want := []string{"0:committed-old", "2:\x00\x00\x00\x00\x00\x00", "4:committed-in-txn", "5:\x00\x00\x00\x00\x00\x00", fmt.Sprintf("%d:pending", open)}
	if strings.Join(kept, " ") != strings.Join(want, " ") {
		t.Fatalf("after cleaning, keys k and j and the markers:\n got %q\nwant %q", kept, want)
	}
	wantAborted(t, l, AbortedTxn{ProducerID: 9, FirstOffset: 1, LastOffset: abort})
}

// FuzzDecodeTxnIndex: NNN.txnindex is read back from disk, where anything
// can happen to it; decoding never panics, and what it keeps is ordered,
// inside the segment and well formed (the replay rebuilds the rest).
func FuzzDecodeTxnIndex(f *testing.F) {
	var good []byte
	for i := range int64(3) {
		good = AbortedTxn{ProducerID: i, FirstOffset: 10 * i, LastOffset: 10*i + 5}.appendTo(good)
	}
	f.Add(good, int64(0), int64(100))
	f.Add(good[:40], int64(5), int64(20))
	f.Fuzz(func(t *testing.T, b []byte, base, next int64) {
		got := decodeTxnIndex(b, base, next)
		if len(got) > len(b)/txnIndexEntrySize {
			t.Fatalf("%d entries from %d bytes", len(got), len(b))
		}
		for i, a := range got {
			if a.ProducerID < 0 || a.FirstOffset < 0 || a.FirstOffset > a.LastOffset || a.LastOffset < base || a.LastOffset >= next ||
				i > 0 && a.LastOffset <= got[i-1].LastOffset {
				t.Fatalf("entry %d kept: %+v (segment [%d, %d))", i, a, base, next)
			}
		}
	})
}

// A marker from an older transaction coordinator epoch than one already
// written for the producer is refused: a coordinator paused while another
// took its state partition over would otherwise end the producer's next
// transaction with what it remembered of the last one.
func TestMarkerFromFencedCoordinatorRefused(t *testing.T) {
	l, _ := openLog(t, t.TempDir(), testConfig())
	mustAppend(t, l, txnBatch(5, 0, 0, 1))
	if _, err := l.AppendMarker(5, 0, true, 7); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, txnBatch(5, 0, 1, 1)) // the next transaction
	if _, err := l.AppendMarker(5, 0, false, 6); !errors.Is(err, ErrCoordinatorFenced) {
		t.Fatalf("a marker from coordinator epoch 6 after one from 7: %v, want ErrCoordinatorFenced", err)
	}
	if first, ok := l.OpenTransaction(5); !ok || first != 2 {
		t.Fatalf("the next transaction is open at %d (%v), want 2", first, ok)
	}
	if _, err := l.AppendMarker(5, 0, true, 7); err != nil {
		t.Fatalf("the current coordinator's marker: %v", err)
	}
}
