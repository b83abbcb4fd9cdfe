package log

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/recordbatch"
)

// rollEveryBatch is a config whose segments each hold one batch, so a
// producer's earlier batches sit in older segments.
func rollEveryBatch() Config {
	cfg := testConfig()
	cfg.SegmentBytes = 1
	return cfg
}

// appendProducerHistory appends ten two-record batches from producer 7
// (epoch 1, sequences 0, 2, ... 18), each preceded by a batch of another
// producer and a non-idempotent one, and returns producer 7's results.
func appendProducerHistory(t *testing.T, l *Log) []AppendResult {
	t.Helper()
	var res []AppendResult
	for i := range 10 {
		mustAppend(t, l, makeBatch(batchOpts{pid: 8, seq: int32(i)}))
		mustAppend(t, l, makeBatch(batchOpts{}))
		res = append(res, mustAppend(t, l, makeBatch(batchOpts{pid: 7, epoch: 1, seq: int32(2 * i), records: 2})))
	}
	return res
}

// wantDuplicate retries producer 7's batch i and checks it is answered
// with the original offsets and writes nothing.
func wantDuplicate(t *testing.T, l *Log, i int, orig AppendResult) {
	t.Helper()
	leo := l.LogEndOffset()
	res, err := l.Append(makeBatch(batchOpts{pid: 7, epoch: 1, seq: int32(2 * i), records: 2}))
	if err != nil || !res.Duplicate || res.BaseOffset != orig.BaseOffset || res.LastOffset != orig.LastOffset {
		t.Fatalf("retry of batch %d = %+v, %v; want a duplicate of [%d, %d]", i, res, err, orig.BaseOffset, orig.LastOffset)
	}
	if l.LogEndOffset() != leo {
		t.Fatalf("retry of batch %d moved the log end from %d to %d", i, leo, l.LogEndOffset())
	}
}

func snapshotFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*"+producerSnapshotSuffix))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func removeSnapshots(t *testing.T, dir string) {
	t.Helper()
	for _, f := range snapshotFiles(t, dir) {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
}

func trackedProducers(l *Log) int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.producers.len()
}

// TestRetryOfBatchInOlderSegmentAfterRestart: a producer's batches spread
// over many segments; after a clean restart, a crash, or an upgrade from a
// data directory without snapshots, a retry of any of its last five batches
// is a duplicate with the original offsets, an older one is out of order,
// and the next sequence is appended.
func TestRetryOfBatchInOlderSegmentAfterRestart(t *testing.T) {
	tests := []struct {
		name        string
		clean       bool
		noSnapshots bool
	}{
		{"clean close", true, false},
		{"crash", false, false},
		{"clean close, no snapshots (upgrade)", true, true},
		{"crash, no snapshots", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			l, _ := openLog(t, dir, rollEveryBatch())
			orig := appendProducerHistory(t, l)
			if n := len(segmentFiles(t, dir)); n < 30 {
				t.Fatalf("%d segments, want one per batch", n)
			}
			if tt.clean {
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
			} else {
				crash(l)
			}
			if n := len(snapshotFiles(t, dir)); n == 0 || n > producerSnapshotsKept {
				t.Fatalf("%d snapshots on disk, want 1..%d", n, producerSnapshotsKept)
			}
			if tt.noSnapshots {
				removeSnapshots(t, dir)
			}
			l2, rep := openLog(t, dir, rollEveryBatch())
			if rep.Clean != tt.clean {
				t.Fatalf("recovery report %+v, want Clean %v", rep, tt.clean)
			}
			for _, i := range []int{5, 6, 9} {
				wantDuplicate(t, l2, i, orig[i])
			}
			if _, err := l2.Append(makeBatch(batchOpts{pid: 7, epoch: 1, seq: 8, records: 2})); !errors.Is(err, ErrOutOfOrderSequence) {
				t.Fatalf("batch older than the last five: %v, want out of order", err)
			}
			leo := l2.LogEndOffset()
			if res := mustAppend(t, l2, makeBatch(batchOpts{pid: 7, epoch: 1, seq: 20})); res.Duplicate || res.BaseOffset != leo {
				t.Fatalf("next sequence = %+v, want appended at %d", res, leo)
			}
			if res := mustAppend(t, l2, makeBatch(batchOpts{pid: 8, seq: 10})); res.Duplicate {
				t.Fatalf("other producer's next sequence = %+v", res)
			}
		})
	}
}

// TestDamagedProducerSnapshotIsIgnored: a snapshot cut short, with a bit
// flipped, or replaced by garbage is discarded, and the state is rebuilt
// from an older snapshot or by scanning the log.
func TestDamagedProducerSnapshotIsIgnored(t *testing.T) {
	damages := map[string]func([]byte) []byte{
		"torn":        func(b []byte) []byte { return b[:len(b)-7] },
		"bit flipped": func(b []byte) []byte { b[len(b)/2] ^= 0x10; return b },
		"empty":       func([]byte) []byte { return nil },
		"garbage":     func(b []byte) []byte { return bytes.Repeat([]byte{0xa5}, len(b)) },
	}
	for name, damage := range damages {
		for _, all := range []bool{false, true} {
			t.Run(name+map[bool]string{false: " newest", true: " all"}[all], func(t *testing.T) {
				dir := t.TempDir()
				l, _ := openLog(t, dir, rollEveryBatch())
				orig := appendProducerHistory(t, l)
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				snaps := snapshotFiles(t, dir)
				if !all {
					snaps = snaps[len(snaps)-1:]
				}
				for _, f := range snaps {
					b, err := os.ReadFile(f)
					if err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(f, damage(b), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				l2, _ := openLog(t, dir, rollEveryBatch())
				for _, i := range []int{5, 9} {
					wantDuplicate(t, l2, i, orig[i])
				}
				for _, f := range snaps {
					if _, err := os.Stat(f); !errors.Is(err, os.ErrNotExist) {
						t.Errorf("damaged snapshot %s still there (%v)", filepath.Base(f), err)
					}
				}
			})
		}
	}
}

// TestSnapshotPastRecoveredLogEndIsDiscarded: a crash tore the last batch,
// which a snapshot already covered; recovery cuts the log below the
// snapshot, so the snapshot is discarded and the torn batch, sent again, is
// appended rather than answered with offsets the log no longer holds.
func TestSnapshotPastRecoveredLogEndIsDiscarded(t *testing.T) {
	dir := t.TempDir()
	l, _ := openLog(t, dir, rollEveryBatch())
	appendProducerHistory(t, l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	segs := segmentFiles(t, dir)
	last := segs[len(segs)-1]
	if err := os.Truncate(last, fileSize(t, last)-5); err != nil {
		t.Fatal(err)
	}
	makeUnclean(t, dir, true)
	newest := snapshotFiles(t, dir)
	l2, rep := openLog(t, dir, rollEveryBatch())
	if rep.TruncatedAt != 38 {
		t.Fatalf("recovery %+v, want the log cut at 38", rep)
	}
	if _, err := os.Stat(newest[len(newest)-1]); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("snapshot past the log end kept: %v", err)
	}
	res := mustAppend(t, l2, makeBatch(batchOpts{pid: 7, epoch: 1, seq: 18, records: 2}))
	if res.Duplicate || res.BaseOffset != 38 {
		t.Fatalf("resent torn batch = %+v, want appended at 38", res)
	}
	wantDuplicate(t, l2, 8, AppendResult{BaseOffset: 34, LastOffset: 35})
}

// TestIdleProducersExpire: a producer that has not appended for
// ProducerIDExpiry is forgotten by the periodic check and across a
// restart (where its batches are still in the log), so its next batch is
// taken as a new producer's; an active producer is kept.
func TestIdleProducersExpire(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(map[bool]string{false: "periodic check", true: "restart"}[restart], func(t *testing.T) {
			clock := newFakeClock()
			cfg := testConfig() // one segment: every batch is read back at Open
			cfg.Clock, cfg.ProducerIDExpiry = clock.Now, time.Hour
			dir := t.TempDir()
			l, _ := openLog(t, dir, cfg)
			mustAppend(t, l, makeBatch(batchOpts{pid: 7, seq: 0}))
			mustAppend(t, l, makeBatch(batchOpts{pid: 8, seq: 0}))
			clock.Advance(50 * time.Minute)
			mustAppend(t, l, makeBatch(batchOpts{pid: 8, seq: 1}))
			clock.Advance(11 * time.Minute) // 7 idle 61 minutes, 8 idle 11
			if restart {
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				l, _ = openLog(t, dir, cfg)
			} else if _, err := l.ApplyRetention(); err != nil {
				t.Fatal(err)
			}
			if n := trackedProducers(l); n != 1 {
				t.Fatalf("%d producers tracked, want 1 (producer 7 expired)", n)
			}
			if res := mustAppend(t, l, makeBatch(batchOpts{pid: 7, seq: 40})); res.Duplicate {
				t.Fatal("expired producer's batch taken for a duplicate")
			}
			if _, err := l.Append(makeBatch(batchOpts{pid: 8, seq: 5})); !errors.Is(err, ErrOutOfOrderSequence) {
				t.Fatalf("active producer's gap: %v, want out of order", err)
			}
		})
	}
}

// TestProducerSnapshotRoundTrip: decoding an encoded table gives the same
// producers, in the same recency order, with the same answers to retries.
func TestProducerSnapshotRoundTrip(t *testing.T) {
	p := newProducers(100, quietLogger(), "")
	now := time.UnixMilli(1_700_000_000_000)
	off := int64(0)
	for i := range 40 {
		h := recordbatch.Header{ProducerID: int64(i % 6), ProducerEpoch: int16(i % 2), BaseSequence: int32(i), RecordCount: 3, LastOffsetDelta: 2}
		p.record(&h, off, off+2, now.Add(time.Duration(i)*time.Second))
		off += 3
	}
	open := openTxns{m: map[int64]int64{2: 90, 5: 30}}
	b := encodeProducerSnapshot(&p, &open, off)
	var txns openTxns
	q, err := decodeProducerSnapshot(b, off, newProducers(100, quietLogger(), ""), &txns)
	if err != nil {
		t.Fatal(err)
	}
	if got := encodeProducerSnapshot(&q, &txns, off); !bytes.Equal(got, b) {
		t.Fatal("re-encoding a decoded snapshot gives other bytes")
	}
	if txns.first != 30 || len(txns.m) != 2 || txns.m[2] != 90 {
		t.Fatalf("open transactions decoded as %v (first %d), want producer 2 at 90 and 5 at 30", txns.m, txns.first)
	}
	if _, err := decodeProducerSnapshot(b, off-1, newProducers(100, quietLogger(), ""), &openTxns{}); err == nil {
		t.Fatal("snapshot accepted under another offset's name")
	}
}

// FuzzDecodeProducerSnapshot: snapshot files are read back from disk,
// where anything can happen to them; decoding never panics, never
// allocates beyond what the bytes can describe, and whatever it accepts
// encodes back to the same bytes.
func FuzzDecodeProducerSnapshot(f *testing.F) {
	p := newProducers(1000, nil, "")
	for i := range 8 {
		h := recordbatch.Header{ProducerID: int64(i % 3), BaseSequence: int32(i), RecordCount: 1}
		p.record(&h, int64(i), int64(i), time.UnixMilli(int64(i)))
	}
	f.Add(encodeProducerSnapshot(&p, &openTxns{m: map[int64]int64{3: 1, 9: 5}}, 8), int64(8))
	f.Add(encodeProducerSnapshot(&producers{}, &openTxns{}, 0), int64(0))
	f.Fuzz(func(t *testing.T, b []byte, offset int64) {
		var txns openTxns
		q, err := decodeProducerSnapshot(b, offset, newProducers(1<<20, nil, ""), &txns)
		if err != nil {
			return
		}
		if b[snapshotFrame] != producerSnapshotVersion {
			return // an older version re-encodes in the current one
		}
		if got := encodeProducerSnapshot(&q, &txns, offset); !bytes.Equal(got, b) {
			t.Fatalf("accepted snapshot re-encodes differently:\n%x\n%x", b, got)
		}
	})
}

// syncBuffer is a bytes.Buffer safe for a logger and a test at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
