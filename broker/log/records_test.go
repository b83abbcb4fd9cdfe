package log

import (
	"errors"
	"testing"

	"github.com/tributary-io/tributary/internal/recordbatch/rbtest"
)

// TestAppendRefusesLyingRecords: a batch refused for its records leaves
// the log as it was.
func TestAppendRefusesLyingRecords(t *testing.T) {
	dir := t.TempDir()
	l, _ := openLog(t, dir, testConfig())
	mustAppend(t, l, makeBatch(batchOpts{records: 2}))
	size := fileSize(t, segmentFiles(t, dir)[0])
	if _, err := l.Append(rbtest.Batch(rbtest.Record(7, nil, []byte("v")), 1, 0)); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("Append of a record with offset delta 7: %v, want ErrInvalidRecord", err)
	}
	if l.LogEndOffset() != 2 || fileSize(t, segmentFiles(t, dir)[0]) != size {
		t.Fatalf("the refused batch left a trace: LEO %d", l.LogEndOffset())
	}
}

// TestAppendBatchesAllOrNothing: when any batch of a call is refused, none
// is written, including batches before it and idempotent producer state.
func TestAppendBatchesAllOrNothing(t *testing.T) {
	bad := rbtest.Batch(rbtest.Record(3, nil, []byte("v")), 1, 0)
	tests := []struct {
		name    string
		batches func() [][]byte
		want    error
	}{
		{"second batch has lying records", func() [][]byte { return [][]byte{makeBatch(batchOpts{records: 2}), bad} }, ErrInvalidRecord},
		{"third batch fails its CRC", func() [][]byte {
			c := makeBatch(batchOpts{})
			c[len(c)-1] ^= 1
			return [][]byte{makeBatch(batchOpts{}), makeBatch(batchOpts{}), c}
		}, ErrCorruptBatch},
		{"second batch skips a sequence", func() [][]byte {
			return [][]byte{makeBatch(batchOpts{records: 2, pid: 5, seq: 0}), makeBatch(batchOpts{pid: 5, seq: 3})}
		}, ErrOutOfOrderSequence},
		{"second batch from a stale epoch", func() [][]byte {
			return [][]byte{makeBatch(batchOpts{pid: 6, epoch: 2, seq: 0}), makeBatch(batchOpts{pid: 6, epoch: 1, seq: 1})}
		}, ErrInvalidProducerEpoch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			l, _ := openLog(t, dir, testConfig())
			_, err := l.AppendBatches(tt.batches())
			if !errors.Is(err, tt.want) {
				t.Fatalf("AppendBatches: %v, want %v", err, tt.want)
			}
			t.Logf("error text: %v", err)
			if l.LogEndOffset() != 0 || l.Size() != 0 {
				t.Fatalf("a refused call appended: LEO %d, size %d", l.LogEndOffset(), l.Size())
			}
			// Nothing of the refused call was remembered: a producer may
			// start again at sequence 0 of the same epoch.
			mustAppend(t, l, makeBatch(batchOpts{pid: 5, seq: 0}))
			mustAppend(t, l, makeBatch(batchOpts{pid: 6, epoch: 1, seq: 0}))
		})
	}
}

// TestAppendBatchesSequences: several batches of one producer in one call
// are checked in order against each other, duplicates included.
func TestAppendBatchesSequences(t *testing.T) {
	l, _ := openLog(t, t.TempDir(), testConfig())
	mustAppend(t, l, makeBatch(batchOpts{records: 2, pid: 7, seq: 0}))
	res, err := l.AppendBatches([][]byte{
		makeBatch(batchOpts{records: 2, pid: 7, seq: 0}), // a retry of the batch above
		makeBatch(batchOpts{records: 3, pid: 7, seq: 2}),
		makeBatch(batchOpts{records: 1, pid: 7, seq: 5}),
		makeBatch(batchOpts{records: 1, pid: 8, seq: 0}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.BaseOffset != 0 || res.LastOffset != 6 || res.Duplicate {
		t.Fatalf("result %+v, want offsets 0..6 (the retry answered with its original offsets), not a duplicate", res)
	}
	if l.LogEndOffset() != 7 {
		t.Fatalf("LEO %d, want 7: the retried batch must not be written again", l.LogEndOffset())
	}
	// The same call again is all duplicates, answered with the same offsets.
	res, err = l.AppendBatches([][]byte{
		makeBatch(batchOpts{records: 3, pid: 7, seq: 2}),
		makeBatch(batchOpts{records: 1, pid: 7, seq: 5}),
	})
	if err != nil || res.BaseOffset != 2 || res.LastOffset != 5 || !res.Duplicate {
		t.Fatalf("retried call: %+v, %v; want duplicates at 2..5", res, err)
	}
	if l.LogEndOffset() != 7 {
		t.Fatalf("LEO %d after a retried call, want 7", l.LogEndOffset())
	}
}
