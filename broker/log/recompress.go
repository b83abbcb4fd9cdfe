package log

import (
	"errors"
	"fmt"

	"github.com/tributary-io/tributary/internal/recordbatch"
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
	h, err := recordbatch.CheckFraming(batch)
	if err != nil {
		return nil, err
	}
	if recordbatch.BatchCodec(batch) == to {
		return batch, nil
	}
	return l.reencode(batch, &h, to, maxSize)
}

// reencode is Recompress of a batch whose framing is checked and whose
// codec is not to.
func (l *Log) reencode(batch []byte, h *recordbatch.Header, to Codec, maxSize int64) ([]byte, error) {
	from := recordbatch.BatchCodec(batch)
	if to > CodecZstd {
		return nil, fmt.Errorf("recompressing: unknown compression codec %d", to)
	}
	records := batch[recordbatch.HeaderSize:]
	if from != CodecNone && h.RecordCount > 0 {
		var release func()
		var err error
		// Under the broker-wide budget (recordbatch/budget.go).
		records, release, err = recordbatch.DecompressBudgeted(l.cfg.DecompressMemory, from, records, l.cfg.MaxDecompressedBytes, l.done)
		if errors.Is(err, recordbatch.ErrCanceled) {
			return nil, ErrClosed
		}
		if err != nil {
			return nil, err
		}
		defer release()
	}
	nb, ok, err := recordbatch.Encode(batch[:recordbatch.HeaderSize], records, to, maxSize)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: re-encoded with %s (the topic's compression.type) the batch takes more than %d bytes", ErrBatchTooLarge, to, maxSize)
	}
	return nb, nil
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
