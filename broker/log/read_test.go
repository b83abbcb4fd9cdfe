package log

import (
	"context"
	"errors"
	"testing"
	"time"
)

// buildLog appends batches of the given record counts (each record 50
// bytes) with small segments and index interval, so that reads cross index
// entries and segment boundaries, and flushes.
func buildLog(t *testing.T, counts []int) (*Log, []AppendResult) {
	t.Helper()
	cfg := testConfig()
	cfg.SegmentBytes = 1000
	cfg.IndexIntervalBytes = 300
	l, _ := openLog(t, t.TempDir(), cfg)
	var res []AppendResult
	for i, n := range counts {
		res = append(res, mustAppend(t, l, makeBatch(batchOpts{records: n, valueSize: 50, ts: int64(1000 + i)})))
	}
	mustFlush(t, l)
	return l, res
}

func TestReadFindsBatchForEveryOffset(t *testing.T) {
	counts := []int{1, 3, 1, 5, 2, 1, 1, 4, 1, 1, 7, 1, 2, 1, 1, 3, 1}
	l, res := buildLog(t, counts)
	if n := len(l.segs); n < 4 {
		t.Fatalf("only %d segments: the test wants several", n)
	}
	for _, s := range l.segs {
		if s.size > 0 && len(s.index) < 2 && s != l.active {
			t.Fatalf("segment %d has %d index entries: the test wants several", s.base, len(s.index))
		}
	}
	for _, r := range res {
		for off := r.BaseOffset; off <= r.LastOffset; off++ {
			s, err := l.Read(off, 1)
			if err != nil {
				t.Fatalf("Read(%d): %v", off, err)
			}
			hs := batchesIn(t, readAll(t, s))
			if len(hs) != 1 || hs[0].BaseOffset != r.BaseOffset || hs[0].NextOffset()-1 != r.LastOffset {
				t.Fatalf("Read(%d, 1) = %d batches starting %d, want the batch [%d, %d]",
					off, len(hs), hs[0].BaseOffset, r.BaseOffset, r.LastOffset)
			}
		}
	}
	// A large read returns the rest of one segment, contiguous offsets.
	for _, seg := range l.segs {
		s, err := l.Read(seg.base, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		hs := batchesIn(t, readAll(t, s))
		if hs[0].BaseOffset != seg.base || hs[len(hs)-1].NextOffset() != seg.next {
			t.Fatalf("Read(%d) covered [%d, %d), want the segment [%d, %d)",
				seg.base, hs[0].BaseOffset, hs[len(hs)-1].NextOffset(), seg.base, seg.next)
		}
		for i := 1; i < len(hs); i++ {
			if hs[i].BaseOffset != hs[i-1].NextOffset() {
				t.Fatalf("gap between batches at %d", hs[i].BaseOffset)
			}
		}
	}
}

func TestReadMaxBytes(t *testing.T) {
	counts := []int{1, 1, 1, 1, 1, 1}
	cfg := testConfig()
	cfg.IndexIntervalBytes = 1
	l, _ := openLog(t, t.TempDir(), cfg)
	size := int64(len(makeBatch(batchOpts{valueSize: 50})))
	for range counts {
		mustAppend(t, l, makeBatch(batchOpts{valueSize: 50}))
	}
	mustFlush(t, l)
	tests := []struct {
		name        string
		offset      int64
		maxBytes    int64
		wantBatches int
	}{
		{"first batch whole even if larger than maxBytes", 0, 1, 1},
		{"zero maxBytes still gives one batch", 2, 0, 1},
		{"exactly one batch", 0, size, 1},
		{"one byte short of two batches", 0, 2*size - 1, 1},
		{"exactly two batches", 1, 2 * size, 2},
		{"more than is left", 3, 100 * size, 3},
		{"last batch", 5, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := l.Read(tt.offset, tt.maxBytes)
			if err != nil {
				t.Fatal(err)
			}
			hs := batchesIn(t, readAll(t, s))
			if len(hs) != tt.wantBatches || hs[0].BaseOffset != tt.offset {
				t.Fatalf("got %d batches from %d, want %d from %d", len(hs), hs[0].BaseOffset, tt.wantBatches, tt.offset)
			}
		})
	}
}

func TestReadRange(t *testing.T) {
	l, _ := openLog(t, t.TempDir(), testConfig())
	if s, err := l.Read(0, 100); err != nil || s.Size != 0 {
		t.Fatalf("Read(0) on an empty log = %+v, %v; want empty", s, err)
	}
	for range 3 {
		mustAppend(t, l, makeBatch(batchOpts{records: 2}))
	}
	mustFlush(t, l)
	mustAppend(t, l, makeBatch(batchOpts{records: 2})) // offsets 6, 7: not flushed
	tests := []struct {
		offset   int64
		wantErr  error
		wantData bool
	}{
		{-1, ErrOffsetOutOfRange, false},
		{0, nil, true},
		{5, nil, true},
		{6, nil, false}, // the high watermark
		{7, nil, false}, // between HW and LEO
		{8, nil, false}, // LEO
		{9, ErrOffsetOutOfRange, false},
	}
	for _, tt := range tests {
		s, err := l.Read(tt.offset, 1<<20)
		if !errors.Is(err, tt.wantErr) || (s.Size > 0) != tt.wantData {
			t.Errorf("Read(%d) = size %d, %v; want data %v, error %v", tt.offset, s.Size, err, tt.wantData, tt.wantErr)
		}
		if tt.wantData {
			hs := batchesIn(t, readAll(t, s))
			if last := hs[len(hs)-1].NextOffset(); last != 6 {
				t.Errorf("Read(%d) went to %d, past the high watermark 6", tt.offset, last)
			}
		}
	}
}

func TestReadBelowStartAfterRetention(t *testing.T) {
	clock := newFakeClock()
	cfg := testConfig()
	cfg.Clock = clock.Now
	cfg.SegmentBytes = 200
	cfg.RetentionAge = 1
	l, _ := openLog(t, t.TempDir(), cfg)
	for range 5 {
		mustAppend(t, l, makeBatch(batchOpts{valueSize: 100, ts: clock.Now().UnixMilli()}))
	}
	mustFlush(t, l)
	clock.Advance(time.Second)
	if _, err := l.ApplyRetention(); err != nil {
		t.Fatal(err)
	}
	if l.StartOffset() != 4 {
		t.Fatalf("StartOffset = %d, want 4", l.StartOffset())
	}
	if _, err := l.Read(3, 100); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("Read below start: %v, want ErrOffsetOutOfRange", err)
	}
}

func TestOffsetForTime(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 500
	cfg.IndexIntervalBytes = 150
	l, _ := openLog(t, t.TempDir(), cfg)
	// Timestamps not monotonic, as producers' clocks are not.
	tss := []int64{100, 200, 150, 300, 250, 400, 500, 450, 600, 700}
	var res []AppendResult
	for _, ts := range tss {
		res = append(res, mustAppend(t, l, makeBatch(batchOpts{records: 2, valueSize: 40, ts: ts})))
	}
	if err := l.WaitFlushed(context.Background(), res[len(res)-1].LastOffset); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, makeBatch(batchOpts{ts: 10_000})) // unflushed: invisible
	for _, tt := range []struct {
		ts     int64
		wantI  int // index into tss, -1 for none
		wantTs int64
	}{
		{0, 0, 100}, {100, 0, 100}, {101, 1, 200}, {160, 1, 200}, {201, 3, 300},
		{260, 3, 300}, {301, 5, 400}, {460, 6, 500}, {501, 8, 600}, {700, 9, 700}, {701, -1, 0},
	} {
		off, ts, ok := l.OffsetForTime(tt.ts)
		if tt.wantI < 0 {
			if ok {
				t.Errorf("OffsetForTime(%d) = %d, want none", tt.ts, off)
			}
			continue
		}
		if !ok || off != res[tt.wantI].BaseOffset || ts != tt.wantTs {
			t.Errorf("OffsetForTime(%d) = %d, %d, %v; want %d, %d", tt.ts, off, ts, ok, res[tt.wantI].BaseOffset, tt.wantTs)
		}
	}
}
