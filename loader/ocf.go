package loader

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"sort"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/flate"
)

// Codecs an Avro object container file can be written with: the ones every
// Avro reader (Hive, Spark, avro-tools) supports.
var Codecs = []string{"null", "deflate", "snappy"}

// blockTarget is how many uncompressed bytes go in one OCF block: large
// enough to compress well, small enough for readers to split and skip.
const blockTarget = 256 << 10

// ocfWriter writes an Avro object container file (Avro 1.x specification,
// "Object Container Files") whose records arrive already encoded: each is
// the Avro binary body of a Kafka record, written under the file's schema,
// copied byte for byte. Nothing is decoded and re-encoded on the way, so a
// file holds exactly what producers sent.
//
// A block is gathered behind room for its header (two varints), so that
// with the null codec it goes to the file as it was gathered, in one
// write, and a compressed block is compressed once into a buffer of the
// same shape: one copy of the data per codec, no per-record allocation.
//
// Why not a library's writer: measured on the same 50,000 page views
// (BenchmarkOCFWriter in ocf_bench_test.go, best of 3 on the shared 2-core
// machine; records/s a core and allocations per file):
//
//	codec    this writer     goavro.NewOCFWriter                 hamba ocf.Encoder.Write
//	                         values decoded   with the decode    (bodies as they are)
//	null     86.6M/s    9    1.86M/s  50,611  283k/s  1.17M      15.6M/s  1,300
//	deflate  1.24M/s   36    345k/s   50,971  211k/s  1.17M      659k/s   1,535
//	snappy   9.31M/s   13    1.14M/s  50,631  294k/s  1.17M      6.33M/s  1,312
//
// goavro's writer takes values in goavro's native form, so using it means
// decoding every record to re-encode it: 6 (deflate) to 300 (null) times
// slower than copying, and a million allocations a file. hamba's
// Encoder.Write takes encoded bodies like this one, but copies each block
// twice and allocates a compressor or an output buffer per block. This
// writer wins on every codec, so the loader keeps it; reading container
// files is left to the libraries (schema's package documentation says
// which does what). The writer before this one (a bytes.Buffer per
// block, then a bufio.Writer; the standard library's flate) did 17.8M/s,
// 523k/s and 8.62M/s, with 25, 51 and 38 allocations.
type ocfWriter struct {
	f     io.WriteCloser
	codec string
	sync  [16]byte

	block   []byte // blockRoom bytes of room, then the open block's records
	nblock  int64
	comp    []byte // blockRoom bytes of room, then a compressed block (made at the first)
	deflate *flate.Writer

	records int64 // records written
	size    int64 // bytes written to the file so far (header and blocks)
}

// The deflate level is Config.DeflateLevel, 6 by default: the standard
// library's default, at which klauspost's encoder writes files as small as
// the standard library's at under half the CPU (page views: 120 against
// 54 MB/s a core, both 0.43 of the input). Deflate loads are bound by it,
// which is why the level is the user's choice.

// blockRoom is the room kept before a block for its count and size.
const blockRoom = 2 * binary.MaxVarintLen64

// newOCF writes the file header: magic, metadata (schema, codec, and meta)
// and the sync marker. level is the deflate codec's (flate's levels; 0:
// DefaultDeflateLevel).
func newOCF(f io.WriteCloser, schema, codec string, level int, meta map[string]string) (*ocfWriter, error) {
	switch codec {
	case "", "null":
		codec = "null"
	case "deflate", "snappy":
	default:
		return nil, fmt.Errorf("avro codec %q: use one of null, deflate, snappy", codec)
	}
	// The block is made full size at once: every open file may fill one,
	// so growing it record by record would save nothing at worst. The
	// compressed block's buffer waits for the first block.
	o := &ocfWriter{f: f, codec: codec, block: make([]byte, blockRoom, blockRoom+blockTarget+blockTarget/8)}
	rand.Read(o.sync[:])
	if codec == "deflate" {
		if level == 0 {
			level = DefaultDeflateLevel
		}
		var err error
		if o.deflate, err = flate.NewWriter(nil, level); err != nil {
			return nil, fmt.Errorf("avro codec deflate: %w", err)
		}
	}
	all := map[string]string{"avro.schema": schema, "avro.codec": codec}
	for k, v := range meta {
		all[k] = v
	}
	keys := make([]string, 0, len(all))
	for k := range all {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := []byte("Obj\x01")
	h = binary.AppendVarint(h, int64(len(keys)))
	for _, k := range keys {
		h = binary.AppendVarint(h, int64(len(k)))
		h = append(h, k...)
		h = binary.AppendVarint(h, int64(len(all[k])))
		h = append(h, all[k]...)
	}
	h = append(h, 0) // end of the metadata map
	h = append(h, o.sync[:]...)
	n, err := o.f.Write(h)
	o.size += int64(n)
	return o, err
}

// Append adds one record's Avro binary body.
func (o *ocfWriter) Append(body []byte) error {
	o.block = append(o.block, body...)
	o.nblock++
	o.records++
	if len(o.block)-blockRoom >= blockTarget {
		return o.flushBlock()
	}
	return nil
}

// Size is the file's size once the open block is written, estimated with
// the block uncompressed: what rolling by size compares.
func (o *ocfWriter) Size() int64 { return o.size + int64(len(o.block)-blockRoom) }

func (o *ocfWriter) flushBlock() error {
	if o.nblock == 0 {
		return nil
	}
	framed := o.block // room, then the data
	switch data := o.block[blockRoom:]; o.codec {
	case "deflate":
		if cap(o.comp) < blockRoom {
			o.comp = make([]byte, blockRoom, blockRoom+len(data)/2)
		}
		b := bytes.NewBuffer(o.comp[:blockRoom])
		o.deflate.Reset(b)
		o.deflate.Write(data)
		if err := o.deflate.Close(); err != nil {
			return err
		}
		framed = b.Bytes()
	case "snappy":
		// Avro's snappy framing: the compressed block, then the CRC-32 of
		// the uncompressed data, big-endian. (The reference encoder: on
		// page views as fast as klauspost's s2.EncodeSnappy, 850 MB/s a
		// core, and 7% smaller.)
		if need := blockRoom + snappy.MaxEncodedLen(len(data)) + 4; cap(o.comp) < need {
			o.comp = make([]byte, need)
		}
		enc := snappy.Encode(o.comp[blockRoom:cap(o.comp)], data)
		framed = binary.BigEndian.AppendUint32(o.comp[:blockRoom+len(enc)], crc32.ChecksumIEEE(data))
	}
	if o.codec != "null" {
		o.comp = framed[:0] // keep what the buffer grew to
	}
	// The block's count and size go right before its data, in the room.
	var hdr [blockRoom]byte
	h := binary.AppendVarint(hdr[:0], o.nblock)
	h = binary.AppendVarint(h, int64(len(framed)-blockRoom))
	start := blockRoom - len(h)
	copy(framed[start:], h)
	framed = append(framed, o.sync[:]...)
	n, err := o.f.Write(framed[start:])
	o.size += int64(n)
	if err != nil {
		return err
	}
	o.block = o.block[:blockRoom]
	o.nblock = 0
	return nil
}

// Close writes the last block and closes the file; the file is complete
// and durable when Close returns nil.
func (o *ocfWriter) Close() error {
	err := o.flushBlock()
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// abandon closes the file without finishing it, after a failure.
func (o *ocfWriter) abandon() { o.f.Close() }
