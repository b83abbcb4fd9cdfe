package recordbatch_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/tributary-io/tributary/internal/recordbatch"
	"github.com/tributary-io/tributary/internal/recordbatch/rbtest"
)

// TestStampLogAppendTime: a stamped batch says LogAppendTime, carries the
// time as its MaxTimestamp and passes its CRC check; a damaged one is left
// as it was, so validation still refuses it.
func TestStampLogAppendTime(t *testing.T) {
	b := rbtest.Batch(rbtest.Record(0, nil, []byte("v")), 1, 0)
	if !recordbatch.StampLogAppendTime(b, 1234) {
		t.Fatal("a sound batch was not stamped")
	}
	h, err := recordbatch.CheckFraming(b)
	if err != nil {
		t.Fatalf("the stamped batch: %v", err)
	}
	if b[recordbatch.OffAttributes+1]&recordbatch.AttrLogAppendTime == 0 || h.MaxTimestamp != 1234 {
		t.Fatalf("attributes %08b, max timestamp %d; want the LogAppendTime bit and 1234", b[recordbatch.OffAttributes+1], h.MaxTimestamp)
	}

	damaged := rbtest.Batch(rbtest.Record(0, nil, []byte("v")), 1, 0)
	damaged[len(damaged)-1] ^= 0xff
	before := slices.Clone(damaged)
	if recordbatch.StampLogAppendTime(damaged, 1234) || !slices.Equal(damaged, before) {
		t.Fatal("a batch whose CRC does not match was stamped")
	}
	if _, err := recordbatch.CheckFraming(damaged); !errors.Is(err, recordbatch.ErrCorrupt) {
		t.Fatalf("the damaged batch after stamping: %v, want ErrCorrupt", err)
	}
}

// TestFramedSizeAndCodec: the length prefix alone says where the next batch
// starts, and ParseHeader's codec is the one the attributes carry.
func TestFramedSizeAndCodec(t *testing.T) {
	b := rbtest.Batch(rbtest.Record(0, nil, []byte("v")), 1, int16(recordbatch.CodecZstd))
	if got := recordbatch.FramedSize(b[:recordbatch.LengthPrefix]); got != int64(len(b)) {
		t.Errorf("FramedSize %d, want the batch's %d bytes", got, len(b))
	}
	if h := recordbatch.ParseHeader(b); h.Size() != int64(len(b)) || h.Codec() != recordbatch.CodecZstd {
		t.Errorf("Size %d codec %v, want %d and zstd", h.Size(), h.Codec(), len(b))
	}
	b[recordbatch.OffLength] = 0xff // a negative length field
	if got := recordbatch.FramedSize(b); got >= recordbatch.LengthPrefix {
		t.Errorf("FramedSize of a negative length field = %d, want less than the prefix", got)
	}
}
