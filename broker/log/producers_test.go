package log

import (
	"encoding/binary"
	"errors"
	"log/slog"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/recordbatch"

	"github.com/tributary-io/tributary/internal/recordbatch/rbtest"
)

func TestIdempotentProducerRules(t *testing.T) {
	type step struct {
		epoch   int16
		seq     int32
		records int
		wantErr error
		wantDup int64 // base offset of the original batch, -1 if not a duplicate
	}
	const pid = 42
	tests := []struct {
		name  string
		steps []step
	}{
		{"unknown producer accepts any sequence", []step{{0, 17, 1, nil, -1}}},
		{"consecutive sequences", []step{{0, 0, 2, nil, -1}, {0, 2, 3, nil, -1}, {0, 5, 1, nil, -1}}},
		{"gap is refused", []step{{0, 0, 2, nil, -1}, {0, 3, 1, ErrOutOfOrderSequence, -1}}},
		{"sequence going back is refused", []step{{0, 0, 2, nil, -1}, {0, 2, 1, nil, -1}, {0, 1, 1, ErrOutOfOrderSequence, -1}}},
		{"retry of the last batch is a duplicate", []step{{0, 0, 2, nil, -1}, {0, 2, 2, nil, -1}, {0, 2, 2, nil, 2}}},
		{"retry of a batch among the last five", []step{
			{0, 0, 1, nil, -1}, {0, 1, 1, nil, -1}, {0, 2, 1, nil, -1}, {0, 3, 1, nil, -1}, {0, 4, 1, nil, -1},
			{0, 0, 1, nil, 0}, {0, 2, 1, nil, 2},
		}},
		{"a batch older than the last five is out of order", []step{
			{0, 0, 1, nil, -1}, {0, 1, 1, nil, -1}, {0, 2, 1, nil, -1}, {0, 3, 1, nil, -1}, {0, 4, 1, nil, -1},
			{0, 5, 1, nil, -1}, {0, 0, 1, ErrOutOfOrderSequence, -1},
		}},
		{"same first sequence but different length is not a duplicate", []step{{0, 0, 2, nil, -1}, {0, 0, 3, ErrOutOfOrderSequence, -1}}},
		{"older epoch is fenced", []step{{3, 0, 1, nil, -1}, {2, 1, 1, ErrInvalidProducerEpoch, -1}}},
		{"newer epoch must start at 0", []step{{0, 0, 1, nil, -1}, {1, 5, 1, ErrOutOfOrderSequence, -1}}},
		{"newer epoch resets state", []step{{0, 0, 3, nil, -1}, {1, 0, 1, nil, -1}, {1, 1, 1, nil, -1}, {0, 3, 1, ErrInvalidProducerEpoch, -1}}},
		{"sequence wraps after MaxInt32", []step{{0, math.MaxInt32 - 1, 2, nil, -1}, {0, 0, 1, nil, -1}}},
		{"a batch spanning the wrap", []step{{0, math.MaxInt32 - 1, 4, nil, -1}, {0, 2, 1, nil, -1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, _ := openLog(t, t.TempDir(), testConfig())
			for i, st := range tt.steps {
				leo := l.LogEndOffset()
				res, err := l.Append(makeBatch(batchOpts{pid: pid, epoch: st.epoch, seq: st.seq, records: st.records}))
				if !errors.Is(err, st.wantErr) {
					t.Fatalf("step %d: error %v, want %v", i, err, st.wantErr)
				}
				if err != nil {
					if l.LogEndOffset() != leo {
						t.Fatalf("step %d: refused batch moved LEO", i)
					}
					continue
				}
				if st.wantDup >= 0 {
					if !res.Duplicate || res.BaseOffset != st.wantDup || l.LogEndOffset() != leo {
						t.Fatalf("step %d: %+v (LEO %d→%d), want duplicate of %d with nothing written",
							i, res, leo, l.LogEndOffset(), st.wantDup)
					}
					if res.LastOffset != st.wantDup+int64(st.records)-1 {
						t.Fatalf("step %d: duplicate last offset %d", i, res.LastOffset)
					}
				} else if res.Duplicate || res.BaseOffset != leo {
					t.Fatalf("step %d: %+v, want a new batch at %d", i, res, leo)
				}
			}
		})
	}
}

func TestNonIdempotentBatchesAreNotChecked(t *testing.T) {
	l, _ := openLog(t, t.TempDir(), testConfig())
	for range 3 {
		res := mustAppend(t, l, makeBatch(batchOpts{})) // producer id -1, sequence -1
		if res.Duplicate {
			t.Fatal("a batch without producer id was taken for a duplicate")
		}
	}
	if l.LogEndOffset() != 3 {
		t.Fatalf("LEO = %d, want 3", l.LogEndOffset())
	}
}

func TestProducerStateSurvivesReopen(t *testing.T) {
	for _, clean := range []bool{true, false} {
		dir := t.TempDir()
		l, _ := openLog(t, dir, testConfig())
		mustAppend(t, l, makeBatch(batchOpts{pid: 7, epoch: 2, seq: 0, records: 3}))
		mustAppend(t, l, makeBatch(batchOpts{pid: 7, epoch: 2, seq: 3, records: 2}))
		if clean {
			l.Close()
		} else {
			crash(l)
		}
		l2, rep := openLog(t, dir, testConfig())
		if rep.Clean != clean {
			t.Fatalf("report %+v, want Clean %v", rep, clean)
		}
		res, err := l2.Append(makeBatch(batchOpts{pid: 7, epoch: 2, seq: 3, records: 2}))
		if err != nil || !res.Duplicate || res.BaseOffset != 3 || res.LastOffset != 4 {
			t.Fatalf("clean=%v: retry after reopen = %+v, %v; want duplicate [3, 4]", clean, res, err)
		}
		if _, err := l2.Append(makeBatch(batchOpts{pid: 7, epoch: 2, seq: 9})); !errors.Is(err, ErrOutOfOrderSequence) {
			t.Fatalf("clean=%v: gap after reopen: %v", clean, err)
		}
		if _, err := l2.Append(makeBatch(batchOpts{pid: 7, epoch: 1, seq: 5})); !errors.Is(err, ErrInvalidProducerEpoch) {
			t.Fatalf("clean=%v: old epoch after reopen: %v", clean, err)
		}
		if res := mustAppend(t, l2, makeBatch(batchOpts{pid: 7, epoch: 2, seq: 5})); res.BaseOffset != 5 {
			t.Fatalf("clean=%v: next batch at %d, want 5", clean, res.BaseOffset)
		}
	}
}

// TestProducerTableIsBounded: made-up producer ids past MaxProducerIDs
// evict the least recently active producers, said once in the log; an
// evicted producer's next batch is accepted as a new producer's, recent
// producers keep their dedupe, and the bound holds across a restart.
func TestProducerTableIsBounded(t *testing.T) {
	var logs syncBuffer
	cfg := testConfig()
	cfg.MaxProducerIDs = 100
	dir := t.TempDir()
	l, _, err := Open(dir, cfg, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for id := int64(1); id <= 1000; id++ {
		mustAppend(t, l, makeBatch(batchOpts{pid: id, seq: 3}))
	}
	if n := trackedProducers(l); n != 100 {
		t.Fatalf("%d producers tracked, want the bound 100", n)
	}
	if n := strings.Count(logs.String(), "max_producer_ids=100"); n != 1 {
		t.Fatalf("eviction logged %d times, want once:\n%s", n, logs.String())
	}
	if res := mustAppend(t, l, makeBatch(batchOpts{pid: 1, seq: 9})); res.Duplicate {
		t.Fatal("evicted producer's batch taken for a duplicate")
	}
	if res := mustAppend(t, l, makeBatch(batchOpts{pid: 1000, seq: 3})); !res.Duplicate || res.BaseOffset != 999 {
		t.Fatalf("recent producer's retry = %+v, want a duplicate at 999", res)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2, _ := openLog(t, dir, cfg)
	if n := trackedProducers(l2); n != 100 {
		t.Fatalf("%d producers tracked after restart, want 100", n)
	}
	if res := mustAppend(t, l2, makeBatch(batchOpts{pid: 1000, seq: 3})); !res.Duplicate || res.BaseOffset != 999 {
		t.Fatalf("recent producer's retry after restart = %+v, want a duplicate at 999", res)
	}
}

// TestMillionMadeUpProducerIDs sends batches from one million producer ids
// nobody issued through the producer table, as a hostile client could:
// the table holds at most DefaultMaxProducerIDs and its heap stays at a few
// MB (it was 280 MB, kept for good, before the bound).
func TestMillionMadeUpProducerIDs(t *testing.T) {
	if testing.Short() {
		t.Skip("a million producer ids")
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	p := newProducers(DefaultMaxProducerIDs, quietLogger(), "")
	now := time.Now()
	for i := range int64(1_000_000) {
		h := recordbatch.Header{ProducerID: 1<<40 + i, BaseSequence: int32(i), RecordCount: 1}
		if dup, err := p.check(&h); dup != nil || err != nil {
			t.Fatalf("made-up producer %d: %v, %v", i, dup, err)
		}
		p.record(&h, i, i, now)
	}
	grown := int64(heap()) - int64(before)
	t.Logf("1,000,000 made-up producer ids: %d tracked, heap grew %.1f MB", p.len(), float64(grown)/(1<<20))
	if p.len() != DefaultMaxProducerIDs {
		t.Fatalf("%d producers tracked, want the bound %d", p.len(), DefaultMaxProducerIDs)
	}
	if grown > 8<<20 {
		t.Fatalf("heap grew %d bytes for a bounded table", grown)
	}
	runtime.KeepAlive(&p)
}

// BenchmarkAppendMadeUpProducerIDs appends one batch per new producer id
// through the log and reports how many it tracks and the heap in use.
func BenchmarkAppendMadeUpProducerIDs(b *testing.B) {
	l, _ := openLog(b, b.TempDir(), testConfig())
	batch := makeBatch(batchOpts{pid: 1, seq: 0})
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		binary.BigEndian.PutUint64(batch[recordbatch.OffProducerID:], uint64(1<<40+i))
		rbtest.FixBatch(batch)
		if _, err := l.Append(batch); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	b.ReportMetric(float64(trackedProducers(l)), "producers")
	b.ReportMetric(float64(m.HeapAlloc)/(1<<20), "heap-MB")
}
