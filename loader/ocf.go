package loader

import (
	"bufio"
	"bytes"
	"compress/flate"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"sort"

	"github.com/golang/snappy"
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
type ocfWriter struct {
	f     io.WriteCloser
	w     *bufio.Writer
	codec string
	sync  [16]byte

	block   bytes.Buffer // uncompressed records of the open block
	nblock  int64
	comp    bytes.Buffer
	deflate *flate.Writer

	records int64 // records written
	size    int64 // bytes written to the file so far (header and blocks)
	scratch [2 * binary.MaxVarintLen64]byte
}

// newOCF writes the file header: magic, metadata (schema, codec, and meta)
// and the sync marker.
func newOCF(f io.WriteCloser, schema, codec string, meta map[string]string) (*ocfWriter, error) {
	switch codec {
	case "", "null":
		codec = "null"
	case "deflate", "snappy":
	default:
		return nil, fmt.Errorf("avro codec %q: use one of null, deflate, snappy", codec)
	}
	o := &ocfWriter{f: f, w: bufio.NewWriterSize(f, 1<<20), codec: codec}
	rand.Read(o.sync[:])
	if codec == "deflate" {
		o.deflate, _ = flate.NewWriter(&o.comp, flate.DefaultCompression)
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
	var h bytes.Buffer
	h.WriteString("Obj\x01")
	h.Write(binary.AppendVarint(nil, int64(len(keys))))
	for _, k := range keys {
		h.Write(binary.AppendVarint(nil, int64(len(k))))
		h.WriteString(k)
		h.Write(binary.AppendVarint(nil, int64(len(all[k]))))
		h.WriteString(all[k])
	}
	h.WriteByte(0) // end of the metadata map
	h.Write(o.sync[:])
	n, err := o.w.Write(h.Bytes())
	o.size += int64(n)
	return o, err
}

// Append adds one record's Avro binary body.
func (o *ocfWriter) Append(body []byte) error {
	o.block.Write(body)
	o.nblock++
	o.records++
	if o.block.Len() >= blockTarget {
		return o.flushBlock()
	}
	return nil
}

// Size is the file's size once the open block is written, estimated with
// the block uncompressed: what rolling by size compares.
func (o *ocfWriter) Size() int64 { return o.size + int64(o.block.Len()) }

func (o *ocfWriter) flushBlock() error {
	if o.nblock == 0 {
		return nil
	}
	data := o.block.Bytes()
	switch o.codec {
	case "deflate":
		o.comp.Reset()
		o.deflate.Reset(&o.comp)
		o.deflate.Write(data)
		if err := o.deflate.Close(); err != nil {
			return err
		}
		data = o.comp.Bytes()
	case "snappy":
		// Avro's snappy framing: the compressed block, then the CRC-32 of
		// the uncompressed data, big-endian.
		enc := snappy.Encode(o.comp.AvailableBuffer()[:0], data)
		enc = binary.BigEndian.AppendUint32(enc, crc32.ChecksumIEEE(data))
		o.comp.Reset()
		data = enc
	}
	hdr := binary.AppendVarint(o.scratch[:0], o.nblock)
	hdr = binary.AppendVarint(hdr, int64(len(data)))
	n1, err := o.w.Write(hdr)
	if err != nil {
		return err
	}
	n2, err := o.w.Write(data)
	if err != nil {
		return err
	}
	n3, err := o.w.Write(o.sync[:])
	if err != nil {
		return err
	}
	o.size += int64(n1 + n2 + n3)
	o.block.Reset()
	o.nblock = 0
	return nil
}

// Close writes the last block and closes the file; the file is complete
// and durable when Close returns nil.
func (o *ocfWriter) Close() error {
	err := o.flushBlock()
	if err == nil {
		err = o.w.Flush()
	}
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// abandon closes the file without finishing it, after a failure.
func (o *ocfWriter) abandon() { o.f.Close() }
