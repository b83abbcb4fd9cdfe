package recordbatch

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Encode returns the batch with header's HeaderSize bytes and records
// encoded with codec, its length, codec and CRC set to match; every other
// header field is kept. ok is false when the batch would take more than
// maxSize bytes (re-encoding may grow a batch, to none most of all); it
// then holds at most maxSize bytes of memory before giving up.
func Encode(header, records []byte, codec Codec, maxSize int64) (batch []byte, ok bool, err error) {
	if codec > CodecZstd {
		return nil, false, fmt.Errorf("recompressing: unknown compression codec %d", codec)
	}
	out := &cappedBuffer{max: maxSize}
	out.Write(header[:HeaderSize])
	if err := compressInto(out, codec, records); err != nil {
		return nil, false, err
	}
	if out.over {
		return nil, false, nil
	}
	nb := out.Bytes()
	binary.BigEndian.PutUint32(nb[OffLength:], uint32(len(nb)-LengthPrefix))
	attrs := binary.BigEndian.Uint16(nb[OffAttributes:])
	binary.BigEndian.PutUint16(nb[OffAttributes:], attrs&^codecMask|uint16(codec))
	SetCRC(nb)
	return nb, true, nil
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
