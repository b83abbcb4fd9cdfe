// Package rbtest makes record batches for tests the way Kafka's clients
// make them: records encoded with kmsg, batches with any count and codec
// (every codec, snappy both raw and xerial-framed), length and CRC fixed.
package rbtest

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Record encodes a record with kmsg, as a client would.
func Record(delta int32, key, value []byte, headers ...kmsg.Header) []byte {
	r := kmsg.Record{OffsetDelta: delta, Key: key, Value: value, Headers: headers}
	r.Length = int32(len(r.AppendTo(nil)) - 1)
	return r.AppendTo(nil)
}

// Batch wraps already encoded (and possibly compressed) records in a
// batch whose header claims count records and the given codec, with a
// correct length and CRC: only the records can be wrong.
func Batch(records []byte, count int32, codec int16) []byte {
	rb := kmsg.RecordBatch{
		Magic: 2, Attributes: codec, LastOffsetDelta: count - 1, FirstTimestamp: 1000, MaxTimestamp: 1000,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: count, Records: records,
	}
	return FixBatch(rb.AppendTo(nil))
}

// FixBatch recomputes the length field and CRC of b, as a producer
// would after building it.
func FixBatch(b []byte) []byte {
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// Compressor writes one codec's stream; xerial is snappy framed the way
// the Java client frames it.
type Compressor struct {
	Name  string
	Codec int16 // as a batch's attributes carry it
	New   func(w io.Writer) io.WriteCloser
}

// Compressors are every codec Kafka clients send, one way each.
var Compressors = []Compressor{
	{"gzip", 1, func(w io.Writer) io.WriteCloser { z, _ := gzip.NewWriterLevel(w, gzip.BestSpeed); return z }},
	{"snappy", 2, func(w io.Writer) io.WriteCloser { return &rawSnappyWriter{w: w} }},
	{"snappy-xerial", 2, func(w io.Writer) io.WriteCloser { return newXerialWriter(w) }},
	{"lz4", 3, func(w io.Writer) io.WriteCloser { return lz4.NewWriter(w) }},
	{"zstd", 4, func(w io.Writer) io.WriteCloser { z, _ := zstd.NewWriter(w); return z }},
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
	w.Write(append([]byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}, 0, 0, 0, 1, 0, 0, 0, 1))
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

// Compress is parts written through c, as a producer compresses a
// batch's records.
func Compress(c Compressor, parts ...[]byte) []byte {
	var buf bytes.Buffer
	w := c.New(&buf)
	for _, p := range parts {
		w.Write(p)
	}
	w.Close()
	return buf.Bytes()
}

// Cat is records (or any parts) one after another.
func Cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
