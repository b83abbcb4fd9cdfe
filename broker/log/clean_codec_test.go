package log

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/tributary-io/tributary/internal/recordbatch/rbtest"

	"github.com/tributary-io/tributary/internal/recordbatch"
)

// storedBatch is what a consumer learns of a batch from its header.
type storedBatch struct {
	base  int64
	codec Codec
	count int32
}

// storedBatches lists every batch of the log, read as a consumer reads it.
func storedBatches(t *testing.T, l *Log) []storedBatch {
	t.Helper()
	var out []storedBatch
	for off := l.StartOffset(); off < l.HighWatermark(); {
		s, err := l.Read(off, 1<<20)
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		b := readAll(t, s)
		for _, h := range batchesIn2(t, b) {
			out = append(out, storedBatch{base: h.BaseOffset, codec: recordbatch.BatchCodec(b), count: h.RecordCount})
			b = b[h.Size():]
			off = max(off, h.NextOffset())
		}
	}
	return out
}

// checkCleanedCodecs checks that every batch the cleaner kept whole kept its
// codec, and every batch it rebuilt is in store's codec, or in the codec it
// had under compression.type=producer; batches left without records are
// uncompressed. before maps each appended batch's base offset to its codec
// and record count.
func checkCleanedCodecs(t *testing.T, l *Log, before map[int64]storedBatch, store Compression) {
	t.Helper()
	for _, got := range storedBatches(t, l) {
		was, ok := before[got.base]
		if !ok {
			t.Fatalf("batch at %d after cleaning was never appended", got.base)
		}
		want := was.codec
		if codec, ok := store.Codec(); ok && got.count < was.count {
			want = codec
		}
		if got.count == 0 {
			want = CodecNone
		}
		if got.codec != want {
			t.Fatalf("compression.type=%s: batch at %d (%d of %d records kept, appended in %s) is stored in %s, want %s",
				store, got.base, got.count, was.count, was.codec, got.codec, want)
		}
	}
}

// The batches compaction rebuilds are written in the topic's codec when
// compression.type names one, and in the codec they had under
// compression.type=producer, as Kafka's cleaner keeps the source codec;
// batches kept whole are untouched either way.
func TestCleanRebuildsInTopicCodec(t *testing.T) {
	gzip, zstd := &rbtest.Compressors[0], &rbtest.Compressors[4]
	for _, tc := range []struct {
		name   string
		store  Compression
		source *rbtest.Compressor // codec the producer sent
	}{
		{"producer keeps gzip", CompressionProducer, gzip},
		{"producer keeps zstd", CompressionProducer, zstd},
		{"producer keeps uncompressed", CompressionProducer, nil},
		{"zstd topic", StoreIn(CodecZstd), gzip},
		{"lz4 topic", StoreIn(CodecLZ4), nil},
		{"snappy topic", StoreIn(CodecSnappy), zstd},
		{"uncompressed topic", StoreIn(CodecNone), gzip},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			cfg := compactConfig(clock)
			cfg.Compression = tc.store
			dir := filepath.Join(t.TempDir(), "topic-0")
			l, _ := openLog(t, dir, cfg)
			defer l.Close()
			w := written{}
			for i := range 40 {
				// Each batch updates "hot" and writes a key of its own:
				// cleaning keeps half of every batch but the last.
				w.appendTo(t, l, clock.Now().UnixMilli(), tc.source,
					kv{"hot", fmt.Appendf(nil, "h%d", i)}, kv{fmt.Sprint("own", i), []byte("v")})
			}
			mustFlush(t, l)
			before := map[int64]storedBatch{}
			for _, b := range storedBatches(t, l) {
				before[b.base] = b
			}
			st, err := l.clean(newOffsetMap(1<<20), nil)
			if err != nil {
				t.Fatal(err)
			}
			if st.RecordsRemoved == 0 {
				t.Fatalf("cleaning removed nothing: %+v", st)
			}
			checkCompacted(t, l, w, st.CleanedTo, false)
			checkCleanedCodecs(t, l, before, tc.store)
			if codec, ok := tc.store.Codec(); ok {
				rebuilt := 0
				for _, b := range storedBatches(t, l) {
					if b.count < before[b.base].count && b.codec == codec {
						rebuilt++
					}
				}
				if rebuilt == 0 {
					t.Fatalf("no batch was rebuilt in %s", codec)
				}
			}
		})
	}
}

// Reconfigure changes the codec the next cleaning writes.
func TestReconfigureChangesCleanerCodec(t *testing.T) {
	clock := newFakeClock()
	cfg := compactConfig(clock)
	l, _ := openLog(t, t.TempDir(), cfg)
	defer l.Close()
	w := written{}
	for i := range 20 {
		w.appendTo(t, l, clock.Now().UnixMilli(), nil, kv{"hot", fmt.Appendf(nil, "h%d", i)}, kv{fmt.Sprint("own", i), nil})
	}
	mustFlush(t, l)
	cfg.Compression = StoreIn(CodecGzip)
	l.Reconfigure(cfg)
	before := map[int64]storedBatch{}
	for _, b := range storedBatches(t, l) {
		before[b.base] = b
	}
	st, err := l.clean(newOffsetMap(1<<20), nil)
	if err != nil {
		t.Fatal(err)
	}
	checkCompacted(t, l, w, st.CleanedTo, false)
	checkCleanedCodecs(t, l, before, cfg.Compression)
}

func TestParseCompression(t *testing.T) {
	for _, s := range []string{"producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"} {
		c, err := ParseCompression(s)
		if err != nil || c.String() != s {
			t.Errorf("ParseCompression(%q) = %v, %v", s, c, err)
		}
	}
	for _, s := range []string{"none", "", "ZSTD", "brotli"} {
		if _, err := ParseCompression(s); err == nil {
			t.Errorf("ParseCompression(%q) accepted", s)
		}
	}
	if c, ok := CompressionProducer.Codec(); ok {
		t.Errorf("producer names codec %s", c)
	}
	if c, ok := StoreIn(CodecNone).Codec(); !ok || c != CodecNone {
		t.Errorf("StoreIn(none).Codec() = %s, %v", c, ok)
	}
}
