package log

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/recordbatch/rbtest"
)

// batchWithTimestamps builds an uncompressed batch whose records carry the
// given timestamps.
func batchWithTimestamps(ts ...int64) []byte {
	first, maxTs := ts[0], ts[0]
	for _, t := range ts {
		first, maxTs = min(first, t), max(maxTs, t)
	}
	rb := kmsg.RecordBatch{Magic: 2, LastOffsetDelta: int32(len(ts) - 1), FirstTimestamp: first, MaxTimestamp: maxTs,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: int32(len(ts))}
	for i, t := range ts {
		rec := kmsg.Record{OffsetDelta: int32(i), TimestampDelta64: t - first, Value: []byte("v")}
		rec.Length = int32(len(rec.AppendTo(nil)) - 1)
		rb.Records = rec.AppendTo(rb.Records)
	}
	return rbtest.FixBatch(rb.AppendTo(nil))
}

func TestMaxTimestamp(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = int64(len(batchWithTimestamps(1, 2, 3))) * 2
	l, _ := openLog(t, t.TempDir(), cfg)
	if _, _, ok := l.MaxTimestamp(); ok {
		t.Fatal("an empty log has a max timestamp")
	}
	mustAppend(t, l, batchWithTimestamps(100, 200, 300))   // offsets 0-2
	mustAppend(t, l, batchWithTimestamps(400, 9000, 9000)) // 3-5: 9000 first at 4
	mustAppend(t, l, batchWithTimestamps(500, 600, 700))   // 6-8, next segment
	mustAppend(t, l, batchWithTimestamps(800, 8000, 900))  // 9-11
	mustAppend(t, l, batchWithTimestamps(10000, 100, 200)) // 12-14, not flushed yet
	l.mu.Lock()
	l.hw, l.hwSeg, l.hwPos = 12, l.segs[1], l.segs[1].size // pretend only 0-11 are flushed
	l.mu.Unlock()
	if off, ts, ok := l.MaxTimestamp(); !ok || off != 4 || ts != 9000 {
		t.Errorf("MaxTimestamp = %d, %d, %v; want offset 4 at 9000", off, ts, ok)
	}
	mustFlush(t, l)
	if off, ts, ok := l.MaxTimestamp(); !ok || off != 12 || ts != 10000 {
		t.Errorf("after the flush MaxTimestamp = %d, %d, %v; want offset 12 at 10000", off, ts, ok)
	}
}
