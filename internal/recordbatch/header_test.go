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
