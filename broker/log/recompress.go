package log

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Recompression serves a topic whose compression.type names a codec: a
// batch arriving with another codec is stored re-encoded with the topic's,
// as Kafka does. Only the records' bytes change codec; every header field
// (offsets, timestamps, producer id, epoch and sequence, record count) is
// kept, so idempotent producers' retries are still recognised, and the CRC
// is computed anew over the new bytes. The records themselves are not
// rewritten: the decompressed record bytes are exactly what the producer
// sent, so validating the new batch (Append does) validates the producer's
// records.

// Codec is a record batch's compression codec, as the low three bits of its
// attributes carry it.
type Codec uint8

const (
	CodecNone   Codec = codecNone
	CodecGzip   Codec = codecGzip
	CodecSnappy Codec = codecSnappy
	CodecLZ4    Codec = codecLZ4
	CodecZstd   Codec = codecZstd
)

// String is the codec's name as Kafka's compression.type spells it.
func (c Codec) String() string {
	if c == CodecNone {
		return "uncompressed"
	}
	return codecName(int(c))
}

// BatchCodec is the codec of a RecordBatch v2; batch must hold at least the
// attributes.
func BatchCodec(batch []byte) Codec {
	return Codec(binary.BigEndian.Uint16(batch[offAttributes:]) & codecMask)
}

// ErrBatchTooLarge is returned by Recompress when the re-encoded batch
// would exceed the size the caller allows (max.message.bytes).
var ErrBatchTooLarge = errors.New("record batch too large")

// Recompress returns batch with its records re-encoded with codec to, in a
// new slice, or batch itself if it already uses to. It checks the batch's
// framing and CRC first, so a damaged batch is refused rather than given a
// fresh CRC; the records are decompressed to at most the log's
// MaxDecompressedBytes. A result longer than maxSize bytes is refused with
// ErrBatchTooLarge (recompression may grow a batch, to none most of all).
func (l *Log) Recompress(batch []byte, to Codec, maxSize int64) ([]byte, error) {
	h, err := checkFraming(batch)
	if err != nil {
		return nil, err
	}
	if BatchCodec(batch) == to {
		return batch, nil
	}
	return l.reencode(batch, &h, to, maxSize)
}

// reencode is Recompress of a batch whose framing is checked and whose
// codec is not to.
func (l *Log) reencode(batch []byte, h *batchHeader, to Codec, maxSize int64) ([]byte, error) {
	from := BatchCodec(batch)
	if to > CodecZstd {
		return nil, fmt.Errorf("recompressing: unknown compression codec %d", to)
	}
	records := batch[batchHeaderSize:]
	if from != CodecNone && h.recordCount > 0 {
		var release func()
		var err error
		// Under the broker-wide budget (decompress_budget.go).
		if records, release, err = l.decompressBudgeted(int(from), records); err != nil {
			return nil, err
		}
		defer release()
	}
	out := &cappedBuffer{max: maxSize}
	out.Write(batch[:batchHeaderSize])
	if err := compressInto(out, to, records); err != nil {
		return nil, err
	}
	if out.over {
		return nil, fmt.Errorf("%w: re-encoded with %s (the topic's compression.type) the batch takes more than %d bytes", ErrBatchTooLarge, to, maxSize)
	}
	nb := out.Bytes()
	binary.BigEndian.PutUint32(nb[offLength:], uint32(len(nb)-lengthPrefix))
	attrs := binary.BigEndian.Uint16(nb[offAttributes:])
	binary.BigEndian.PutUint16(nb[offAttributes:], attrs&^codecMask|uint16(to))
	binary.BigEndian.PutUint32(nb[offCRC:], crc32.Checksum(nb[offAttributes:], castagnoli))
	return nb, nil
}

// cappedBuffer is a bytes.Buffer that stops taking bytes once it holds
// more than max, so a batch that grows too large costs at most max bytes
// of memory before it is refused.
type cappedBuffer struct {
	bytes.Buffer
	max  int64
	over bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if b.over || int64(b.Len()+len(p)) > b.max {
		b.over = true
		return len(p), nil // the caller checks over once at the end
	}
	return b.Buffer.Write(p)
}

// Encoders are pooled, as decoders are: building one costs more than
// compressing a batch. Levels are the libraries' defaults, which are
// Kafka's defaults too (gzip 6, lz4 fast, zstd 3).
var (
	gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}
	lz4Writers  = sync.Pool{New: func() any {
		w := lz4.NewWriter(nil)
		// 64 KiB blocks, as Kafka's Java client writes them: the default
		// 4 MiB blocks would make every pooled writer hold megabytes.
		if err := w.Apply(lz4.BlockSizeOption(lz4.Block64Kb)); err != nil {
			panic(fmt.Sprintf("lz4 writer options: %v", err)) // the options are constants
		}
		return w
	}}
	// One zstd encoder serves every goroutine: EncodeAll is safe for
	// concurrent use and keeps a state per concurrent caller. A whole-buffer
	// encoding declares its content size, which the readers' decoders use
	// to size their window instead of zstd's 8 MiB default.
	zstdEncoder = sync.OnceValue(func() *zstd.Encoder {
		enc, err := zstd.NewWriter(nil)
		if err != nil {
			panic(fmt.Sprintf("zstd encoder options: %v", err)) // the options are constants
		}
		return enc
	})
)

// compressInto appends records encoded with codec to out.
func compressInto(out *cappedBuffer, codec Codec, records []byte) error {
	switch codec {
	case CodecNone:
		out.Write(records)
	case CodecGzip:
		w := gzipWriters.Get().(*gzip.Writer)
		defer gzipWriters.Put(w)
		w.Reset(out)
		w.Write(records) // out never fails
		if err := w.Close(); err != nil {
			return fmt.Errorf("gzip: %w", err)
		}
		w.Reset(nil)
	case CodecLZ4:
		w := lz4Writers.Get().(*lz4.Writer)
		defer lz4Writers.Put(w)
		w.Reset(out)
		if _, err := w.Write(records); err != nil {
			return fmt.Errorf("lz4: %w", err)
		}
		if err := w.Close(); err != nil {
			return fmt.Errorf("lz4: %w", err)
		}
		w.Reset(nil)
	case CodecSnappy:
		// Raw snappy, as franz-go and librdkafka write it; every Kafka
		// client reads it (the Java client's xerial reader falls back to
		// it when the xerial header is missing).
		out.Write(s2.EncodeSnappy(nil, records))
	case CodecZstd:
		out.Write(zstdEncoder().EncodeAll(records, nil))
	}
	return nil
}

// Compression is a topic's compression.type: either CompressionProducer,
// the zero value, which keeps every batch in the codec its producer chose,
// or StoreIn(codec), which stores every batch in that one codec.
type Compression uint8

// CompressionProducer keeps each batch's own codec (compression.type=producer).
const CompressionProducer Compression = 0

// StoreIn is the compression type that stores every batch in codec.
func StoreIn(codec Codec) Compression { return Compression(codec) + 1 }

// Codec is the codec every batch is stored in, or ok false for
// CompressionProducer.
func (c Compression) Codec() (codec Codec, ok bool) {
	if c == CompressionProducer {
		return 0, false
	}
	return Codec(c - 1), true
}

// String is the compression type as Kafka's compression.type spells it.
func (c Compression) String() string {
	if codec, ok := c.Codec(); ok {
		return codec.String()
	}
	return "producer"
}

// ParseCompression reads a compression.type value.
func ParseCompression(s string) (Compression, error) {
	if s == "producer" {
		return CompressionProducer, nil
	}
	for c := CodecNone; c <= CodecZstd; c++ {
		if s == c.String() {
			return StoreIn(c), nil
		}
	}
	return 0, fmt.Errorf("compression.type=%s: use producer, uncompressed, gzip, snappy, lz4 or zstd", s)
}

// MarshalText is String, so that a Compression can be a command-line flag.
func (c Compression) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText is ParseCompression.
func (c *Compression) UnmarshalText(b []byte) error {
	v, err := ParseCompression(string(b))
	if err == nil {
		*c = v
	}
	return err
}
