package log

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// compressor writes one codec's stream; xerial is snappy framed the way
// the Java client frames it.
type compressor struct {
	name  string
	codec int16
	new   func(w io.Writer) io.WriteCloser
}

var compressors = []compressor{
	{"gzip", codecGzip, func(w io.Writer) io.WriteCloser { z, _ := gzip.NewWriterLevel(w, gzip.BestSpeed); return z }},
	{"snappy", codecSnappy, func(w io.Writer) io.WriteCloser { return &rawSnappyWriter{w: w} }},
	{"snappy-xerial", codecSnappy, func(w io.Writer) io.WriteCloser { return newXerialWriter(w) }},
	{"lz4", codecLZ4, func(w io.Writer) io.WriteCloser { return lz4.NewWriter(w) }},
	{"zstd", codecZstd, func(w io.Writer) io.WriteCloser { z, _ := zstd.NewWriter(w); return z }},
}

// rawSnappyWriter encodes everything written as one snappy block, as kgo
// and librdkafka send snappy.
type rawSnappyWriter struct {
	w   io.Writer
	buf []byte
}

func (s *rawSnappyWriter) Write(p []byte) (int, error) {
	s.buf = append(s.buf, p...)
	return len(p), nil
}
func (s *rawSnappyWriter) Close() error {
	_, err := s.w.Write(snappy.Encode(nil, s.buf))
	return err
}

// xerialWriter frames 32 KiB snappy blocks behind the xerial header.
type xerialWriter struct {
	w     io.Writer
	block []byte
}

func newXerialWriter(w io.Writer) *xerialWriter {
	w.Write(append(bytes.Clone(xerialMagic), 0, 0, 0, 1, 0, 0, 0, 1))
	return &xerialWriter{w: w}
}

func (x *xerialWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		take := min(len(p), 32<<10-len(x.block))
		x.block = append(x.block, p[:take]...)
		p = p[take:]
		if len(x.block) == 32<<10 {
			x.flush()
		}
	}
	return n, nil
}

func (x *xerialWriter) flush() {
	enc := snappy.Encode(nil, x.block)
	x.w.Write(binary.BigEndian.AppendUint32(nil, uint32(len(enc))))
	x.w.Write(enc)
	x.block = x.block[:0]
}

func (x *xerialWriter) Close() error {
	if len(x.block) > 0 {
		x.flush()
	}
	return nil
}

func compress(c compressor, parts ...[]byte) []byte {
	var buf bytes.Buffer
	w := c.new(&buf)
	for _, p := range parts {
		w.Write(p)
	}
	w.Close()
	return buf.Bytes()
}

// TestCompressedRecordValidation: compressed records are checked like
// uncompressed ones once decompressed, and a payload that does not
// decompress is corrupt even with a valid CRC.
func TestCompressedRecordValidation(t *testing.T) {
	good := cat(encRecord(0, []byte("k"), []byte("first value")), encRecord(1, nil, bytes.Repeat([]byte("v"), 5000)))
	for _, c := range compressors {
		t.Run(c.name, func(t *testing.T) {
			payload := compress(c, good)
			if _, err := validateBatch(batchOf(payload, 2, c.codec), DefaultMaxDecompressedBytes); err != nil {
				t.Fatalf("refused a valid batch: %v", err)
			}
			refuse := func(what string, records []byte, count int32, want error) {
				t.Helper()
				_, err := validateBatch(batchOf(records, count, c.codec), DefaultMaxDecompressedBytes)
				if !errors.Is(err, want) {
					t.Fatalf("%s: error %v, want %v", what, err, want)
				}
				t.Logf("%s: %v", what, err)
			}
			refuse("offset delta 7", compress(c, encRecord(7, nil, []byte("v"))), 1, ErrInvalidRecord)
			refuse("count says 3", payload, 3, ErrInvalidRecord)
			refuse("count says 1", payload, 1, ErrInvalidRecord)
			refuse("trailing garbage inside the compressed data", compress(c, good, []byte{1, 2, 3}), 2, ErrInvalidRecord)
			refuse("garbage payload", bytes.Repeat([]byte{0x5a, 0xa5, 0x33}, 40), 2, ErrCorruptBatch)
			refuse("payload cut short", payload[:len(payload)*2/3], 2, ErrCorruptBatch)
			refuse("empty payload", nil, 1, ErrCorruptBatch)
			refuse("bytes after the compressed data", cat(payload, []byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4}), 2, ErrCorruptBatch)
		})
	}
}

func TestUnknownCodecRefused(t *testing.T) {
	for _, codec := range []int16{5, 6, 7} {
		if _, err := validateBatch(batchOf(encRecord(0, nil, []byte("v")), 1, codec), DefaultMaxDecompressedBytes); !errors.Is(err, ErrCorruptBatch) {
			t.Errorf("codec %d: %v, want ErrCorruptBatch", codec, err)
		}
	}
}

// bombRecord is one well-formed record whose value is n zero bytes: it
// compresses to almost nothing and looks valid until the end.
func bombRecord(n int) (head, value, tail []byte) {
	body := cat([]byte{0}, vi(0), vi(0), vi(-1), vi(int64(n)))
	head = cat(vi(int64(len(body)+n+1)), body)
	return head, make([]byte, n), vi(0)
}

// TestDecompressionBomb: a small batch whose records decompress beyond the
// limit is refused, and checking it costs a small, fixed amount of memory
// rather than the size it expands to (or the limit).
func TestDecompressionBomb(t *testing.T) {
	const expanded = 96 << 20 // above DefaultMaxDecompressedBytes
	head, value, tail := bombRecord(expanded)
	for _, c := range compressors {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "snappy" {
				// One snappy block holds at most ~21 times its size: its
				// declared length is refused before anything is decoded.
				head, value, tail = bombRecord(expanded)
			}
			bomb := batchOf(compress(c, head, value, tail), 1, c.codec)
			t.Logf("%d-byte batch expanding to %d MiB", len(bomb), expanded>>20)
			// Warm the decoder pools as a running broker has them.
			validateBatch(batchOf(compress(c, encRecord(0, nil, []byte("v"))), 1, c.codec), DefaultMaxDecompressedBytes)

			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := validateBatch(bomb, DefaultMaxDecompressedBytes)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrCorruptBatch) {
				t.Fatalf("bomb: %v, want ErrCorruptBatch", err)
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
	payload := enc.EncodeAll(cat(head, value, tail), nil)
	if _, err := validateBatch(batchOf(payload, 1, codecZstd), 1<<20); !errors.Is(err, ErrCorruptBatch) {
		t.Fatalf("%v, want ErrCorruptBatch", err)
	}
	if _, err := validateBatch(batchOf(payload, 1, codecZstd), 16<<20); err != nil {
		t.Fatalf("refused within the limit: %v", err)
	}
}

// TestDecompressedLimitIsExact: records of exactly the limit pass, one
// byte more does not.
func TestDecompressedLimitIsExact(t *testing.T) {
	head, value, tail := bombRecord(100_000)
	size := int64(len(head) + len(value) + len(tail))
	for _, c := range compressors {
		b := batchOf(compress(c, head, value, tail), 1, c.codec)
		if _, err := validateBatch(b, size); err != nil {
			t.Errorf("%s: refused records of exactly the limit: %v", c.name, err)
		}
		if _, err := validateBatch(b, size-1); !errors.Is(err, ErrCorruptBatch) {
			t.Errorf("%s: records one byte over the limit: %v, want ErrCorruptBatch", c.name, err)
		}
	}
}
