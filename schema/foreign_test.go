package schema_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/tributary-io/tributary/schema"
	"github.com/tributary-io/tributary/schema/internal/pbschema"
	"github.com/tributary-io/tributary/schema/internal/srtest"
)

// eventProto defines its header before the event, as files commonly do:
// the event is message index [1], and the root message (what a table of
// the schema holds).
const eventProto = `syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";
import "google/protobuf/struct.proto";
import "google/protobuf/empty.proto";
message Header { int64 time = 1; string server = 2; }
message Order {
  enum State { NEW = 0; PAID = 1; }
  message Line { string sku = 1; uint32 qty = 2; }
  Header header = 1;
  string id = 2;
  repeated Line lines = 3;
  map<int32, string> notes = 4;
  oneof pay { string card = 5; int64 voucher = 6; }
  State state = 7;
  google.protobuf.Timestamp placed = 8;
  google.protobuf.Int32Value discount = 9;
  google.protobuf.Struct extra = 10;
  optional double weight = 11;
  uint64 big = 12;
  bytes blob = 13;
  repeated string tags = 14;
  float ratio = 15;
  bool gift = 16;
  sint32 delta = 17;
  oneof ack { google.protobuf.Empty none = 18; string note = 19; }
  repeated google.protobuf.Empty pings = 20;
}
`

// protoEnvelope frames a Protobuf body as Confluent's serializers do.
func protoEnvelope(id int, indexes []int, body []byte) []byte {
	b := schema.AppendEnvelope(nil, id)
	if len(indexes) == 1 && indexes[0] == 0 {
		b = append(b, 0)
	} else {
		b = binary.AppendVarint(b, int64(len(indexes)))
		for _, i := range indexes {
			b = binary.AppendVarint(b, int64(i))
		}
	}
	return append(b, body...)
}

func orderMessage(t *testing.T) (protoreflect.MessageDescriptor, *dynamicpb.Message) {
	fd, err := pbschema.Compile(eventProto, nil)
	if err != nil {
		t.Fatal(err)
	}
	md := fd.Messages().ByName("Order")
	m := dynamicpb.NewMessage(md)
	set := func(m *dynamicpb.Message, name string, v protoreflect.Value) {
		m.Set(m.Descriptor().Fields().ByName(protoreflect.Name(name)), v)
	}
	h := dynamicpb.NewMessage(fd.Messages().ByName("Header"))
	set(h, "time", protoreflect.ValueOfInt64(1_700_000_000_123))
	set(h, "server", protoreflect.ValueOfString("web-1"))
	set(m, "header", protoreflect.ValueOfMessage(h))
	set(m, "id", protoreflect.ValueOfString("o-1"))
	lines := m.Mutable(md.Fields().ByName("lines")).List()
	for _, sku := range []string{"a", "b"} {
		l := dynamicpb.NewMessage(md.Messages().ByName("Line"))
		set(l, "sku", protoreflect.ValueOfString(sku))
		set(l, "qty", protoreflect.ValueOfUint32(3))
		lines.Append(protoreflect.ValueOfMessage(l))
	}
	notes := m.Mutable(md.Fields().ByName("notes")).Map()
	notes.Set(protoreflect.ValueOfInt32(7).MapKey(), protoreflect.ValueOfString("seven"))
	set(m, "voucher", protoreflect.ValueOfInt64(99))
	set(m, "state", protoreflect.ValueOfEnum(1))
	set(m, "placed", protoreflect.ValueOfMessage(dynamicFrom(t, md.Fields().ByName("placed"), timestamppb.New(time.UnixMicro(1_700_000_000_123_456).Add(789)))))
	set(m, "discount", protoreflect.ValueOfMessage(dynamicFrom(t, md.Fields().ByName("discount"), wrapperspb.Int32(5))))
	st, _ := structpb.NewStruct(map[string]any{"k": "v"})
	set(m, "extra", protoreflect.ValueOfMessage(dynamicFrom(t, md.Fields().ByName("extra"), st)))
	set(m, "big", protoreflect.ValueOfUint64(1<<40))
	set(m, "blob", protoreflect.ValueOfBytes([]byte{0, 1}))
	set(m, "ratio", protoreflect.ValueOfFloat32(0.5))
	set(m, "gift", protoreflect.ValueOfBool(true))
	set(m, "delta", protoreflect.ValueOfInt32(-3))
	set(m, "none", protoreflect.ValueOfMessage(dynamicpb.NewMessage(md.Fields().ByName("none").Message())))
	pings := m.Mutable(md.Fields().ByName("pings")).List()
	pings.Append(protoreflect.ValueOfMessage(dynamicpb.NewMessage(md.Fields().ByName("pings").Message())))
	return md, m
}

// dynamicFrom copies a generated well-known message into the dynamic type
// of field fd.
func dynamicFrom(t *testing.T, fd protoreflect.FieldDescriptor, m proto.Message) *dynamicpb.Message {
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	d := dynamicpb.NewMessage(fd.Message())
	if err := proto.Unmarshal(b, d); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestProtobufRecordsReadAsAvro: a Protobuf record, whichever message of
// its schema it is, reads as the value of the Avro schema derived from
// its message, by the mapping the transcode package states, and its
// header time is found by the header rule.
func TestProtobufRecordsReadAsAvro(t *testing.T) {
	reg := srtest.Start(t)
	ctx := context.Background()
	ss, err := reg.Client.CreateSchema(ctx, "orders-value", sr.Schema{Schema: eventProto, Type: sr.TypeProtobuf})
	if err != nil {
		t.Fatal(err)
	}
	_, m := orderMessage(t)
	body, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	de, err := schema.NewDeserializer(reg.Client, schema.DeserializerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := de.Deserialize(ctx, protoEnvelope(ss.ID, []int{1}, body))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"header": map[string]any{"shop.Header": map[string]any{"time": int64(1_700_000_000_123), "server": "web-1"}},
		"id":     "o-1",
		"lines": []any{
			map[string]any{"sku": "a", "qty": int64(3)},
			map[string]any{"sku": "b", "qty": int64(3)},
		},
		"notes":    map[string]any{"7": "seven"},
		"card":     nil,
		"voucher":  map[string]any{"long": int64(99)},
		"state":    "PAID",
		"placed":   map[string]any{"long.timestamp-micros": time.UnixMicro(1_700_000_000_123_456).UTC()},
		"discount": map[string]any{"int": int32(5)},
		"extra":    map[string]any{"string": `{"k":"v"}`},
		"weight":   nil,
		"big":      int64(1 << 40),
		"blob":     []byte{0, 1},
		"tags":     []any{},
		"ratio":    float32(0.5),
		"gift":     true,
		"delta":    int32(-3),
		"none":     map[string]any{"boolean": true},
		"note":     nil,
		"pings":    []any{true},
	}
	got := v.(map[string]any)
	if p, ok := got["placed"].(map[string]any); ok {
		if tm, ok := p["long.timestamp-micros"].(time.Time); ok {
			p["long.timestamp-micros"] = tm.UTC()
		}
	}
	if g, ok := got["extra"].(map[string]any); ok {
		g["string"] = strings.ReplaceAll(g["string"].(string), " ", "")
	}
	for k, w := range want {
		if !reflect.DeepEqual(got[k], w) {
			t.Errorf("%s = %#v, want %#v", k, got[k], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d fields, want %d: %v", len(got), len(want), got)
	}

	// The header rule finds the time in the derived schema; the writer
	// names the message; the root message is the event, not its header.
	layouts := schema.NewHeaderLayouts(de, "")
	l, w, avroBody, err := layouts.Body(ctx, ss.ID, protoEnvelope(ss.ID, []int{1}, body)[5:])
	if err != nil {
		t.Fatal(err)
	}
	if w != (schema.Writer{ID: ss.ID, Message: "shop.Order"}) || !l.Derived() {
		t.Errorf("writer %v derived %v", w, l.Derived())
	}
	if ms, server, err := l.CheckRead(avroBody); err != nil || ms != 1_700_000_000_123 || server != "web-1" {
		t.Errorf("header: %d %q %v", ms, server, err)
	}
	if tw, _, err := de.TableWriter(ctx, ss.ID); err != nil || tw.Message != "shop.Order" {
		t.Errorf("table writer %v %v, want the root message shop.Order", tw, err)
	}

	// Index [0] is the header message; [1, 0] the nested Line.
	// An enum number the enum does not name reads as its number.
	if v, err := de.Deserialize(ctx, protoEnvelope(ss.ID, []int{1}, []byte{0x38, 0x09})); err != nil || v.(map[string]any)["state"] != "9" {
		t.Errorf("unnamed enum number: %v %v", v, err)
	}

	h, err := de.Deserialize(ctx, protoEnvelope(ss.ID, []int{0}, []byte{0x08, 0x07}))
	if err != nil || !reflect.DeepEqual(h, map[string]any{"time": int64(7), "server": ""}) {
		t.Errorf("message [0]: %v %v", h, err)
	}
	line, err := de.Deserialize(ctx, protoEnvelope(ss.ID, []int{1, 0}, []byte{0x0a, 0x01, 'z'}))
	if err != nil || !reflect.DeepEqual(line, map[string]any{"sku": "z", "qty": int64(0)}) {
		t.Errorf("message [1 0]: %v %v", line, err)
	}
}

// TestRecursiveProtobufReadsAsJSONText: a message held by a field of
// itself (a tree) has no fixed columns; such fields hold the nested
// message as its JSON text, which keeps the whole value.
func TestRecursiveProtobufReadsAsJSONText(t *testing.T) {
	reg := srtest.Start(t)
	ctx := context.Background()
	ss, err := reg.Client.CreateSchema(ctx, "tree-value", sr.Schema{Type: sr.TypeProtobuf, Schema: `syntax = "proto3";
package t;
message Header { int64 time = 1; }
message Node { string name = 1; repeated Node kids = 2; Node parent = 3; map<string, Node> by_name = 4; }
message Tree { Header header = 1; Node root = 2; }`})
	if err != nil {
		t.Fatal(err)
	}
	fd, err := pbschema.Compile(`syntax = "proto3";
package t;
message Header { int64 time = 1; }
message Node { string name = 1; repeated Node kids = 2; Node parent = 3; map<string, Node> by_name = 4; }
message Tree { Header header = 1; Node root = 2; }`, nil)
	if err != nil {
		t.Fatal(err)
	}
	node := fd.Messages().ByName("Node")
	newNode := func(name string) *dynamicpb.Message {
		n := dynamicpb.NewMessage(node)
		n.Set(node.Fields().ByName("name"), protoreflect.ValueOfString(name))
		return n
	}
	root := newNode("a")
	root.Mutable(node.Fields().ByName("kids")).List().Append(protoreflect.ValueOfMessage(newNode("b")))
	root.Mutable(node.Fields().ByName("by_name")).Map().Set(protoreflect.ValueOfString("c").MapKey(), protoreflect.ValueOfMessage(newNode("c")))
	tree := dynamicpb.NewMessage(fd.Messages().ByName("Tree"))
	tree.Set(tree.Descriptor().Fields().ByName("root"), protoreflect.ValueOfMessage(root))
	body, err := proto.Marshal(tree)
	if err != nil {
		t.Fatal(err)
	}
	de, err := schema.NewDeserializer(reg.Client, schema.DeserializerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if tw, _, err := de.TableWriter(ctx, ss.ID); err != nil || tw.Message != "t.Tree" {
		t.Errorf("table writer %v %v, want t.Tree", tw, err)
	}
	v, err := de.Deserialize(ctx, protoEnvelope(ss.ID, []int{2}, body))
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(v)
	got = strings.ReplaceAll(got, " ", "")
	for _, want := range []string{`kids:[{"name":"b"}]`, `by_name:map[c:{"name":"c"}]`, `parent:<nil>`, `name:a`} {
		if !strings.Contains(got, strings.ReplaceAll(want, " ", "")) {
			t.Errorf("tree reads %s, want it to hold %s", got, want)
		}
	}
}

// TestHostileProtobufAndJSONRecords: each is ErrBadBody naming what is
// wrong, so the loader files it in _errors and counts it malformed.
func TestHostileProtobufAndJSONRecords(t *testing.T) {
	reg := srtest.Start(t)
	ctx := context.Background()
	pb, err := reg.Client.CreateSchema(ctx, "orders-value", sr.Schema{Schema: eventProto, Type: sr.TypeProtobuf})
	if err != nil {
		t.Fatal(err)
	}
	js, err := reg.Client.CreateSchema(ctx, "j-value", sr.Schema{Type: sr.TypeJSON,
		Schema: `{"type":"object","properties":{"n":{"type":"integer"},"at":{"type":"string","format":"date-time"},"tags":{"type":"array","items":{"type":"string"}}},"required":["n"]}`})
	if err != nil {
		t.Fatal(err)
	}
	p2, err := reg.Client.CreateSchema(ctx, "p2-value", sr.Schema{Type: sr.TypeProtobuf,
		Schema: `syntax = "proto2"; message Outer { optional Inner in = 1; } message Inner { required int64 n = 1; }`})
	if err != nil {
		t.Fatal(err)
	}
	_, m := orderMessage(t)
	whole, _ := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	de, err := schema.NewDeserializer(reg.Client, schema.DeserializerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := de.Deserialize(ctx, protoEnvelope(p2.ID, []int{0}, []byte{0x0a, 0x02, 0x08, 0x07})); err != nil ||
		!reflect.DeepEqual(v, map[string]any{"in": map[string]any{"Inner": map[string]any{"n": int64(7)}}}) {
		t.Errorf("proto2 record with its required field: %v %v", v, err)
	}
	for _, c := range []struct {
		name string
		rec  []byte
		want string
	}{
		{"index past the schema", protoEnvelope(pb.ID, []int{2}, whole), "message index [2] points past the schema (the schema defines 2 messages)"},
		{"nested index past the schema", protoEnvelope(pb.ID, []int{1, 5}, whole), "message index [1 5] points past the schema (shop.Order nests 2 messages)"},
		{"negative index", protoEnvelope(pb.ID, []int{-1}, whole), "points past the schema"},
		{"too many indexes", protoEnvelope(pb.ID, make([]int, 200), whole), "200 message indexes"},
		{"indexes cut short", append(schema.AppendEnvelope(nil, pb.ID), 0x04, 0x02), "cut short"},
		{"truncated protobuf", protoEnvelope(pb.ID, []int{1}, whole[:len(whole)-1]), "not a shop.Order"},
		{"wrong wire type", protoEnvelope(pb.ID, []int{1}, []byte{0x12, 0x05, 'a'}), "not a shop.Order"},
		{"JSON not matching", append(schema.AppendEnvelope(nil, js.ID), `{"n":"x"}`...), "does not match its schema"},
		{"JSON missing required", append(schema.AppendEnvelope(nil, js.ID), `{}`...), "does not match its schema"},
		{"JSON failing everywhere, reason cut", append(schema.AppendEnvelope(nil, js.ID), `{"n":"x","tags":[`+strings.Repeat(`1,`, 5000)+`1]}`...), " ..."},
		{"not JSON", append(schema.AppendEnvelope(nil, js.ID), `{"n":`...), "not JSON"},
		{"JSON with bytes after it", append(schema.AppendEnvelope(nil, js.ID), `{"n":1} {}`...), "not JSON"},
		{"JSON integer past a long", append(schema.AppendEnvelope(nil, js.ID), `{"n":9223372036854775808}`...), "does not fit the long column"},
		{"date-time that is not one", append(schema.AppendEnvelope(nil, js.ID), `{"n":1,"at":"yesterday"}`...), "date-time"},
		{"uint64 past a long", protoEnvelope(pb.ID, []int{1}, []byte{0x60, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}), "big: uint64 value 9223372036854775808 does not fit the long column"},
		{"string that is not UTF-8", protoEnvelope(pb.ID, []int{1}, []byte{0x12, 0x01, 0xff}), "not a shop.Order"},
		{"proto2 required field missing", protoEnvelope(p2.ID, []int{0}, []byte{0x0a, 0x00}), "required field Inner.n not set"},
	} {
		_, err := de.Deserialize(ctx, c.rec)
		if !errors.Is(err, schema.ErrBadBody) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrBadBody with %q", c.name, err, c.want)
		}
	}
}

// TestJSONRecordsReadAsAvro: a JSON Schema record reads as the value of
// the derived Avro schema: required non-null properties as plain types,
// the others nullable, nested objects as records, formats as logical
// types, what has no single type as JSON text; "$ref"s are followed into
// definitions and references, and a schema holding itself becomes text.
func TestJSONRecordsReadAsAvro(t *testing.T) {
	reg := srtest.Start(t)
	ctx := context.Background()
	if _, err := reg.Client.CreateSchema(ctx, "addr", sr.Schema{Type: sr.TypeJSON,
		Schema: `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`}); err != nil {
		t.Fatal(err)
	}
	ss, err := reg.Client.CreateSchema(ctx, "people-value", sr.Schema{Type: sr.TypeJSON,
		References: []sr.SchemaReference{{Name: "addr.json", Subject: "addr", Version: 1}},
		Schema: `{"title": "Person", "type": "object",
		  "properties": {
		    "header": {"type": "object", "properties": {"time": {"type": "integer"}, "server": {"type": "string"}}, "required": ["time"]},
		    "name": {"type": "string"},
		    "first-name": {"type": ["string", "null"]},
		    "age": {"type": "integer"},
		    "score": {"type": "number"},
		    "ok": {"type": "boolean"},
		    "born": {"type": "string", "format": "date"},
		    "seen": {"type": "string", "format": "date-time"},
		    "tags": {"type": "array", "items": {"type": "string"}},
		    "attrs": {"type": "object", "additionalProperties": {"type": "integer"}},
		    "home": {"$ref": "addr.json"},
		    "work": {"oneOf": [{"type": "null"}, {"$ref": "#/definitions/office"}]},
		    "any": {},
		    "tree": {"$ref": "#/definitions/node"},
		    "anchored": {"$ref": "#here"}
		  },
		  "required": ["header", "name", "age"],
		  "definitions": {
		    "office": {"type": "object", "properties": {"floor": {"type": "integer"}}},
		    "node": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/definitions/node"}}}},
		    "here": {"$id": "#here", "type": "integer"}
		  }}`})
	if err != nil {
		t.Fatal(err)
	}
	de, err := schema.NewDeserializer(reg.Client, schema.DeserializerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	rec := append(schema.AppendEnvelope(nil, ss.ID), `{"header": {"time": 1700000000123, "server": "w"}, "name": "Ada", "age": 36.0,
	  "score": 1.5, "ok": true, "born": "1815-12-10", "seen": "2024-01-02T03:04:05.123456Z", "tags": ["x"],
	  "attrs": {"b": 2, "a": 1}, "home": {"city": "London"}, "work": {"floor": 3}, "any": [1, "two"],
	  "tree": {"kids": [{"kids": []}]}, "anchored": 5, "undeclared": 1}`...)
	v, err := de.Deserialize(ctx, rec)
	if err != nil {
		t.Fatal(err)
	}
	got := v.(map[string]any)
	want := map[string]any{
		"header":     map[string]any{"time": int64(1700000000123), "server": map[string]any{"string": "w"}},
		"name":       "Ada",
		"first_name": nil,
		"age":        int64(36),
		"score":      map[string]any{"double": 1.5},
		"ok":         map[string]any{"boolean": true},
		"born":       map[string]any{"int.date": time.Date(1815, 12, 10, 0, 0, 0, 0, time.UTC)},
		"seen":       map[string]any{"long.timestamp-micros": time.Date(2024, 1, 2, 3, 4, 5, 123456000, time.UTC)},
		"tags":       map[string]any{"array": []any{"x"}},
		"attrs":      map[string]any{"map": map[string]any{"a": int64(1), "b": int64(2)}},
		"home":       map[string]any{"Person_home": map[string]any{"city": "London"}},
		"work":       map[string]any{"Person_work": map[string]any{"floor": map[string]any{"long": int64(3)}}},
		"any":        map[string]any{"string": `[1,"two"]`},
		"tree":       map[string]any{"Person_tree": map[string]any{"kids": map[string]any{"array": []any{map[string]any{"string": `{"kids":[]}`}}}}},
		"anchored":   map[string]any{"string": "5"},
	}
	for k, w := range want {
		g := got[k]
		if m, ok := g.(map[string]any); ok {
			for b, x := range m {
				if tm, ok := x.(time.Time); ok {
					m[b] = tm.UTC()
				}
			}
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s = %#v, want %#v", k, g, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d fields, want %d: %v", len(got), len(want), got)
	}
	// Columns in the order the schema declares its properties.
	text, err := de.WriterSchema(ctx, ss.ID)
	if err != nil {
		t.Fatal(err)
	}
	var derived struct {
		Fields []struct{ Name string }
	}
	if err := json.Unmarshal([]byte(text), &derived); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range derived.Fields {
		names = append(names, f.Name)
	}
	if got := strings.Join(names, " "); got != "header name first_name age score ok born seen tags attrs home work any tree anchored" {
		t.Errorf("columns %s, want the properties' order", got)
	}
	layouts := schema.NewHeaderLayouts(de, "")
	l, _, body, err := layouts.Body(ctx, ss.ID, rec[5:])
	if err != nil {
		t.Fatal(err)
	}
	if ms, server, err := l.CheckRead(body); err != nil || ms != 1700000000123 || server != "w" {
		t.Errorf("header: %d %q %v", ms, server, err)
	}

	// Properties one Avro name apart are numbered.
	twins, err := reg.Client.CreateSchema(ctx, "twins-value", sr.Schema{Type: sr.TypeJSON, Schema: `{"type":"object","required":["a-b","a_b"],
	  "properties":{"a-b":{"type":"integer"},"a_b":{"type":"string"}}}`})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := de.Deserialize(ctx, append(schema.AppendEnvelope(nil, twins.ID), `{"a-b":1,"a_b":"x"}`...)); err != nil ||
		!reflect.DeepEqual(v, map[string]any{"a_b": int64(1), "a_b_2": "x"}) {
		t.Errorf("properties with one Avro name: %v %v", v, err)
	}

	// Records whose path names meet get distinct names.
	meet, err := reg.Client.CreateSchema(ctx, "meet-value", sr.Schema{Type: sr.TypeJSON, Schema: `{"type":"object","properties":{
	  "a_b": {"type":"object","properties":{"x":{"type":"integer"}}},
	  "a": {"type":"object","properties":{"b":{"type":"object","properties":{"y":{"type":"integer"}}}}}}}`})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := de.Deserialize(ctx, append(schema.AppendEnvelope(nil, meet.ID), `{"a_b":{"x":1},"a":{"b":{"y":2}}}`...)); err != nil ||
		!reflect.DeepEqual(v, map[string]any{
			"a_b": map[string]any{"Record_a_b": map[string]any{"x": map[string]any{"long": int64(1)}}},
			"a":   map[string]any{"Record_a": map[string]any{"b": map[string]any{"Record_a_b_2": map[string]any{"y": map[string]any{"long": int64(2)}}}}},
		}) {
		t.Errorf("records named alike by their paths: %v %v", v, err)
	}

	// A root that is not an object with properties is one column, value.
	for _, c := range []struct {
		schema, record string
		want           any
	}{
		{`{"type":"object"}`, `{"a":1,"b":[true]}`, map[string]any{"value": map[string]any{"a": map[string]any{"string": "1"}, "b": map[string]any{"string": "[true]"}}}},
		{`{"type":"object","additionalProperties":{"type":"integer"}}`, `{"a":1}`, map[string]any{"value": map[string]any{"a": int64(1)}}},
		{`{"type":"array","items":{"type":"string"}}`, `["x"]`, map[string]any{"value": []any{"x"}}},
		{`{"type":["object","null"],"properties":{"n":{"type":"integer"}}}`, `null`, map[string]any{"value": nil}},
		{`{"type":["object","null"],"properties":{"n":{"type":"integer"}}}`, `{"n":2}`,
			map[string]any{"value": map[string]any{"Record_value": map[string]any{"n": map[string]any{"long": int64(2)}}}}},
		{`true`, `"anything"`, map[string]any{"value": map[string]any{"string": `"anything"`}}},
	} {
		ss, err := reg.Client.CreateSchema(ctx, fmt.Sprintf("bare%d-value", len(c.schema)), sr.Schema{Type: sr.TypeJSON, Schema: c.schema})
		if err != nil {
			t.Fatal(err)
		}
		v, err := de.Deserialize(ctx, append(schema.AppendEnvelope(nil, ss.ID), c.record...))
		if err != nil || !reflect.DeepEqual(v, c.want) {
			t.Errorf("schema %s, record %s: %#v %v, want %#v", c.schema, c.record, v, err, c.want)
		}
	}
}

// FuzzProtobufRecord: whatever bytes follow a Protobuf schema's id (the
// event schema, and a proto2 tree with a group and required fields), the
// conversion either refuses them as ErrBadBody or gives one whole Avro
// value of the derived schema, which the header rule's check accepts and
// the Avro decoder reads; it never panics.
func FuzzProtobufRecord(f *testing.F) {
	reg := srtest.Start(f)
	ctx := context.Background()
	ss, err := reg.Client.CreateSchema(ctx, "orders-value", sr.Schema{Schema: eventProto, Type: sr.TypeProtobuf})
	if err != nil {
		f.Fatal(err)
	}
	tree, err := reg.Client.CreateSchema(ctx, "tree-value", sr.Schema{Type: sr.TypeProtobuf, Schema: `syntax = "proto2";
message Node { optional string name = 1; repeated Node kids = 2; map<int64, Node> by_id = 3; required int32 n = 4; }
message Tree { optional Node root = 1; repeated group G = 2 { optional Node in = 3; } }`})
	if err != nil {
		f.Fatal(err)
	}
	de, err := schema.NewDeserializer(reg.Client, schema.DeserializerConfig{})
	if err != nil {
		f.Fatal(err)
	}
	layouts := schema.NewHeaderLayouts(de, "")
	f.Add([]byte{0x02, 0x02, 0x0a, 0x04, 0x12, 0x02, 0x20, 0x01})
	f.Add([]byte{0x02, 0x02, 0x12, 0x01, 'x'})
	f.Add([]byte{0x04, 0x02, 0x00, 0x0a, 0x01, 'z'})
	f.Add([]byte{0x00, 0x08, 0x07})
	f.Add([]byte{0x02, 0x02, 0x22, 0x05, 0x08, 0x07, 0x12, 0x01, 'x'})
	f.Fuzz(func(t *testing.T, body []byte) {
		checkConverted(t, ctx, de, layouts, ss.ID, body)
		checkConverted(t, ctx, de, layouts, tree.ID, body)
	})
}

// FuzzJSONRecord is FuzzProtobufRecord for a JSON schema with nested
// objects, arrays, maps, formats and untyped parts.
func FuzzJSONRecord(f *testing.F) {
	reg := srtest.Start(f)
	ctx := context.Background()
	ss, err := reg.Client.CreateSchema(ctx, "j-value", sr.Schema{Type: sr.TypeJSON, Schema: `{"type":"object","required":["header"],
	  "properties": {"header": {"type":"object","properties":{"time":{"type":"integer"}},"required":["time"]},
	    "tags": {"type":"array","items":{"type":["string","null"]}}, "m": {"type":"object","additionalProperties":{"type":"number"}},
	    "at": {"type":"string","format":"date-time"}, "d": {"type":"string","format":"date"}, "any": {}, "b": {"type":"boolean"}}}`})
	if err != nil {
		f.Fatal(err)
	}
	de, err := schema.NewDeserializer(reg.Client, schema.DeserializerConfig{})
	if err != nil {
		f.Fatal(err)
	}
	layouts := schema.NewHeaderLayouts(de, "")
	f.Add([]byte(`{"header":{"time":1},"tags":["a",null],"m":{"x":1.5},"at":"2024-01-02T03:04:05Z","d":"2024-01-02","any":[{}],"b":true}`))
	f.Add([]byte(`{"header":{"time":-1e3}}`))
	f.Add([]byte(`{"header":{"time":1},"any":{"deep":[[[[1]]]]}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		checkConverted(t, ctx, de, layouts, ss.ID, body)
	})
}

func checkConverted(t *testing.T, ctx context.Context, de *schema.Deserializer, layouts *schema.HeaderLayouts, id int, body []byte) {
	l, w, avroBody, err := layouts.Body(ctx, id, body)
	if err != nil {
		if !errors.Is(err, schema.ErrBadBody) {
			t.Fatalf("refused with %v, want ErrBadBody", err)
		}
		return
	}
	if err := l.Check(avroBody); err != nil {
		t.Fatalf("converted to an Avro body its schema's check refuses: %v", err)
	}
	if _, err := de.DeserializeAvro(ctx, w, avroBody); err != nil {
		t.Fatalf("converted to an Avro body that does not decode: %v", err)
	}
}

// TestProtobufEditionsPresence: an editions file's presence features
// decide nullability as proto2's and proto3's rules do (explicit by
// default, implicit where a field says so), and packed repeated fields
// read as arrays.
func TestProtobufEditionsPresence(t *testing.T) {
	reg := srtest.Start(t)
	ctx := context.Background()
	ss, err := reg.Client.CreateSchema(ctx, "ed-value", sr.Schema{Type: sr.TypeProtobuf, Schema: `edition = "2023";
package e;
message M { int64 a = 1; string b = 2 [features.field_presence = IMPLICIT]; repeated int32 c = 3; }`})
	if err != nil {
		t.Fatal(err)
	}
	de, err := schema.NewDeserializer(reg.Client, schema.DeserializerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := de.Deserialize(ctx, append(schema.AppendEnvelope(nil, ss.ID), 0, 0x08, 0x05, 0x1a, 0x02, 0x01, 0x02))
	if want := map[string]any{"a": map[string]any{"long": int64(5)}, "b": "", "c": []any{int32(1), int32(2)}}; err != nil || !reflect.DeepEqual(v, want) {
		t.Errorf("got %#v %v, want %#v", v, err, want)
	}
}
