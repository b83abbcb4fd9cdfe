// Package transcode turns Protobuf and JSON Schema records into Avro: a
// writer schema compiles to an Avro schema derived from it (deterministic,
// so one registry schema always derives the same Avro schema), and each
// record to the Avro binary encoding of its value under that schema. What
// reads Avro (the header rule, container files, Parquet and Iceberg
// columns, the audit's counts) then reads these records unchanged.
//
// The mappings are in proto.go and json.go; docs/pipeline.md states them
// for users. A record that does not fit its schema or the derived one
// gets an error saying which field and why.
package transcode

import (
	"encoding/binary"
	"encoding/json"
	"math"
)

// maxDepth bounds how deep a value may nest (a recursive message, nested
// JSON), so that encoding recursion stays bounded whatever a record holds.
const maxDepth = 100

func appendLong(dst []byte, v int64) []byte {
	return binary.AppendUvarint(dst, uint64(v<<1)^uint64(v>>63))
}

func appendBytes(dst, b []byte) []byte {
	dst = appendLong(dst, int64(len(b)))
	return append(dst, b...)
}

func appendString(dst []byte, s string) []byte {
	dst = appendLong(dst, int64(len(s)))
	return append(dst, s...)
}

func appendBool(dst []byte, b bool) []byte {
	if b {
		return append(dst, 1)
	}
	return append(dst, 0)
}

func appendFloat(dst []byte, f float32) []byte {
	return binary.LittleEndian.AppendUint32(dst, math.Float32bits(f))
}

func appendDouble(dst []byte, f float64) []byte {
	return binary.LittleEndian.AppendUint64(dst, math.Float64bits(f))
}

// field is a field of a derived Avro record, in the order it is encoded.
type field struct {
	Name    string          `json:"name"`
	Type    any             `json:"type"`
	Default json.RawMessage `json:"default,omitempty"`
	Doc     string          `json:"doc,omitempty"`
}

type record struct {
	Type   string  `json:"type"` // "record"
	Name   string  `json:"name"`
	Fields []field `json:"fields"`
}

type array struct {
	Type  string `json:"type"` // "array"
	Items any    `json:"items"`
}

type avroMap struct {
	Type   string `json:"type"` // "map"
	Values any    `json:"values"`
}

type logical struct {
	Type        string `json:"type"`
	LogicalType string `json:"logicalType"`
}

var (
	timestampMicros = logical{Type: "long", LogicalType: "timestamp-micros"}
	dateType        = logical{Type: "int", LogicalType: "date"}
	nullDefault     = json.RawMessage("null")
)

// nullable is the union of null and t, null first, so that its default
// is null.
func nullable(t any) any { return []any{"null", t} }

// primitive names the Avro types no named type may be called.
var primitive = map[string]bool{"null": true, "boolean": true, "int": true, "long": true,
	"float": true, "double": true, "bytes": true, "string": true}

// typeName keeps a record's name (the part after its namespace) off the
// primitive types' names, which Avro refuses and one of its libraries
// crashes on: "long" is "long_".
func typeName(name string) string {
	if primitive[name] {
		return name + "_"
	}
	return name
}
