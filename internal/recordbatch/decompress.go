package recordbatch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// A compressed batch is checked by decompressing its records through a
// fixed window (walkWindow) and walking them as they come out, so memory
// stays bounded whatever the batch claims to expand to; the limit on the
// decompressed size bounds the CPU a batch can cost. The exceptions are raw
// snappy, a single block decoded whole, and zstd's history window: both are
// held to the limit before anything is allocated. Decoders are pooled:
// building one costs far more than checking a batch.

// xerialMagic starts snappy data framed the way the Java client frames it:
// the magic, two 4-byte version numbers, then blocks of a 4-byte
// big-endian length and a raw snappy block.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const xerialHeaderSize = 16

const zstdMaxWindow = 8 << 20

var windowPool = sync.Pool{New: func() any { b := make([]byte, 0, walkWindow); return &b }}

// Buffers for whole snappy blocks, kept only while small enough that the
// pool does not pin a rare large batch's memory.
var (
	snappyBufPool sync.Pool
	xerialBufPool sync.Pool
	xerialPool    = sync.Pool{New: func() any { return new(xerialReader) }}
)

const maxPooledBuf = 1 << 20

func getBuf(p *sync.Pool) []byte {
	if b, ok := p.Get().(*[]byte); ok {
		return *b
	}
	return nil
}

func putBuf(p *sync.Pool, b []byte) {
	if b != nil && cap(b) <= maxPooledBuf {
		p.Put(&b)
	}
}

type gzipDecoder struct {
	src bytes.Reader
	zr  gzip.Reader
}

var gzipPool = sync.Pool{New: func() any { return new(gzipDecoder) }}

type lz4Decoder struct {
	src bytes.Reader
	zr  *lz4.Reader
}

var lz4Pool = sync.Pool{New: func() any { return &lz4Decoder{zr: lz4.NewReader(nil)} }}

type zstdDecoder struct {
	src bytes.Reader
	zr  *zstd.Decoder
}

// zstdPools holds one pool per decompression limit (in practice one): a
// decoder's memory ceiling is fixed when it is built.
var zstdPools sync.Map // int64 -> *sync.Pool

func zstdPool(limit int64) *sync.Pool {
	if p, ok := zstdPools.Load(limit); ok {
		return p.(*sync.Pool)
	}
	p, _ := zstdPools.LoadOrStore(limit, &sync.Pool{New: func() any {
		// Concurrency 1 decodes synchronously: no goroutines to leak when
		// the pool drops a decoder. The window bound is the history a
		// streamed frame may make the decoder keep: Kafka clients' zstd
		// uses 8 MiB at most; a frame with its size declared (what kgo and
		// sarama send) instead needs its size, held to the limit.
		zr, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxMemory(uint64(limit)), zstd.WithDecoderMaxWindow(zstdMaxWindow))
		if err != nil {
			panic(fmt.Sprintf("zstd decoder options: %v", err)) // the options are constants
		}
		return &zstdDecoder{zr: zr}
	}})
	return p.(*sync.Pool)
}

// xerialReader yields the blocks of xerial-framed snappy one at a time.
type xerialReader struct {
	rest  []byte // framed blocks not yet decoded
	out   []byte // decoded bytes not yet read
	buf   []byte // backing array of out
	limit int64  // bytes the blocks may still decode to
}

func (x *xerialReader) Read(p []byte) (int, error) {
	for len(x.out) == 0 {
		if len(x.rest) == 0 {
			return 0, io.EOF
		}
		if len(x.rest) < 4 {
			return 0, fmt.Errorf("snappy (xerial): %d bytes left, too few for a block length", len(x.rest))
		}
		n := int64(binary.BigEndian.Uint32(x.rest))
		if n > int64(len(x.rest)-4) {
			return 0, fmt.Errorf("snappy (xerial): block of %d bytes with %d left", n, len(x.rest)-4)
		}
		block := x.rest[4 : 4+n]
		x.rest = x.rest[4+n:]
		size, err := snappy.DecodedLen(block)
		if err != nil {
			return 0, fmt.Errorf("snappy (xerial): %w", err)
		}
		if int64(size) > x.limit {
			return 0, errTooLarge
		}
		x.limit -= int64(size)
		if cap(x.buf) < size {
			x.buf = make([]byte, size)
		}
		if x.out, err = snappy.Decode(x.buf[:size], block); err != nil {
			return 0, fmt.Errorf("snappy (xerial): %w", err)
		}
	}
	n := copy(p, x.out)
	x.out = x.out[n:]
	return n, nil
}

// walkCompressed decompresses the records of a batch with the given codec,
// at most limit bytes of them, and walks them; with requireKey a record
// without a key is refused (a compacted log's rule). It says how many bytes
// it decompressed (a request's allowance is charged them: broker/log's
// decompress_allowance.go).
func walkCompressed(codec Codec, data []byte, count int32, limit int64, requireKey bool) (int64, error) {
	src, whole, release, err := decompressor(codec, data, limit)
	if err != nil {
		return 0, err
	}
	defer release()
	var w recordWalker
	if whole != nil {
		if !requireKey && fastWalk(whole, count) {
			return int64(len(whole)), nil
		}
		w = recordWalker{buf: whole, requireKey: requireKey}
	} else {
		wp := windowPool.Get().(*[]byte)
		defer windowPool.Put(wp)
		w = recordWalker{window: (*wp)[:0], buf: (*wp)[:0], limit: limit, src: src, requireKey: requireKey}
	}
	err = w.walk(count)
	n := w.read
	if whole != nil {
		n = int64(len(whole))
	}
	if errors.Is(err, ErrInvalidRecord) {
		return n, fmt.Errorf("%s-compressed records: %w", codec.name(), err)
	}
	return n, err
}

// DecompressAll returns the records of a compressed batch decompressed, at
// most limit bytes of them, in a new slice (the cleaner's reader: it needs
// the bytes of the records it keeps).
func DecompressAll(codec Codec, data []byte, limit int64) ([]byte, error) {
	src, whole, release, err := decompressor(codec, data, limit)
	if err != nil {
		return nil, err
	}
	defer release()
	if whole != nil {
		return bytes.Clone(whole), nil
	}
	out, err := io.ReadAll(io.LimitReader(src, limit+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: decompressing %s records: %v", ErrCorrupt, codec.name(), err)
	case int64(len(out)) > limit:
		return nil, fmt.Errorf("%w: records decompress to more than %d bytes", ErrCorrupt, limit)
	}
	return out, nil
}

// decompressor returns a reader of the decompressed records, or for raw
// snappy (one block, decoded whole) the records themselves, and a release
// function that returns the decoder to its pool.
func decompressor(codec Codec, data []byte, limit int64) (src io.Reader, whole []byte, release func(), err error) {
	release = func() {}
	if len(data) == 0 {
		return nil, nil, release, fmt.Errorf("%w: %s-compressed batch has no compressed data", ErrCorrupt, codec.name())
	}
	switch codec {
	case CodecGzip:
		d := gzipPool.Get().(*gzipDecoder)
		release = func() { d.src.Reset(nil); gzipPool.Put(d) }
		d.src.Reset(data)
		if err := d.zr.Reset(&d.src); err != nil {
			return nil, nil, release, fmt.Errorf("%w: gzip: %v", ErrCorrupt, err)
		}
		return &d.zr, nil, release, nil
	case CodecLZ4:
		d := lz4Pool.Get().(*lz4Decoder)
		release = func() { d.src.Reset(nil); d.zr.Reset(nil); lz4Pool.Put(d) }
		d.src.Reset(data)
		d.zr.Reset(&d.src)
		return d.zr, nil, release, nil
	case CodecZstd:
		var h zstd.Header
		if err := h.Decode(data); err != nil {
			return nil, nil, release, fmt.Errorf("%w: zstd: %v", ErrCorrupt, err)
		}
		if h.HasFCS && h.FrameContentSize > uint64(limit) {
			return nil, nil, release, fmt.Errorf("%w: zstd frame says it decompresses to %d bytes, more than the limit of %d",
				ErrCorrupt, h.FrameContentSize, limit)
		}
		pool := zstdPool(limit)
		d := pool.Get().(*zstdDecoder)
		release = func() { d.src.Reset(nil); d.zr.Reset(nil); pool.Put(d) }
		d.src.Reset(data)
		if err := d.zr.Reset(&d.src); err != nil {
			return nil, nil, release, fmt.Errorf("%w: zstd: %v", ErrCorrupt, err)
		}
		return d.zr, nil, release, nil
	case CodecSnappy:
		if bytes.HasPrefix(data, xerialMagic) {
			if len(data) < xerialHeaderSize {
				return nil, nil, release, fmt.Errorf("%w: snappy (xerial): %d-byte header is cut short", ErrCorrupt, len(data))
			}
			x := xerialPool.Get().(*xerialReader)
			release = func() { x.rest, x.out = nil, nil; putBuf(&xerialBufPool, x.buf); x.buf = nil; xerialPool.Put(x) }
			*x = xerialReader{rest: data[xerialHeaderSize:], limit: limit, buf: getBuf(&xerialBufPool)}
			return x, nil, release, nil
		}
		size, err := snappy.DecodedLen(data)
		if err != nil {
			return nil, nil, release, fmt.Errorf("%w: snappy: %v", ErrCorrupt, err)
		}
		if int64(size) > limit {
			return nil, nil, release, fmt.Errorf("%w: snappy block says it decompresses to %d bytes, more than the limit of %d",
				ErrCorrupt, size, limit)
		}
		buf := getBuf(&snappyBufPool)
		out, err := snappy.Decode(buf[:cap(buf)], data)
		release = func() { putBuf(&snappyBufPool, out[:0]) }
		if err != nil {
			return nil, nil, release, fmt.Errorf("%w: snappy: %v", ErrCorrupt, err)
		}
		if out == nil {
			out = []byte{} // an empty block: callers tell "whole" from "stream" by nil
		}
		return nil, out, release, nil
	}
	return nil, nil, release, fmt.Errorf("%w: unknown compression codec %d", ErrCorrupt, codec)
}
