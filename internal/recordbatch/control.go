package recordbatch

import (
	"encoding/binary"
	"fmt"
)

// Attribute bits of a transaction's batches (KIP-98). A transactional
// batch belongs to its producer's open transaction; a control batch holds
// one control record, the marker that ends it: commit or abort.
const (
	AttrTransactional = 0x10
	AttrControl       = 0x20
)

// Transactional says the batch belongs to a transaction.
func (h *Header) Transactional() bool { return h.Attributes&AttrTransactional != 0 }

// Control says the batch holds a control record (a transaction marker).
func (h *Header) Control() bool { return h.Attributes&AttrControl != 0 }

// Control record types: the key's second int16.
const (
	ControlAbort  = 0
	ControlCommit = 1
)

// MarkerBatch builds the control batch that ends producer id's
// transaction in one partition: one record, key (version 0, type) and
// value (version 0, coordinator epoch), uncompressed, with base offset 0
// for the log to assign. ts is the batch's timestamp in ms.
func MarkerBatch(producerID int64, epoch int16, commit bool, coordinatorEpoch int32, ts int64) []byte {
	typ := int16(ControlAbort)
	if commit {
		typ = ControlCommit
	}
	var key [4]byte
	binary.BigEndian.PutUint16(key[2:], uint16(typ))
	var val [6]byte
	binary.BigEndian.PutUint32(val[2:], uint32(coordinatorEpoch))
	// The record: attributes, timestamp delta, offset delta, key, value, no headers.
	rec := []byte{0}
	rec = binary.AppendVarint(rec, 0)
	rec = binary.AppendVarint(rec, 0)
	rec = binary.AppendVarint(rec, int64(len(key)))
	rec = append(rec, key[:]...)
	rec = binary.AppendVarint(rec, int64(len(val)))
	rec = append(rec, val[:]...)
	rec = binary.AppendVarint(rec, 0)
	b := make([]byte, HeaderSize, HeaderSize+binary.MaxVarintLen32+len(rec))
	b = binary.AppendVarint(b, int64(len(rec)))
	b = append(b, rec...)
	binary.BigEndian.PutUint32(b[OffLength:], uint32(len(b)-LengthPrefix))
	binary.BigEndian.PutUint32(b[OffLeaderEpoch:], 0xffffffff)
	b[OffMagic] = 2
	binary.BigEndian.PutUint16(b[OffAttributes:], AttrTransactional|AttrControl)
	binary.BigEndian.PutUint64(b[OffFirstTimestamp:], uint64(ts))
	binary.BigEndian.PutUint64(b[OffMaxTimestamp:], uint64(ts))
	binary.BigEndian.PutUint64(b[OffProducerID:], uint64(producerID))
	binary.BigEndian.PutUint16(b[OffProducerEpoch:], uint16(epoch))
	binary.BigEndian.PutUint32(b[OffBaseSequence:], 0xffffffff)
	binary.BigEndian.PutUint32(b[OffRecordCount:], 1)
	SetCRC(b)
	return b
}

// ControlType reads the type of the control record of a control batch
// whose bytes from the header on are in b (a marker is a few dozen bytes):
// ControlCommit or ControlAbort. Control batches are never compressed.
func ControlType(b []byte) (int16, error) {
	typ, _, err := ControlRecord(b)
	return typ, err
}

// ControlRecord reads a control batch's marker: its type and the epoch of
// the transaction coordinator that wrote it (the value's second field; -1
// when the value is missing or too short, which only a broken writer
// leaves, so the type still counts).
func ControlRecord(b []byte) (typ int16, coordinatorEpoch int32, err error) {
	if len(b) < HeaderSize+1 {
		return 0, -1, fmt.Errorf("%w: control batch of %d bytes holds no record", ErrCorrupt, len(b))
	}
	if c := BatchCodec(b); c != 0 {
		return 0, -1, fmt.Errorf("%w: control batch compressed with %s", ErrInvalidRecord, c)
	}
	pos := HeaderSize
	var vals [4]int64 // record length, timestamp delta, offset delta, key length
	for i := range vals {
		if i == 1 {
			pos++ // the record's attributes byte
			if pos > len(b) {
				break
			}
		}
		v, n := binary.Varint(b[pos:])
		if n <= 0 {
			return 0, -1, fmt.Errorf("%w: control record is cut short", ErrCorrupt)
		}
		vals[i], pos = v, pos+n
	}
	if vals[3] < 4 || pos+4 > len(b) {
		return 0, -1, fmt.Errorf("%w: control record key of %d bytes, need 4", ErrInvalidRecord, vals[3])
	}
	typ = int16(binary.BigEndian.Uint16(b[pos+2:]))
	if typ != ControlAbort && typ != ControlCommit {
		return 0, -1, fmt.Errorf("%w: control record type %d is neither commit nor abort", ErrInvalidRecord, typ)
	}
	coordinatorEpoch = -1
	if vals[3] > int64(len(b)-pos) {
		return typ, coordinatorEpoch, nil
	}
	pos += int(vals[3])
	if vlen, n := binary.Varint(b[pos:]); n > 0 && vlen >= 6 && int64(len(b)-pos-n) >= 6 {
		coordinatorEpoch = int32(binary.BigEndian.Uint32(b[pos+n+2:]))
	}
	return typ, coordinatorEpoch, nil
}
