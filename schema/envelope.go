package schema

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The envelope is Confluent's wire format, so that records written by our
// serializer can be read by any Confluent-compatible deserializer and the
// other way round:
//
//	byte 0     magic, always 0
//	bytes 1-4  schema id, big-endian, as assigned by the registry
//	bytes 5-   the Avro binary encoding of the value under that schema
const (
	// Magic is the first byte of every envelope.
	Magic byte = 0
	// HeaderSize is the number of bytes before the Avro body.
	HeaderSize = 5
)

// Errors returned for malformed envelopes. They are wrapped with detail
// (the byte found, the id, the decoder's complaint); test with errors.Is.
var (
	// ErrWrongMagic means byte 0 is not 0: the value was not written by a
	// Confluent-format serializer (plain JSON, a string, another framing).
	ErrWrongMagic = errors.New("schema: envelope has wrong magic byte")
	// ErrTruncated means the value is shorter than the 5-byte header.
	ErrTruncated = errors.New("schema: envelope truncated before the end of its 5-byte header")
	// ErrUnknownID means the registry has no schema with the envelope's id:
	// the value comes from another registry, or its schema was hard-deleted.
	ErrUnknownID = errors.New("schema: unknown schema id")
	// ErrBadBody means the body does not decode under the writer schema
	// named by the id: it is cut short or has bytes left over; for a
	// Protobuf or JSON schema, it is not that message or does not match
	// the schema.
	ErrBadBody = errors.New("schema: record body does not match its writer schema")
	// ErrUnsupportedSchema means the writer schema is one the registry
	// stores but this package cannot read records of: a Protobuf or JSON
	// schema with no Avro form (a JSON schema whose root has no
	// properties), or references it cannot resolve. The record may be
	// whole, but cannot be read here. The error says why.
	ErrUnsupportedSchema = errors.New("schema: writer schema cannot be read as Avro")
)

// AppendEnvelope appends the 5-byte envelope header for schema id to dst.
// The caller appends the Avro body after it.
func AppendEnvelope(dst []byte, id int) []byte {
	dst = append(dst, Magic)
	return binary.BigEndian.AppendUint32(dst, uint32(id))
}

// DecodeEnvelope splits b into the writer schema id and the Avro body. It
// checks only the framing; the body is checked when it is decoded. The body
// aliases b.
func DecodeEnvelope(b []byte) (id int, body []byte, err error) {
	// The magic byte is checked first: a short value that does not start
	// with 0 was never an envelope, which is the more useful thing to say.
	if len(b) > 0 && b[0] != Magic {
		return 0, nil, fmt.Errorf("%w: got 0x%02x, want 0x00 (is the producer using a schema-registry serializer?)", ErrWrongMagic, b[0])
	}
	if len(b) < HeaderSize {
		return 0, nil, fmt.Errorf("%w: got %d bytes", ErrTruncated, len(b))
	}
	// Ids are positive int32s in the registry; a value above MaxInt32 can
	// only be garbage and would be negative as an int on 32-bit platforms.
	u := binary.BigEndian.Uint32(b[1:HeaderSize])
	if u > 1<<31-1 {
		return 0, nil, fmt.Errorf("%w: id %d is out of the registry's range", ErrUnknownID, u)
	}
	return int(u), b[HeaderSize:], nil
}
