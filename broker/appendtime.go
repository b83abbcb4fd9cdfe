package broker

// Produce's LogAppendTime stamping (produce.go), for topics with
// message.timestamp.type=LogAppendTime.

import (
	"encoding/binary"
	"hash/crc32"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// stampLogAppendTime marks a RecordBatch v2 as timestamped by the broker
// (attribute bit 3) with ts as its MaxTimestamp, which consumers then read
// as every record's timestamp, and recomputes the CRC those bytes are
// under, as Kafka does for message.timestamp.type=LogAppendTime. The caller
// has checked that batch holds at least a whole header.
func stampLogAppendTime(batch []byte, ts int64) {
	if batch[16] != 2 || binary.BigEndian.Uint32(batch[17:]) != crc32.Checksum(batch[21:], castagnoli) {
		// Refused by the log's validation anyway; a fresh CRC over a
		// damaged batch would hide the damage from it.
		return
	}
	attrs := binary.BigEndian.Uint16(batch[21:])
	binary.BigEndian.PutUint16(batch[21:], attrs|0x08)
	binary.BigEndian.PutUint64(batch[35:], uint64(ts))
	binary.BigEndian.PutUint32(batch[17:], crc32.Checksum(batch[21:], castagnoli))
}
