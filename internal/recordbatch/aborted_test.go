package recordbatch

import (
	"encoding/binary"
	"slices"
	"testing"
)

// txnBatch is a transactional batch of producer pid at base holding n
// records.
func txnBatch(base, pid int64, n int) []byte {
	recs := make([]rec, n)
	for i := range recs {
		recs[i] = kv("k", "v")
	}
	b := makeBatch(base, AttrTransactional, int32(n), int32(n-1), encodeRecords(recs))
	binary.BigEndian.PutUint64(b[OffProducerID:], uint64(pid))
	SetCRC(b)
	return b
}

// marker is producer pid's commit or abort marker at offset.
func marker(offset, pid int64, commit bool) []byte {
	b := MarkerBatch(pid, 0, commit, 0, 0)
	binary.BigEndian.PutUint64(b[OffBaseOffset:], uint64(offset))
	return b
}

func walkOffsets(t *testing.T, batches []byte) []int64 {
	t.Helper()
	recs, _, err := Walk(nil, batches, 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var offs []int64
	for _, r := range recs {
		offs = append(offs, r.Offset)
	}
	return offs
}

// Two producers interleaved: producer 7 aborts, producer 9 commits; a plain
// batch follows. Only 7's records go, and the offset after the answer
// counts the dropped batches.
func TestDropAborted(t *testing.T) {
	var b []byte
	b = append(b, txnBatch(0, 7, 2)...)   // 0-1 aborted
	b = append(b, txnBatch(2, 9, 2)...)   // 2-3 committed
	b = append(b, txnBatch(4, 7, 1)...)   // 4 aborted
	b = append(b, marker(5, 7, false)...) // 5 abort
	b = append(b, marker(6, 9, true)...)  // 6 commit
	b = append(b, txnBatch(7, 7, 1)...)   // 7: 7's next transaction, not aborted
	b = append(b, makeBatch(8, 0, 1, 0, encodeRecords([]rec{kv("k", "v")}))...)
	kept, next := DropAborted(b, []Aborted{{ProducerID: 7, FirstOffset: 0}})
	if got, want := walkOffsets(t, kept), []int64{2, 3, 7, 8}; !slices.Equal(got, want) {
		t.Fatalf("records kept at %v, want %v", got, want)
	}
	if next != 9 {
		t.Fatalf("next %d, want 9", next)
	}
	if kept, _ := DropAborted(b, nil); &kept[0] != &b[0] || len(kept) != len(b) {
		t.Fatal("nothing aborted: the batches were copied")
	}
}

// An answer ending in an aborted transaction's batches: nothing is left,
// and next is past them, so the reader moves on.
func TestDropAbortedTail(t *testing.T) {
	b := append(txnBatch(10, 3, 4), txnBatch(14, 3, 2)...)
	kept, next := DropAborted(b, []Aborted{{ProducerID: 3, FirstOffset: 10}})
	if len(kept) != 0 || next != 16 {
		t.Fatalf("kept %d bytes, next %d; want none and 16", len(kept), next)
	}
	// A batch cut short by the fetch's byte limit stays for the walk.
	cut := append(slices.Clone(b), txnBatch(16, 4, 1)[:20]...)
	if kept, next := DropAborted(cut, []Aborted{{ProducerID: 3, FirstOffset: 10}}); len(kept) != 20 || next != 16 {
		t.Fatalf("with a cut batch: kept %d bytes, next %d; want the 20 cut bytes and 16", len(kept), next)
	}
}

// Whatever a broken or hostile broker sends (lying lengths, garbage with
// a valid CRC, markers without records), DropAborted neither panics nor
// returns bytes it was not given: what it keeps is the input with whole
// batches cut out, and next never goes backwards past a batch it walked.
func FuzzDropAborted(f *testing.F) {
	var b []byte
	b = append(b, txnBatch(0, 7, 2)...)
	b = append(b, marker(2, 7, false)...)
	b = append(b, txnBatch(3, 9, 1)...)
	f.Add(b, int64(7), int64(0))
	f.Add(b[:len(b)-3], int64(9), int64(3))
	lying := slices.Clone(b)
	binary.BigEndian.PutUint32(lying[OffLength:], 0x7fffffff)
	f.Add(lying, int64(7), int64(0))
	f.Fuzz(func(t *testing.T, batches []byte, pid, first int64) {
		kept, next := DropAborted(batches, []Aborted{{ProducerID: pid, FirstOffset: first}})
		if len(kept) > len(batches) {
			t.Fatalf("kept %d bytes of %d", len(kept), len(batches))
		}
		if len(kept) == len(batches) && !slices.Equal(kept, batches) {
			t.Fatal("nothing dropped, yet the bytes changed")
		}
		if next < -1 {
			t.Fatalf("next %d", next)
		}
	})
}
