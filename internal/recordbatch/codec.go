package recordbatch

import (
	"encoding/binary"
	"fmt"
)

// Codec is a record batch's compression codec, as the low three bits of its
// attributes carry it.
type Codec uint8

// The codecs Kafka defines.
const (
	CodecNone   Codec = 0
	CodecGzip   Codec = 1
	CodecSnappy Codec = 2
	CodecLZ4    Codec = 3
	CodecZstd   Codec = 4
)

// codecMask takes a batch's codec out of its attributes.
const codecMask = 0x7

// String is the codec's name as Kafka's compression.type spells it.
func (c Codec) String() string {
	if c == CodecNone {
		return "uncompressed"
	}
	return c.name()
}

// BatchCodec is the codec of a RecordBatch v2; batch must hold at least the
// attributes.
func BatchCodec(batch []byte) Codec {
	return Codec(binary.BigEndian.Uint16(batch[OffAttributes:]) & codecMask)
}

// Codec is the batch's codec, from its attributes.
func (h *Header) Codec() Codec { return Codec(h.Attributes & codecMask) }

// name is the codec's name in errors and logs.
func (c Codec) name() string {
	if names := [...]string{"none", "gzip", "snappy", "lz4", "zstd"}; int(c) < len(names) {
		return names[c]
	}
	return fmt.Sprintf("codec-%d", c)
}
