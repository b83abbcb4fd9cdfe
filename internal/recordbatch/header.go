package recordbatch

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Byte layout of a Kafka RecordBatch v2 header. Everything from attributes
// to the end of the batch is covered by the CRC; the base offset, length,
// partition leader epoch and magic are not.
const (
	OffBaseOffset      = 0
	OffLength          = 8
	OffLeaderEpoch     = 12
	OffMagic           = 16
	OffCRC             = 17
	OffAttributes      = 21
	OffLastOffsetDelta = 23
	OffFirstTimestamp  = 27
	OffMaxTimestamp    = 35
	OffProducerID      = 43
	OffProducerEpoch   = 51
	OffBaseSequence    = 53
	OffRecordCount     = 57
	HeaderSize         = 61

	// LengthPrefix is the part of the header before the length field's
	// coverage starts: the base offset and the length itself.
	LengthPrefix = 12
	// MinLength is the smallest legal value of the length field: the
	// header after the prefix, with no records.
	MinLength = HeaderSize - LengthPrefix
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Checksum is the CRC32C of the batch at b as its CRC field should hold
// it: over every byte from the attributes to the end.
func Checksum(b []byte) uint32 { return crc32.Checksum(b[OffAttributes:], castagnoli) }

// UpdateChecksum adds p to a running CRC32C of a batch (0 to start, then
// its bytes from the attributes on), for a reader that has the batch in
// pieces.
func UpdateChecksum(crc uint32, p []byte) uint32 { return crc32.Update(crc, castagnoli, p) }

// SetCRC writes the batch's Checksum into its CRC field, after a change
// to the bytes it covers.
func SetCRC(b []byte) { binary.BigEndian.PutUint32(b[OffCRC:], Checksum(b)) }

// AttrLogAppendTime is the attributes bit saying the batch's MaxTimestamp,
// the broker's append time, is every record's timestamp
// (message.timestamp.type=LogAppendTime).
const AttrLogAppendTime = 0x08

// StampLogAppendTime marks the batch at b as timestamped by the broker at
// ts (AttrLogAppendTime, MaxTimestamp) and recomputes the CRC those bytes
// are under, as Kafka does for message.timestamp.type=LogAppendTime. It
// leaves a batch that is not magic 2 or whose CRC does not match alone and
// returns false: validation refuses it anyway, and a fresh CRC over a
// damaged batch would hide the damage from it. b must hold at least
// HeaderSize bytes.
func StampLogAppendTime(b []byte, ts int64) bool {
	if b[OffMagic] != 2 || binary.BigEndian.Uint32(b[OffCRC:]) != Checksum(b) {
		return false
	}
	attrs := binary.BigEndian.Uint16(b[OffAttributes:])
	binary.BigEndian.PutUint16(b[OffAttributes:], attrs|AttrLogAppendTime)
	binary.BigEndian.PutUint64(b[OffMaxTimestamp:], uint64(ts))
	SetCRC(b)
	return true
}

// Header is the part of a RecordBatch header the storage engine works with.
type Header struct {
	BaseOffset      int64
	Length          int32 // the length field: bytes after the 12-byte prefix
	Magic           int8
	CRC             uint32
	Attributes      int16 // codec, timestamp type, transactional and control bits
	LastOffsetDelta int32
	MaxTimestamp    int64
	ProducerID      int64
	ProducerEpoch   int16
	BaseSequence    int32
	RecordCount     int32
}

// FramedSize is the number of bytes the batch starting at b says it takes,
// as its length field gives it (LengthPrefix plus the length; negative or
// short for a damaged field, which the caller refuses). b must hold at
// least LengthPrefix bytes: a reader cutting a stream into batches needs
// no more to know where the next one starts.
func FramedSize(b []byte) int64 {
	return LengthPrefix + int64(int32(binary.BigEndian.Uint32(b[OffLength:])))
}

// Size is the number of bytes the whole batch takes in a segment.
func (h *Header) Size() int64 { return LengthPrefix + int64(h.Length) }

// NextOffset is the offset after the batch's last record.
func (h *Header) NextOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) + 1 }

// ParseHeader reads the header fields of the batch at b, which must hold
// at least HeaderSize bytes; nothing is checked.
func ParseHeader(b []byte) Header {
	_ = b[HeaderSize-1]
	return Header{
		BaseOffset:      int64(binary.BigEndian.Uint64(b[OffBaseOffset:])),
		Length:          int32(binary.BigEndian.Uint32(b[OffLength:])),
		Magic:           int8(b[OffMagic]),
		CRC:             binary.BigEndian.Uint32(b[OffCRC:]),
		Attributes:      int16(binary.BigEndian.Uint16(b[OffAttributes:])),
		LastOffsetDelta: int32(binary.BigEndian.Uint32(b[OffLastOffsetDelta:])),
		MaxTimestamp:    int64(binary.BigEndian.Uint64(b[OffMaxTimestamp:])),
		ProducerID:      int64(binary.BigEndian.Uint64(b[OffProducerID:])),
		ProducerEpoch:   int16(binary.BigEndian.Uint16(b[OffProducerEpoch:])),
		BaseSequence:    int32(binary.BigEndian.Uint32(b[OffBaseSequence:])),
		RecordCount:     int32(binary.BigEndian.Uint32(b[OffRecordCount:])),
	}
}

// CheckHeader applies the rules that need only the header: magic and record
// counts. The length and CRC are checked by the caller, which knows how many
// bytes it has.
//
// A batch in a segment may hold fewer records than its offsets span, down to
// none: the cleaner rewrites a batch with the records compaction keeps and
// keeps its last offset delta (and so its offsets), as Kafka does; and it
// keeps the header of an idempotent producer's newest batch even when no
// record survives, so that producer state can be rebuilt from the log.
// broker/log's Append is stricter (Validate): a producer's batch numbers its
// records 0..n-1.
func CheckHeader(h *Header) error {
	if h.Magic != 2 {
		return fmt.Errorf("%w: magic %d", ErrUnsupportedMagic, h.Magic)
	}
	if h.LastOffsetDelta < 0 {
		return fmt.Errorf("%w: last offset delta %d is negative", ErrCorrupt, h.LastOffsetDelta)
	}
	if h.RecordCount < 0 || h.RecordCount > h.LastOffsetDelta+1 {
		return fmt.Errorf("%w: record count %d does not fit last offset delta %d",
			ErrCorrupt, h.RecordCount, h.LastOffsetDelta)
	}
	return nil
}

// CheckFraming checks that b is exactly one RecordBatch v2 as a frame:
// its length field matches len(b), magic is 2, the CRC32C matches and the
// record count agrees with the last offset delta. Recovery trusts a batch
// that passes, since broker/log's Append checked its records before
// writing it.
func CheckFraming(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, fmt.Errorf("%w: %d bytes is shorter than the %d-byte batch header",
			ErrCorrupt, len(b), HeaderSize)
	}
	h := ParseHeader(b)
	if h.Length < MinLength {
		return h, fmt.Errorf("%w: length field %d is below the minimum %d", ErrCorrupt, h.Length, MinLength)
	}
	if int64(len(b)) != h.Size() {
		return h, fmt.Errorf("%w: length field %d says %d bytes but the batch has %d",
			ErrCorrupt, h.Length, h.Size(), len(b))
	}
	if err := CheckHeader(&h); err != nil {
		return h, err
	}
	if sum := Checksum(b); sum != h.CRC {
		return h, fmt.Errorf("%w: crc mismatch: header says %08x, bytes give %08x", ErrCorrupt, h.CRC, sum)
	}
	return h, nil
}

// Validate checks b as Append must before storing it: the framing
// (CheckFraming) and then every record inside, decompressed to at most
// limit bytes when the batch is compressed. The bytes are only read, never
// re-encoded.
func Validate(b []byte, limit int64) (Header, error) {
	h, _, err := ValidateRecords(b, limit, false)
	return h, err
}

// ValidateRecords is Validate that also says how many bytes
// the records decompressed to (0 for an uncompressed batch). With
// requireKey (a compacted log) a record without a key is refused:
// compaction keeps the last record of each key, and a keyless record has
// none to be kept by. Only compacted logs pay for that check (they skip
// fastWalk).
func ValidateRecords(b []byte, limit int64, requireKey bool) (Header, int64, error) {
	h, err := CheckFraming(b)
	if err != nil {
		return h, 0, err
	}
	if h.RecordCount != h.LastOffsetDelta+1 {
		return h, 0, fmt.Errorf("%w: last offset delta %d does not match record count %d",
			ErrCorrupt, h.LastOffsetDelta, h.RecordCount)
	}
	attrs := binary.BigEndian.Uint16(b[OffAttributes:])
	records := b[HeaderSize:]
	if codec := Codec(attrs & codecMask); codec != CodecNone {
		n, err := walkCompressed(codec, records, h.RecordCount, limit, requireKey)
		return h, n, err
	}
	if !requireKey && fastWalk(records, h.RecordCount) {
		return h, 0, nil
	}
	w := recordWalker{buf: records, requireKey: requireKey}
	return h, 0, w.walk(h.RecordCount)
}
