package schema_test

import (
	"errors"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/linkedin/goavro/v2"

	"github.com/tributary-io/tributary/schema"
)

const microsSchema = `{"type":"record","name":"E","namespace":"x","fields":[
 {"name":"h","type":["null",{"type":"record","name":"H","fields":[
   {"name":"server","type":["null","string"]},
   {"name":"time","type":["null",{"type":"long","logicalType":"timestamp-micros"}]}]}]}]}`

// layoutCase is one header shape, one event in goavro's native form, and
// what the rule must read from it.
type layoutCase struct {
	name, schema, field string
	event               map[string]any
	ms                  int64
	server              string
	noTime              bool
}

var guid = make([]byte, 16)

func layoutCases(t *testing.T) []layoutCase {
	const ms = 1_800_000_123_456
	return []layoutCase{
		{name: "tributary.events.Header", schema: readSchema(t, "pageview.avsc"), event: pageView(1), ms: 1_700_000_000_001, server: "fe-01"},
		{name: "another namespace, header after other fields", schema: readSchema(t, "custom-header.avsc"),
			event: map[string]any{"tags": []any{"a", "b"}, "referrer": map[string]any{"string": "r"}, "target": "t",
				"header": map[string]any{"time": time.UnixMilli(ms), "server": "s1", "service": "svc", "guid": guid}},
			ms: ms, server: "s1"},
		{name: "time as a plain long, last in the header", schema: readSchema(t, "plain-long-header.avsc"),
			event: map[string]any{"amount": 2.5, "attrs": map[string]any{"a": int64(1), "b": int64(-7)},
				"header": map[string]any{"time": int64(ms), "server": "s2", "service": "svc", "guid": guid}},
			ms: ms, server: "s2"},
		{name: "timestamp-micros in unions, another field name", schema: microsSchema, field: "h",
			event: map[string]any{"h": map[string]any{"x.H": map[string]any{
				"server": map[string]any{"string": "s3"}, "time": map[string]any{"long.timestamp-micros": time.UnixMicro(ms*1000 + 999)}}}},
			ms: ms, server: "s3"},
		{name: "null header", schema: microsSchema, field: "h", event: map[string]any{"h": nil}, noTime: true},
		{name: "null time", schema: microsSchema, field: "h",
			event: map[string]any{"h": map[string]any{"x.H": map[string]any{"server": nil, "time": nil}}}, noTime: true},
		{name: "time 0", schema: readSchema(t, "plain-long-header.avsc"),
			event: map[string]any{"amount": 1.0, "attrs": map[string]any{},
				"header": map[string]any{"time": int64(0), "server": "s2", "service": "svc", "guid": guid}}, noTime: true},
		{name: "no header field", schema: microsSchema, event: map[string]any{"h": nil}, noTime: true},
		{name: "time is a string", schema: `{"type":"record","name":"E","fields":[{"name":"header","type":{"type":"record","name":"H","fields":[{"name":"time","type":"string"}]}}]}`,
			event: map[string]any{"header": map[string]any{"time": "now"}}, noTime: true},
	}
}

// TestHeaderLayout: the rule reads the same time and server from the
// encoded body (skipping fields) as from the decoded event, whatever the
// header record is called, and says why when there is no time.
func TestHeaderLayout(t *testing.T) {
	for _, tc := range layoutCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			s, err := avro.ParseWithCache(tc.schema, "", &avro.SchemaCache{})
			if err != nil {
				t.Fatal(err)
			}
			codec, err := goavro.NewCodec(tc.schema)
			if err != nil {
				t.Fatal(err)
			}
			body, err := codec.BinaryFromNative(nil, tc.event)
			if err != nil {
				t.Fatal(err)
			}
			native, _, err := codec.NativeFromBinary(body)
			if err != nil {
				t.Fatal(err)
			}
			l := schema.NewHeaderLayout(s, tc.field)
			for path, read := range map[string]func() (int64, string, error){
				"body":   func() (int64, string, error) { return l.Read(body) },
				"native": func() (int64, string, error) { return l.ReadNative(native) },
			} {
				ms, server, err := read()
				if tc.noTime {
					if !errors.Is(err, schema.ErrNoHeaderTime) {
						t.Errorf("%s: got %d, %q, %v; want ErrNoHeaderTime", path, ms, server, err)
					} else {
						t.Logf("%s: %v", path, err)
					}
					continue
				}
				if err != nil || ms != tc.ms || server != tc.server {
					t.Errorf("%s: got %d, %q, %v; want %d, %q", path, ms, server, err, tc.ms, tc.server)
				}
			}
		})
	}
}

// TestHeaderLayoutTruncated: a body cut anywhere before the header's
// fields end is malformed, never a panic or a wrong time.
func TestHeaderLayoutTruncated(t *testing.T) {
	tc := layoutCases(t)[2]
	s := avro.MustParse(tc.schema)
	codec, _ := goavro.NewCodec(tc.schema)
	body, err := codec.BinaryFromNative(nil, tc.event)
	if err != nil {
		t.Fatal(err)
	}
	l := schema.NewHeaderLayout(s, "")
	for n := range len(body) {
		if ms, _, err := l.Read(body[:n]); !errors.Is(err, schema.ErrBadBody) {
			t.Fatalf("cut at %d of %d: got %d, %v; want ErrBadBody", n, len(body), ms, err)
		}
	}
}

// FuzzHeaderLayoutRead: any bytes under any of the shapes give a time, no
// time or a malformed body; never a panic.
func FuzzHeaderLayoutRead(f *testing.F) {
	var layouts []*schema.HeaderLayout
	for _, tc := range layoutCases(&testing.T{}) {
		codec, _ := goavro.NewCodec(tc.schema)
		if body, err := codec.BinaryFromNative(nil, tc.event); err == nil {
			f.Add(body)
		}
		layouts = append(layouts, schema.NewHeaderLayout(avro.MustParse(tc.schema), tc.field))
	}
	f.Add([]byte{0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01})
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, l := range layouts {
			if _, _, err := l.Read(body); err != nil && !errors.Is(err, schema.ErrNoHeaderTime) && !errors.Is(err, schema.ErrBadBody) {
				t.Fatalf("unexpected error kind: %v", err)
			}
		}
	})
}

// TestSerializerFillsUsersHeader: the filler completes a header found by
// the rule, whatever its record is called, in the fields that header has
// (server and service set, time in the header's own unit).
func TestSerializerFillsUsersHeader(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000)
	for _, tc := range []struct{ file, field string }{{"custom-header.avsc", ""}, {"plain-long-header.avsc", ""}} {
		text := readSchema(t, tc.file)
		ser, err := schema.NewSerializer(newStaticRegistry(), schema.SerializerConfig{
			Schema: text, Server: "host-a", Service: "svc-a", Now: func() time.Time { return now },
		})
		if err != nil {
			t.Fatal(err)
		}
		v, err := ser.Serialize(t.Context(), "t", map[string]any{"header": map[string]any{}})
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		l := schema.NewHeaderLayout(avro.MustParse(text), tc.field)
		ms, server, err := l.Read(v[5:])
		if err != nil || ms != now.UnixMilli() || server != "host-a" {
			t.Errorf("%s: read back %d, %q, %v", tc.file, ms, server, err)
		}
	}
}
