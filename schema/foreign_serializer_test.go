package schema_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tributary-io/tributary/schema"
	"github.com/tributary-io/tributary/schema/internal/srtest"
)

const shopProto = `syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
message Header { google.protobuf.Timestamp time = 1; string server = 2; }
message Order {
  Header header = 1;
  message Line { string sku = 1; int64 qty = 2; }
  repeated Line lines = 2;
}
`

// Each message of a file is written with the message indexes Confluent's
// serializers write for it, and reads back as that message; the header's
// time (a Timestamp) and server are filled where the event leaves them.
func TestForeignSerializerMessageIndexes(t *testing.T) {
	reg := srtest.Start(t)
	ctx := context.Background()
	now := time.Date(2026, 3, 4, 5, 6, 7, 8000, time.UTC)
	des, err := schema.NewDeserializer(reg.Client, schema.DeserializerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		message, root string
		indexes       []byte
		event         string
		want          map[string]any
	}{
		{"", "shop.Order", []byte{2, 2}, `{"lines": [{"sku": "a", "qty": "3"}]}`, map[string]any{
			"header": map[string]any{"shop.Header": map[string]any{"time": map[string]any{"long.timestamp-micros": now}, "server": "fe-9"}},
			"lines":  []any{map[string]any{"sku": "a", "qty": int64(3)}}}},
		{"shop.Header", "shop.Header", []byte{0}, `{"server": "x"}`, map[string]any{"time": nil, "server": "x"}},
		{"shop.Order.Line", "shop.Order.Line", []byte{4, 2, 0}, `{"sku": "b"}`, map[string]any{"sku": "b", "qty": int64(0)}},
	} {
		s, err := schema.NewForeignSerializer(reg.Client, schema.ForeignSerializerConfig{Type: sr.TypeProtobuf, Schema: shopProto,
			Message: tc.message, Server: "fe-9", Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		if s.Message() != tc.root {
			t.Errorf("message %q: serializer writes %s, want %s", tc.message, s.Message(), tc.root)
		}
		b, err := s.Serialize(ctx, "shop", []byte(tc.event))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(b[5:], tc.indexes) {
			t.Errorf("%s: body % x, want message indexes % x", tc.root, b[5:], tc.indexes)
		}
		v, err := des.Deserialize(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		if h, ok := v.(map[string]any)["header"].(map[string]any); ok {
			tm := h["shop.Header"].(map[string]any)["time"].(map[string]any)
			tm["long.timestamp-micros"] = tm["long.timestamp-micros"].(time.Time).UTC()
		}
		if !reflect.DeepEqual(v, tc.want) {
			t.Errorf("%s reads back as %#v, want %#v", tc.root, v, tc.want)
		}
	}
}

// What the serializer refuses, and says why: a schema that would need
// references, a message the file lacks, events that do not parse or
// validate (ErrBadEvent, naming the field).
func TestForeignSerializerRefuses(t *testing.T) {
	reg := srtest.Start(t)
	for _, tc := range []struct {
		typ            sr.SchemaType
		text, message  string
		wantCompileErr string
	}{
		{sr.TypeProtobuf, `syntax = "proto3"; import "money.proto"; message A { Money m = 1; }`, "", `import "money.proto"`},
		{sr.TypeProtobuf, shopProto, "shop.Nope", "defines no message shop.Nope"},
		{sr.TypeJSON, `{"type": "object", "properties": {"a": {"$ref": "address.json"}}}`, "", "address.json"},
		{sr.TypeJSON, `{"type": "object"}`, "A", "no messages"},
	} {
		_, err := schema.NewForeignSerializer(reg.Client, schema.ForeignSerializerConfig{Type: tc.typ, Schema: tc.text, Message: tc.message})
		if err == nil || !strings.Contains(err.Error(), tc.wantCompileErr) {
			t.Errorf("%s %q: %v, want an error naming %q", tc.typ, tc.text, err, tc.wantCompileErr)
		}
	}
	pb, err := schema.NewForeignSerializer(reg.Client, schema.ForeignSerializerConfig{Type: sr.TypeProtobuf, Schema: shopProto})
	if err != nil {
		t.Fatal(err)
	}
	js, err := schema.NewForeignSerializer(reg.Client, schema.ForeignSerializerConfig{Type: sr.TypeJSON,
		Schema: `{"type": "object", "required": ["n"], "properties": {"n": {"type": "integer", "maximum": 9}}}`})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		s          *schema.ForeignSerializer
		event, why string
	}{
		{pb, `{"lines": [{"sku": 1}]}`, "sku"},
		{pb, `{"colour": "red"}`, "colour"},
		{pb, `{"lines": `, "shop.Order"},
		{js, `{"n": 10}`, "maximum"},
		{js, `{}`, "missing property 'n'"},
		{js, `{"n": 1`, "not JSON"},
	} {
		_, err := tc.s.Serialize(context.Background(), "t", []byte(tc.event))
		if !errors.Is(err, schema.ErrBadEvent) || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("%s: %v, want ErrBadEvent naming %q", tc.event, err, tc.why)
		}
	}
}

// A schema that imports (Protobuf) or "$ref"s (JSON) another file is
// registered with a reference to that file, registered first under its
// name; its records read back through the reference.
func TestForeignSerializerReferences(t *testing.T) {
	reg := srtest.Start(t)
	ctx := context.Background()
	des, err := schema.NewDeserializer(reg.Client, schema.DeserializerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		typ         sr.SchemaType
		text, event string
		ref         schema.Reference
		want        string
	}{
		{sr.TypeProtobuf, `syntax = "proto3"; package shop; import "shop/header.proto"; message Ev { shop.Header header = 1; string id = 2; }`,
			`{"header": {"time": "5"}, "id": "e"}`,
			schema.Reference{Name: "shop/header.proto", Schema: `syntax = "proto3"; package shop; message Header { int64 time = 1; string server = 2; }`},
			`map[header:map[shop.Header:map[server:fe-9 time:5]] id:e]`},
		{sr.TypeJSON, `{"type": "object", "properties": {"header": {"$ref": "header.json"}, "id": {"type": "string"}}}`,
			`{"header": {"time": 5, "server": "x"}, "id": "e"}`,
			schema.Reference{Name: "header.json", Schema: `{"type": "object", "properties": {"time": {"type": "integer"}, "server": {"type": "string"}}}`},
			`map[header:map[Record_header:map[server:map[string:x] time:map[long:5]]] id:map[string:e]]`},
	} {
		s, err := schema.NewForeignSerializer(reg.Client, schema.ForeignSerializerConfig{Type: tc.typ, Schema: tc.text,
			References: []schema.Reference{tc.ref}, Server: "fe-9"})
		if err != nil {
			t.Fatalf("%s: %v", tc.typ, err)
		}
		topic := "ref-" + strings.ToLower(tc.typ.String())
		b, err := s.Serialize(ctx, topic, []byte(tc.event))
		if err != nil {
			t.Fatalf("%s: %v", tc.typ, err)
		}
		ss, err := reg.Client.SchemaByVersion(ctx, topic+"-value", -1)
		if err != nil {
			t.Fatal(err)
		}
		if want := []sr.SchemaReference{{Name: tc.ref.Name, Subject: tc.ref.Name, Version: 1}}; !reflect.DeepEqual(ss.References, want) {
			t.Errorf("%s registered with references %+v, want %+v", tc.typ, ss.References, want)
		}
		v, err := des.Deserialize(ctx, b)
		if err != nil {
			t.Fatalf("%s: %v", tc.typ, err)
		}
		if got := fmt.Sprint(v); got != tc.want {
			t.Errorf("%s reads back as %s, want %s", tc.typ, got, tc.want)
		}
	}
}

// FuzzForeignEvent: whatever line comes in, the serializer refuses it
// with ErrBadEvent or writes a record that the Deserializer reads back.
func FuzzForeignEvent(f *testing.F) {
	for _, s := range []string{
		`{"lines": [{"sku": "a", "qty": "3"}]}`, `{"header": {"time": "2026-01-01T00:00:00Z"}}`, `{"n": 3}`,
		`{"lines": [{"sku": 1}]}`, `[]`, `{"n": 1e400}`, `{"lines": [` + strings.Repeat("[", 200),
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	reg := srtest.Start(f)
	des, err := schema.NewDeserializer(reg.Client, schema.DeserializerConfig{})
	if err != nil {
		f.Fatal(err)
	}
	pb, err := schema.NewForeignSerializer(reg.Client, schema.ForeignSerializerConfig{Type: sr.TypeProtobuf, Schema: shopProto})
	if err != nil {
		f.Fatal(err)
	}
	js, err := schema.NewForeignSerializer(reg.Client, schema.ForeignSerializerConfig{Type: sr.TypeJSON,
		Schema: `{"type": "object", "properties": {"n": {"type": "integer"}, "s": {"type": "array", "items": {"type": "string"}}, "header": {"type": "object"}}}`})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, line string, json bool) {
		s, topic := pb, "fuzz-pb"
		if json {
			s, topic = js, "fuzz-js"
		}
		b, err := s.Serialize(context.Background(), topic, []byte(line))
		if err != nil {
			if !errors.Is(err, schema.ErrBadEvent) {
				t.Fatalf("%q: %v, want ErrBadEvent", line, err)
			}
			return
		}
		if _, err := des.Deserialize(context.Background(), b); err != nil {
			t.Fatalf("%q was written as % x, which does not read back: %v", line, b, err)
		}
	})
}
