package log

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/recordbatch"

	"github.com/tributary-io/tributary/internal/recordbatch/rbtest"
)

// kv is a test record; a nil value is a tombstone.
type kv struct {
	key   string
	value []byte
}

// keyedBatch builds a batch of keyed records stamped ts, compressed with c
// when c is not nil.
func keyedBatch(ts int64, c *rbtest.Compressor, recs ...kv) []byte {
	var records []byte
	for i, r := range recs {
		records = append(records, rbtest.Record(int32(i), []byte(r.key), r.value)...)
	}
	codec := int16(0)
	if c != nil {
		records, codec = rbtest.Compress(*c, records), c.Codec
	}
	b := rbtest.Batch(records, int32(len(recs)), codec)
	binary.BigEndian.PutUint64(b[recordbatch.OffFirstTimestamp:], uint64(ts))
	binary.BigEndian.PutUint64(b[recordbatch.OffMaxTimestamp:], uint64(ts))
	return rbtest.FixBatch(b)
}

// readRec is a record as a consumer sees it.
type readRec struct {
	offset    int64
	key       string
	value     []byte
	tombstone bool
}

// readRecords reads every record of the log as a consumer would: batch by
// batch from the start, each batch's records at base offset + delta.
func readRecords(t *testing.T, l *Log) []readRec {
	t.Helper()
	var out []readRec
	for off := l.StartOffset(); off < l.HighWatermark(); {
		s, err := l.Read(off, 1<<20)
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		b := readAll(t, s)
		if len(b) == 0 {
			t.Fatalf("Read(%d) below the high watermark %d returned nothing", off, l.HighWatermark())
		}
		for len(b) > 0 {
			var rb kmsg.RecordBatch
			if err := rb.ReadFrom(b); err != nil {
				t.Fatalf("batch at offset %d: %v", off, err)
			}
			n := recordbatch.LengthPrefix + int(rb.Length)
			if _, err := recordbatch.CheckFraming(b[:n]); err != nil {
				t.Fatalf("batch at offset %d: %v", rb.FirstOffset, err)
			}
			records := rb.Records
			if codec := Codec(rb.Attributes & 7); codec != CodecNone {
				if records, err = recordbatch.DecompressAll(codec, records, DefaultMaxDecompressedBytes); err != nil {
					t.Fatal(err)
				}
			}
			prev := int64(-1)
			for i := int32(0); i < rb.NumRecords; i++ {
				var r kmsg.Record
				if err := r.ReadFrom(records); err != nil {
					t.Fatalf("record %d of batch %d: %v", i, rb.FirstOffset, err)
				}
				_, vn := binary.Varint(records)
				records = records[vn+int(r.Length):]
				if int64(r.OffsetDelta) <= prev || r.OffsetDelta > rb.LastOffsetDelta {
					t.Fatalf("batch %d: offset delta %d after %d (last %d)", rb.FirstOffset, r.OffsetDelta, prev, rb.LastOffsetDelta)
				}
				prev = int64(r.OffsetDelta)
				o := rb.FirstOffset + int64(r.OffsetDelta)
				if o >= off {
					out = append(out, readRec{offset: o, key: string(r.Key), value: r.Value, tombstone: r.Value == nil})
				}
			}
			off = max(off, rb.FirstOffset+int64(rb.LastOffsetDelta)+1)
			b = b[n:]
		}
	}
	return out
}

func compactConfig(clock *fakeClock) Config {
	cfg := testConfig()
	cfg.SegmentBytes = 600
	cfg.CleanupPolicy = PolicyCompact
	cfg.DeleteRetention = time.Hour
	cfg.Clock = clock.Now
	return cfg
}

// written is what the test appended: offset -> record, for checking that
// what survives kept its offset and content.
type written map[int64]kv

func (w written) appendTo(t *testing.T, l *Log, ts int64, c *rbtest.Compressor, recs ...kv) {
	t.Helper()
	res := mustAppend(t, l, keyedBatch(ts, c, recs...))
	for i, r := range recs {
		w[res.BaseOffset+int64(i)] = r
	}
}

// latest maps each key to the offset of its last record below end.
func (w written) latest(end int64) map[string]int64 {
	out := map[string]int64{}
	for off, r := range w {
		if off < end && off >= out[r.key] {
			out[r.key] = off
		}
	}
	return out
}

// checkCompacted checks the log against what was written: every record
// read has its original offset and content; the last record of every key
// is there unless it is a tombstone removed after DeleteRetention; below
// cleanedTo only the last record of each key among those below cleanedTo
// is there (the offset map covered no more); at and above it, everything.
func checkCompacted(t *testing.T, l *Log, w written, cleanedTo int64, tombstonesGone bool) {
	t.Helper()
	got := readRecords(t, l)
	seen := map[int64]bool{}
	for _, r := range got {
		want, ok := w[r.offset]
		if !ok || want.key != r.key || !bytes.Equal(want.value, r.value) || (want.value == nil) != r.tombstone {
			t.Fatalf("offset %d reads %q=%q, was written %q=%q", r.offset, r.key, r.value, want.key, want.value)
		}
		seen[r.offset] = true
	}
	latest := w.latest(cleanedTo)
	for off, r := range w {
		last := latest[r.key] == off
		switch {
		case off >= cleanedTo && !seen[off]:
			t.Fatalf("offset %d (%q) above the cleaned section %d is gone", off, r.key, cleanedTo)
		case off >= cleanedTo:
		case last && r.value == nil && tombstonesGone && seen[off]:
			t.Fatalf("tombstone of %q at %d survived past delete.retention.ms", r.key, off)
		case last && r.value == nil && !tombstonesGone && !seen[off]:
			t.Fatalf("tombstone of %q at %d removed before delete.retention.ms", r.key, off)
		case last && r.value != nil && !seen[off]:
			t.Fatalf("last value of %q at %d is gone", r.key, off)
		case !last && seen[off]:
			t.Fatalf("offset %d of %q survived cleaning though %d supersedes it", off, r.key, latest[r.key])
		}
	}
}

// Property: random keys, values and tombstones, some batches compressed;
// after cleaning, the last value of every key is readable and nothing
// else below the cleaned point, at its original offset; tombstones go once
// delete.retention.ms has passed on the log's clock; all of it holds after
// a clean restart and after a crash recovery that scans every segment.
// Rebuilt batches are in the topic's codec, or their own under
// compression.type=producer.
func TestCleanKeepsLastRecordOfEachKey(t *testing.T) {
	stores := []Compression{CompressionProducer, StoreIn(CodecZstd), CompressionProducer, StoreIn(CodecGzip),
		CompressionProducer, StoreIn(CodecLZ4), StoreIn(CodecNone), StoreIn(CodecSnappy)}
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			clock := newFakeClock()
			dir := filepath.Join(t.TempDir(), "topic-0")
			cfg := compactConfig(clock)
			cfg.SegmentBytes = 2000
			cfg.Compression = stores[seed]
			l, _ := openLog(t, dir, cfg)
			w := written{}
			keys := 3 + rng.IntN(30)
			for range 150 + rng.IntN(150) {
				n := 1 + rng.IntN(4)
				recs := make([]kv, n)
				for i := range recs {
					recs[i].key = fmt.Sprintf("k%d", rng.IntN(keys))
					if rng.IntN(5) > 0 {
						recs[i].value = fmt.Appendf(nil, "v%d-%d", rng.Uint32(), i)
					}
				}
				var c *rbtest.Compressor
				if k := rng.IntN(len(rbtest.Compressors) + 2); k < len(rbtest.Compressors) {
					c = &rbtest.Compressors[k]
				}
				w.appendTo(t, l, clock.Now().UnixMilli(), c, recs...)
			}
			mustFlush(t, l)
			before := map[int64]storedBatch{}
			for _, b := range storedBatches(t, l) {
				before[b.base] = b
			}
			m := newOffsetMap(1 << 20)
			st, err := l.clean(m, nil)
			if err != nil {
				t.Fatal(err)
			}
			if st.CleanedTo != l.active.base || st.Segments == 0 {
				t.Fatalf("cleaned to %d in %d segments, want up to the active segment at %d", st.CleanedTo, st.Segments, l.active.base)
			}
			checkCompacted(t, l, w, st.CleanedTo, false)
			checkCleanedCodecs(t, l, before, cfg.Compression)

			clock.Advance(2 * time.Hour)
			l.cleaned = 0 // force a full clean: nothing is dirty
			st, err = l.clean(m, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkCompacted(t, l, w, st.CleanedTo, true)
			checkCleanedCodecs(t, l, before, cfg.Compression)

			l.Close()
			l, _ = openLog(t, dir, cfg)
			checkCompacted(t, l, w, st.CleanedTo, true)
			l.Close()
			makeUnclean(t, dir, false)
			l, rep := openLog(t, dir, cfg)
			if rep.TruncatedBytes != 0 || len(rep.Lost) != 0 {
				t.Fatalf("recovery refused cleaned segments: %+v", rep)
			}
			checkCompacted(t, l, w, st.CleanedTo, true)
			l.Close()
			if vr, err := Verify(filepath.Dir(dir)); err != nil || vr.Damaged() {
				t.Fatalf("tributary log verify on a cleaned log: %+v, %v", vr, err)
			}
		})
	}
}

// The active segment, and segments newer than min.compaction.lag.ms, are
// never rewritten.
func TestCleanNeverTouchesActiveOrRecentSegments(t *testing.T) {
	clock := newFakeClock()
	cfg := compactConfig(clock)
	cfg.MinCompactionLag = time.Minute
	l, _ := openLog(t, t.TempDir(), cfg)
	w := written{}
	for i := range 60 {
		w.appendTo(t, l, clock.Now().UnixMilli(), nil, kv{"same", fmt.Appendf(nil, "v%d", i)})
		mustFlush(t, l)
	}
	if st, err := l.clean(newOffsetMap(1<<20), nil); err != nil || st.Segments != 0 {
		t.Fatalf("cleaned %d segments younger than min.compaction.lag.ms (err %v)", st.Segments, err)
	}
	clock.Advance(2 * time.Minute)
	active := l.active
	activeSize := active.size
	st, err := l.clean(newOffsetMap(1<<20), nil)
	if err != nil || st.Segments == 0 {
		t.Fatalf("clean: %+v, %v", st, err)
	}
	if l.active != active || active.size != activeSize || st.CleanedTo != active.base {
		t.Fatalf("active segment touched: cleaned to %d, active at %d", st.CleanedTo, active.base)
	}
	checkCompacted(t, l, w, st.CleanedTo, false)
	below := 0
	for _, r := range readRecords(t, l) {
		if r.offset < active.base {
			below++
		}
	}
	if below != 1 {
		t.Fatalf("%d records of the one key below the active segment, want 1", below)
	}
}

// A dirty section with more keys than the offset map holds is cleaned in
// parts, each within the map's memory, and ends fully compacted.
func TestCleanBoundedOffsetMap(t *testing.T) {
	clock := newFakeClock()
	cfg := compactConfig(clock)
	l, _ := openLog(t, t.TempDir(), cfg)
	w := written{}
	for round := range 3 {
		for k := range 40 {
			w.appendTo(t, l, clock.Now().UnixMilli(), nil, kv{fmt.Sprintf("key-%02d", k), fmt.Appendf(nil, "r%d", round)})
			mustFlush(t, l)
		}
	}
	m := newOffsetMap(10 * mapSlotSize) // 9 keys
	runs := 0
	for {
		st, err := l.clean(m, nil)
		if err != nil {
			t.Fatal(err)
		}
		if m.used > m.capacity() {
			t.Fatalf("map holds %d keys, capacity %d", m.used, m.capacity())
		}
		if st.Segments == 0 {
			break
		}
		runs++
		if st.CleanedTo < l.active.base && st.CleanedTo-st.DirtyFrom > int64(m.capacity()) {
			t.Fatalf("one run covered %d offsets with a map of %d keys", st.CleanedTo-st.DirtyFrom, m.capacity())
		}
		if runs > 100 {
			t.Fatal("cleaning never finishes")
		}
	}
	if runs < 5 {
		t.Fatalf("cleaned in %d runs; a map of 9 keys needs more for 40 keys", runs)
	}
	checkCompacted(t, l, w, l.active.base, false)
}

// A compacted topic refuses records without a key, compressed or not; a
// topic that only deletes takes them.
func TestKeylessRecordRefusedWhenCompacted(t *testing.T) {
	keyless := rbtest.Record(0, nil, []byte("v"))
	plain := rbtest.Batch(keyless, 1, 0)
	zipped := rbtest.Batch(rbtest.Compress(rbtest.Compressors[0], keyless), 1, int16(CodecGzip))
	mixed := rbtest.Batch(rbtest.Cat(rbtest.Record(0, []byte("k"), []byte("v")), rbtest.Record(1, nil, []byte("v"))), 2, 0)

	l, _ := openLog(t, t.TempDir(), compactConfig(newFakeClock()))
	for name, b := range map[string][]byte{"plain": plain, "gzip": zipped, "second record": mixed} {
		_, err := l.Append(bytes.Clone(b))
		var re *RecordError
		if !errors.Is(err, ErrInvalidRecord) || !errors.As(err, &re) {
			t.Errorf("%s: keyless record accepted by a compacted log: %v", name, err)
		}
	}
	if l.LogEndOffset() != 0 {
		t.Fatalf("refused batches took offsets: log end %d", l.LogEndOffset())
	}
	mustAppend(t, l, keyedBatch(1000, nil, kv{"k", []byte("v")}))

	d, _ := openLog(t, t.TempDir(), testConfig())
	mustAppend(t, d, bytes.Clone(plain))
	// Turning compaction on later refuses keyless records from then on.
	cfg := testConfig()
	cfg.CleanupPolicy = PolicyCompactDelete
	d.Reconfigure(cfg)
	if _, err := d.Append(bytes.Clone(plain)); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("after Reconfigure to compact,delete: %v", err)
	}
}

// An idempotent producer's newest batch keeps its header when all its
// records are superseded, so producer state rebuilt from the log (its
// snapshots lost) still answers that batch's retry as a duplicate.
func TestCleanKeepsNewestProducerBatchHeader(t *testing.T) {
	clock := newFakeClock()
	dir := t.TempDir()
	cfg := compactConfig(clock)
	l, _ := openLog(t, dir, cfg)
	idem := keyedBatch(clock.Now().UnixMilli(), nil, kv{"a", []byte("1")}, kv{"b", []byte("1")})
	binary.BigEndian.PutUint64(idem[recordbatch.OffProducerID:], 77)
	binary.BigEndian.PutUint16(idem[recordbatch.OffProducerEpoch:], 0)
	binary.BigEndian.PutUint32(idem[recordbatch.OffBaseSequence:], 0)
	idem = rbtest.FixBatch(idem)
	orig := mustAppend(t, l, bytes.Clone(idem))
	for i := range 30 {
		mustAppend(t, l, keyedBatch(clock.Now().UnixMilli(), nil, kv{"a", fmt.Appendf(nil, "%d", i)}, kv{"b", []byte("x")}))
		mustFlush(t, l)
	}
	if _, err := l.clean(newOffsetMap(1<<20), nil); err != nil {
		t.Fatal(err)
	}
	s, err := l.Read(0, 1)
	if err != nil {
		t.Fatal(err)
	}
	hs := batchesIn2(t, readAll(t, s))
	if hs[0].BaseOffset != 0 || hs[0].RecordCount != 0 || hs[0].ProducerID != 77 || hs[0].LastOffsetDelta != 1 {
		t.Fatalf("first batch after cleaning: %+v, want the producer's header with no records", hs[0])
	}
	l.Close()
	removeSnapshots(t, dir)
	makeUnclean(t, dir, false)
	l, _ = openLog(t, dir, cfg)
	res, err := l.Append(bytes.Clone(idem))
	if err != nil || !res.Duplicate || res.BaseOffset != orig.BaseOffset {
		t.Fatalf("retry after cleaning and a rebuild of producer state: %+v, %v; want duplicate at %d", res, err, orig.BaseOffset)
	}
}

// batchesIn2 is batchesIn for cleaned data: framing only, since a cleaned
// batch may hold fewer records than its offsets span.
func batchesIn2(t *testing.T, b []byte) []recordbatch.Header {
	t.Helper()
	var hs []recordbatch.Header
	for len(b) > 0 {
		h := recordbatch.ParseHeader(b)
		if _, err := recordbatch.CheckFraming(b[:h.Size()]); err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
		b = b[h.Size():]
	}
	return hs
}

// A log is offered to the cleaner once its dirty share reaches
// min.cleanable.dirty.ratio, or once its oldest dirty segment is older
// than max.compaction.lag.ms whatever the ratio; a log that only deletes
// never is.
func TestCleanNeedFollowsRatioAndMaxLag(t *testing.T) {
	clock := newFakeClock()
	cfg := compactConfig(clock)
	cfg.MinCleanableDirtyRatio = 0.9
	l, _ := openLog(t, t.TempDir(), cfg)
	for i := range 40 {
		mustAppend(t, l, keyedBatch(clock.Now().UnixMilli(), nil, kv{fmt.Sprintf("k%d", i%3), []byte("value")}))
	}
	mustFlush(t, l)
	if _, _, _, ok, _ := l.cleanNeed(); !ok {
		t.Fatal("a never-cleaned log (all dirty) is not offered")
	}
	if _, err := l.clean(newOffsetMap(1<<20), nil); err != nil {
		t.Fatal(err)
	}
	for i := range 3 { // a little more dirt: far below 0.9
		mustAppend(t, l, keyedBatch(clock.Now().UnixMilli(), nil, kv{fmt.Sprintf("k%d", i), []byte("value, a bit longer to fill segments")}))
	}
	for range 6 {
		mustAppend(t, l, keyedBatch(clock.Now().UnixMilli(), nil, kv{"k0", []byte("value, a bit longer to fill segments")}))
	}
	mustFlush(t, l)
	ratio, _, overdue, ok, _ := l.cleanNeed()
	if ok || overdue || ratio == 0 || ratio >= 0.9 {
		t.Fatalf("ratio %.2f, overdue %v, offered %v: want some dirt, below 0.9, not offered", ratio, overdue, ok)
	}
	cfg.MaxCompactionLag = time.Hour
	l.Reconfigure(cfg)
	clock.Advance(2 * time.Hour)
	if _, _, overdue, ok, _ := l.cleanNeed(); !ok || !overdue {
		t.Fatalf("past max.compaction.lag.ms: overdue %v, offered %v", overdue, ok)
	}
	cfg.CleanupPolicy = PolicyDelete
	l.Reconfigure(cfg)
	if _, _, _, ok, _ := l.cleanNeed(); ok {
		t.Fatal("a log whose policy is delete is offered for cleaning")
	}
}

// cleanup.policy=compact alone deletes nothing by age; compact,delete does.
func TestRetentionFollowsCleanupPolicy(t *testing.T) {
	for _, tc := range []struct {
		policy  CleanupPolicy
		deletes bool
	}{{PolicyCompact, false}, {PolicyCompactDelete, true}} {
		clock := newFakeClock()
		cfg := compactConfig(clock)
		cfg.CleanupPolicy, cfg.RetentionAge = tc.policy, time.Hour
		l, _ := openLog(t, t.TempDir(), cfg)
		for i := range 20 {
			mustAppend(t, l, keyedBatch(clock.Now().UnixMilli(), nil, kv{fmt.Sprintf("k%d", i), []byte("a value of some forty bytes or so ......")}))
		}
		mustFlush(t, l)
		clock.Advance(2 * time.Hour)
		n, err := l.ApplyRetention()
		if err != nil || (n > 0) != tc.deletes {
			t.Errorf("%v: retention deleted %d segments (%v), want deletion %v", tc.policy, n, err, tc.deletes)
		}
	}
}
