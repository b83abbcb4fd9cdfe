package replication

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/tributary-io/tributary/internal/recordbatch/rbtest"
)

// A follower cuts the leader's records into whole batches by their length
// fields alone: a batch the leader cut short waits for the next fetch (even
// one shorter than a header), and a length field too small for a header is
// the leader's error, not a reason to loop.
func TestSplitRecordBatches(t *testing.T) {
	a := rbtest.Batch(rbtest.Record(0, nil, []byte("a")), 1, 0)
	b := rbtest.Batch(rbtest.Record(0, nil, []byte("bb")), 1, 0)
	for _, cut := range []int{0, 5, 20, len(b) - 1} {
		records := slices.Concat(a, b, b[:cut])
		got, err := splitRecordBatches(records)
		if err != nil || len(got) != 2 || !slices.Equal(got[0], a) || !slices.Equal(got[1], b) {
			t.Errorf("cut at %d: %d batches, %v; want a and b", cut, len(got), err)
		}
	}
	bad := slices.Clone(a)
	binary.BigEndian.PutUint32(bad[8:], 10)
	if _, err := splitRecordBatches(bad); err == nil {
		t.Error("a length field shorter than a header was accepted")
	}
}
