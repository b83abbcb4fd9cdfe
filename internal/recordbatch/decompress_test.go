package recordbatch

import (
	"bytes"
	"errors"
	"runtime"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/tributary-io/tributary/internal/recordbatch/rbtest"
)

// TestCompressedRecordValidation: compressed records are checked like
// uncompressed ones once decompressed, and a payload that does not
// decompress is corrupt even with a valid CRC.
func TestCompressedRecordValidation(t *testing.T) {
	good := rbtest.Cat(rbtest.Record(0, []byte("k"), []byte("first value")), rbtest.Record(1, nil, bytes.Repeat([]byte("v"), 5000)))
	for _, c := range rbtest.Compressors {
		t.Run(c.Name, func(t *testing.T) {
			payload := rbtest.Compress(c, good)
			if _, err := Validate(rbtest.Batch(payload, 2, c.Codec), testLimit); err != nil {
				t.Fatalf("refused a valid batch: %v", err)
			}
			refuse := func(what string, records []byte, count int32, want error) {
				t.Helper()
				_, err := Validate(rbtest.Batch(records, count, c.Codec), testLimit)
				if !errors.Is(err, want) {
					t.Fatalf("%s: error %v, want %v", what, err, want)
				}
				t.Logf("%s: %v", what, err)
			}
			refuse("offset delta 7", rbtest.Compress(c, rbtest.Record(7, nil, []byte("v"))), 1, ErrInvalidRecord)
			refuse("count says 3", payload, 3, ErrInvalidRecord)
			refuse("count says 1", payload, 1, ErrInvalidRecord)
			refuse("trailing garbage inside the compressed data", rbtest.Compress(c, good, []byte{1, 2, 3}), 2, ErrInvalidRecord)
			refuse("garbage payload", bytes.Repeat([]byte{0x5a, 0xa5, 0x33}, 40), 2, ErrCorrupt)
			refuse("payload cut short", payload[:len(payload)*2/3], 2, ErrCorrupt)
			refuse("empty payload", nil, 1, ErrCorrupt)
			refuse("bytes after the compressed data", rbtest.Cat(payload, []byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4}), 2, ErrCorrupt)
		})
	}
}

func TestUnknownCodecRefused(t *testing.T) {
	for _, codec := range []int16{5, 6, 7} {
		if _, err := Validate(rbtest.Batch(rbtest.Record(0, nil, []byte("v")), 1, codec), testLimit); !errors.Is(err, ErrCorrupt) {
			t.Errorf("codec %d: %v, want ErrCorrupt", codec, err)
		}
	}
}

// bombRecord is one well-formed record whose value is n zero bytes: it
// compresses to almost nothing and looks valid until the end.
func bombRecord(n int) (head, value, tail []byte) {
	body := rbtest.Cat([]byte{0}, vi(0), vi(0), vi(-1), vi(int64(n)))
	head = rbtest.Cat(vi(int64(len(body)+n+1)), body)
	return head, make([]byte, n), vi(0)
}

// TestDecompressionBomb: a small batch whose records decompress beyond the
// limit is refused, and checking it costs a small, fixed amount of memory
// rather than the size it expands to (or the limit).
func TestDecompressionBomb(t *testing.T) {
	const expanded = 96 << 20 // above testLimit
	head, value, tail := bombRecord(expanded)
	for _, c := range rbtest.Compressors {
		t.Run(c.Name, func(t *testing.T) {
			if c.Name == "snappy" {
				// One snappy block holds at most ~21 times its size: its
				// declared length is refused before anything is decoded.
				head, value, tail = bombRecord(expanded)
			}
			bomb := rbtest.Batch(rbtest.Compress(c, head, value, tail), 1, c.Codec)
			t.Logf("%d-byte batch expanding to %d MiB", len(bomb), expanded>>20)
			// Warm the decoder pools as a running broker has them.
			Validate(rbtest.Batch(rbtest.Compress(c, rbtest.Record(0, nil, []byte("v"))), 1, c.Codec), testLimit)

			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := Validate(bomb, testLimit)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("bomb: %v, want ErrCorrupt", err)
			}
			t.Logf("error text: %v", err)
			// zstd's history window (the encoder's default 8 MiB) and lz4's
			// 4 MiB blocks are the largest buffers a decoder may need.
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("allocated %d KiB while checking it", alloc>>10)
			if alloc > 20<<20 {
				t.Fatalf("checking the bomb allocated %d MiB", alloc>>20)
			}
		})
	}
}

// TestZstdDeclaredSizeRefused: a zstd frame that declares a content size
// above the limit is refused from its header, before any decoding.
func TestZstdDeclaredSizeRefused(t *testing.T) {
	enc, _ := zstd.NewWriter(nil)
	head, value, tail := bombRecord(8 << 20)
	payload := enc.EncodeAll(rbtest.Cat(head, value, tail), nil)
	if _, err := Validate(rbtest.Batch(payload, 1, int16(CodecZstd)), 1<<20); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("%v, want ErrCorrupt", err)
	}
	if _, err := Validate(rbtest.Batch(payload, 1, int16(CodecZstd)), 16<<20); err != nil {
		t.Fatalf("refused within the limit: %v", err)
	}
}

// TestDecompressedLimitIsExact: records of exactly the limit pass, one
// byte more does not.
func TestDecompressedLimitIsExact(t *testing.T) {
	head, value, tail := bombRecord(100_000)
	size := int64(len(head) + len(value) + len(tail))
	for _, c := range rbtest.Compressors {
		b := rbtest.Batch(rbtest.Compress(c, head, value, tail), 1, c.Codec)
		if _, err := Validate(b, size); err != nil {
			t.Errorf("%s: refused records of exactly the limit: %v", c.Name, err)
		}
		if _, err := Validate(b, size-1); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: records one byte over the limit: %v, want ErrCorrupt", c.Name, err)
		}
	}
}
