package transcode

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// How a Protobuf message becomes an Avro record:
//
//	message, group            record named by the message's full name,
//	                          nested messages joined by _ (ex.Order_Line;
//	                          a message met again by reference to that
//	                          name); a message held by a field of itself,
//	                          at any depth, is that field's JSON text
//	field with presence       [null, T], default null: message fields,
//	(proto2 optional, proto3  oneof members (a oneof's members are fields
//	optional, oneof member)   of the message, at most one of them not null)
//	field without presence    T with the type's zero value as default
//	(proto3 scalar, required)
//	repeated T                array of T (elements never null), default []
//	map<K, V>                 map of V, keys written as text (decimal
//	                          numbers, true/false), default {}
//	bool, float, double       boolean, float, double
//	int32, sint32, sfixed32   int
//	uint32, fixed32, any      long; a uint64 or fixed64 above 2^63-1 does
//	64-bit integer            not fit and the record is refused
//	string, bytes             string, bytes
//	enum                      string: the value's name, or its number as
//	                          text for a number the enum does not name
//	google.protobuf.Timestamp long timestamp-micros (nanoseconds truncated)
//	google.protobuf.*Value    the wrapped scalar (nullable where the field
//	(wrappers)                has presence)
//	google.protobuf.Struct,   string holding the value's JSON text
//	Value, ListValue
//	a message with no fields  boolean, true (google.protobuf.Empty): an
//	                          empty record has no Parquet or Iceberg form,
//	                          and presence is all such a field says
//
// Unknown fields and extensions are not carried: the record's own schema
// does not name them.

const (
	wktTimestamp = "google.protobuf.Timestamp"
)

var wrappers = map[protoreflect.FullName]bool{
	"google.protobuf.DoubleValue": true, "google.protobuf.FloatValue": true,
	"google.protobuf.Int64Value": true, "google.protobuf.UInt64Value": true,
	"google.protobuf.Int32Value": true, "google.protobuf.UInt32Value": true,
	"google.protobuf.BoolValue": true, "google.protobuf.StringValue": true,
	"google.protobuf.BytesValue": true,
}

var jsonTexts = map[protoreflect.FullName]bool{
	"google.protobuf.Struct": true, "google.protobuf.Value": true, "google.protobuf.ListValue": true,
}

// Proto is a Protobuf message compiled for transcoding.
type Proto struct {
	md     protoreflect.MessageDescriptor
	schema string
	// presence holds, for each message the record may contain, which of
	// its fields are [null, T]: the descriptor works it out anew on every
	// call, which cost a tenth of a conversion.
	presence map[protoreflect.FullName][]bool
	// text holds, for each message mapped as a record, which of its fields
	// hold messages as JSON text (deriver.record).
	text map[protoreflect.FullName][]bool
	// required: some message has a proto2 required field, so decoding
	// checks that each is set (a walk that costs a fifth of a conversion
	// otherwise).
	required bool
}

// NewProto derives the Avro schema of message md.
func NewProto(md protoreflect.MessageDescriptor) (*Proto, error) {
	if special(md) {
		return nil, fmt.Errorf("message %s is a well-known type, not a record", md.FullName())
	}
	d := &deriver{defined: map[protoreflect.FullName]bool{}, open: map[protoreflect.FullName]bool{}, text: map[protoreflect.FullName][]bool{}}
	t := d.record(md)
	b, err := json.Marshal(t)
	if err != nil {
		return nil, err
	}
	p := &Proto{md: md, schema: string(b), presence: map[protoreflect.FullName][]bool{}, text: d.text}
	p.plan(md)
	return p, nil
}

// plan fills presence and required for md and the messages it reaches.
func (p *Proto) plan(md protoreflect.MessageDescriptor) {
	if _, ok := p.presence[md.FullName()]; ok {
		return
	}
	fs := md.Fields()
	pr := make([]bool, fs.Len())
	p.presence[md.FullName()] = pr
	for i := range pr {
		fd := fs.Get(i)
		pr[i] = presence(fd)
		if fd.Cardinality() == protoreflect.Required {
			p.required = true
		}
		if m := fd.Message(); m != nil {
			p.plan(m)
		}
	}
}

// Schema is the derived Avro schema's JSON.
func (p *Proto) Schema() string { return p.schema }

// Message is the message's full name.
func (p *Proto) Message() string { return string(p.md.FullName()) }

// special tells the well-known types that are not mapped as records.
func special(md protoreflect.MessageDescriptor) bool {
	n := md.FullName()
	return n == wktTimestamp || wrappers[n] || jsonTexts[n]
}

// deriver derives the Avro schema of a message. A message is defined as
// a record where first met, and named elsewhere. A message held, at any
// depth, by a field of itself (a tree) is the one thing a table's fixed
// columns cannot nest: that field holds it as its JSON text instead (in
// text, by message and field), as a JSON schema that holds itself does.
type deriver struct {
	defined, open map[protoreflect.FullName]bool
	text          map[protoreflect.FullName][]bool
}

// recordName is a message's Avro full name: its package as the namespace,
// and nested messages joined by _ (ex.Order.Line is ex.Order_Line). Avro
// reads the names of an enclosing record as a namespace for names without
// a dot, so a nested message named as a namespace would hide the records
// of a file without a package from every record inside it.
func recordName(md protoreflect.MessageDescriptor) string {
	pkg := string(md.ParentFile().Package())
	if pkg == "" {
		return typeName(strings.ReplaceAll(string(md.FullName()), ".", "_"))
	}
	return pkg + "." + typeName(strings.ReplaceAll(strings.TrimPrefix(string(md.FullName()), pkg+"."), ".", "_"))
}

func (d *deriver) record(md protoreflect.MessageDescriptor) any {
	name := md.FullName()
	if d.defined[name] {
		return recordName(md)
	}
	d.defined[name], d.open[name] = true, true
	defer delete(d.open, name)
	fs := md.Fields()
	text := make([]bool, fs.Len())
	d.text[name] = text
	r := record{Type: "record", Name: recordName(md), Fields: make([]field, 0, fs.Len())}
	for i := 0; i < fs.Len(); i++ {
		fd := fs.Get(i)
		vd := fd
		if fd.IsMap() {
			vd = fd.MapValue()
		}
		if m := vd.Message(); m != nil && d.open[m.FullName()] {
			text[i] = true
		}
		elem := d.elem(vd, text[i])
		f := field{Name: string(fd.Name())}
		switch {
		case fd.IsMap():
			f.Type, f.Default = avroMap{Type: "map", Values: elem}, json.RawMessage("{}")
		case fd.IsList():
			f.Type, f.Default = array{Type: "array", Items: elem}, json.RawMessage("[]")
		case presence(fd):
			f.Type, f.Default = nullable(elem), nullDefault
		default:
			f.Type, f.Default = elem, zeroDefault(fd)
			if text[i] {
				f.Default = nil
			}
		}
		r.Fields = append(r.Fields, f)
	}
	return r
}

// presence tells a singular field written as [null, T]. A proto2
// required field always has a value.
func presence(fd protoreflect.FieldDescriptor) bool {
	return fd.HasPresence() && fd.Cardinality() != protoreflect.Required
}

// elem is the Avro type of one value of fd (an element, for a repeated
// field); text: a message as its JSON text.
func (d *deriver) elem(fd protoreflect.FieldDescriptor, text bool) any {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return "boolean"
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return "int"
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind,
		protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return "long"
	case protoreflect.FloatKind:
		return "float"
	case protoreflect.DoubleKind:
		return "double"
	case protoreflect.StringKind, protoreflect.EnumKind:
		return "string"
	case protoreflect.BytesKind:
		return "bytes"
	}
	md := fd.Message()
	switch n := md.FullName(); {
	case text:
		return "string"
	case md.Fields().Len() == 0:
		return "boolean" // all an empty message says is that it is there
	case n == wktTimestamp:
		return timestampMicros
	case wrappers[n]:
		return d.elem(md.Fields().ByNumber(1), false)
	case jsonTexts[n]:
		return "string"
	}
	return d.record(md)
}

func zeroDefault(fd protoreflect.FieldDescriptor) json.RawMessage {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return json.RawMessage("false")
	case protoreflect.StringKind, protoreflect.BytesKind:
		return json.RawMessage(`""`)
	case protoreflect.EnumKind:
		b, _ := json.Marshal(enumName(fd.Enum(), 0))
		return b
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return json.RawMessage("0.0")
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return nil // a required message field: no default
	}
	return json.RawMessage("0")
}

func enumName(ed protoreflect.EnumDescriptor, n protoreflect.EnumNumber) string {
	if v := ed.Values().ByNumber(n); v != nil {
		return string(v.Name())
	}
	return strconv.Itoa(int(n))
}

// Decode parses a record's Protobuf bytes (after the envelope and message
// indexes) and appends the Avro encoding of the message to dst.
func (p *Proto) Decode(dst, b []byte) ([]byte, error) {
	m := dynamicpb.NewMessage(p.md)
	if err := (proto.UnmarshalOptions{RecursionLimit: maxDepth, AllowPartial: !p.required}).Unmarshal(b, m); err != nil {
		return nil, fmt.Errorf("not a %s: %v", p.md.FullName(), err)
	}
	return p.appendMessage(dst, m, 0)
}

func (p *Proto) appendMessage(dst []byte, m protoreflect.Message, depth int) ([]byte, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("messages nest more than %d deep", maxDepth)
	}
	md := m.Descriptor()
	fs := md.Fields()
	pr, tx := p.presence[md.FullName()], p.text[md.FullName()]
	var err error
	for i := 0; i < fs.Len(); i++ {
		fd := fs.Get(i)
		v := m.Get(fd)
		switch {
		case fd.IsMap():
			dst, err = p.appendMap(dst, fd, v.Map(), depth, tx[i])
		case fd.IsList():
			l := v.List()
			if l.Len() > 0 {
				dst = appendLong(dst, int64(l.Len()))
				for j := 0; j < l.Len() && err == nil; j++ {
					dst, err = p.appendValue(dst, fd, l.Get(j), depth, tx[i])
				}
			}
			dst = append(dst, 0)
		case pr[i]:
			if !m.Has(fd) {
				dst = append(dst, 0) // branch 0: null
				continue
			}
			dst = append(dst, 2) // branch 1
			dst, err = p.appendValue(dst, fd, v, depth, tx[i])
		default:
			dst, err = p.appendValue(dst, fd, v, depth, tx[i])
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fd.Name(), err)
		}
	}
	return dst, nil
}

func (p *Proto) appendMap(dst []byte, fd protoreflect.FieldDescriptor, mp protoreflect.Map, depth int, text bool) ([]byte, error) {
	if mp.Len() == 0 {
		return append(dst, 0), nil
	}
	keys := make([]protoreflect.MapKey, 0, mp.Len())
	mp.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
		keys = append(keys, k)
		return true
	})
	// Sorted, so that one message always gives the same bytes.
	slices.SortFunc(keys, func(a, b protoreflect.MapKey) int { return cmpKey(a.String(), b.String()) })
	dst = appendLong(dst, int64(len(keys)))
	var err error
	for _, k := range keys {
		dst = appendString(dst, k.String())
		if dst, err = p.appendValue(dst, fd.MapValue(), mp.Get(k), depth, text); err != nil {
			return nil, fmt.Errorf("[%s]: %w", k.String(), err)
		}
	}
	return append(dst, 0), nil
}

func cmpKey(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// appendValue appends one value of fd (an element, for a repeated field)
// by deriver.elem's mapping; text: a message as its JSON text.
func (p *Proto) appendValue(dst []byte, fd protoreflect.FieldDescriptor, v protoreflect.Value, depth int, text bool) ([]byte, error) {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return appendBool(dst, v.Bool()), nil
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return appendLong(dst, v.Int()), nil
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		u := v.Uint()
		if u > math.MaxInt64 {
			return nil, fmt.Errorf("%s value %d does not fit the long column", fd.Kind(), u)
		}
		return appendLong(dst, int64(u)), nil
	case protoreflect.FloatKind:
		return appendFloat(dst, float32(v.Float())), nil
	case protoreflect.DoubleKind:
		return appendDouble(dst, v.Float()), nil
	case protoreflect.StringKind:
		return appendString(dst, v.String()), nil
	case protoreflect.BytesKind:
		return appendBytes(dst, v.Bytes()), nil
	case protoreflect.EnumKind:
		return appendString(dst, enumName(fd.Enum(), v.Enum())), nil
	}
	m := v.Message()
	md := m.Descriptor()
	switch n := md.FullName(); {
	case text:
		b, err := protojson.Marshal(m.Interface())
		if err != nil {
			return nil, fmt.Errorf("%s as JSON: %v", n, err)
		}
		return appendBytes(dst, b), nil
	case md.Fields().Len() == 0:
		return appendBool(dst, true), nil
	case n == wktTimestamp:
		fs := md.Fields()
		sec, nanos := m.Get(fs.ByNumber(1)).Int(), m.Get(fs.ByNumber(2)).Int()
		if sec > math.MaxInt64/1_000_000-1 || sec < math.MinInt64/1_000_000+1 {
			return nil, fmt.Errorf("timestamp %d s is out of range", sec)
		}
		return appendLong(dst, sec*1e6+nanos/1e3), nil
	case wrappers[n]:
		inner := md.Fields().ByNumber(1)
		return p.appendValue(dst, inner, m.Get(inner), depth, false)
	case jsonTexts[n]:
		b, err := protojson.Marshal(m.Interface())
		if err != nil {
			return nil, fmt.Errorf("%s as JSON: %v", n, err)
		}
		return appendBytes(dst, b), nil
	}
	return p.appendMessage(dst, m, depth+1)
}
