package schema_test

import (
	"context"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/schema"
	"github.com/tributary-io/tributary/schema/internal/srtest"
)

// avroTypes holds one case per Avro type: the type of a record field "v"
// and a value of it in goavro's native form, which is also the form that
// comes back. Named types are declared once, in the first field that
// uses them, so every case is a complete schema on its own.
var avroTypes = []struct {
	name  string
	typ   string
	value any
}{
	{"null", `"null"`, nil},
	{"boolean", `"boolean"`, true},
	{"int", `"int"`, int32(-7)},
	{"long", `"long"`, int64(1) << 40},
	{"float", `"float"`, float32(1.5)},
	{"double", `"double"`, 2.25},
	{"bytes", `"bytes"`, []byte{0, 1, 2, 255}},
	{"string", `"string"`, "héllo"},
	{"record", `{"type":"record","name":"Inner","fields":[{"name":"x","type":"int"},{"name":"y","type":"string"}]}`,
		map[string]any{"x": int32(1), "y": "why"}},
	{"enum", `{"type":"enum","name":"Color","symbols":["RED","GREEN","BLUE"]}`, "GREEN"},
	{"fixed", `{"type":"fixed","name":"Four","size":4}`, []byte("abcd")},
	{"array", `{"type":"array","items":"string"}`, []any{"a", "b", "c"}},
	{"empty array", `{"type":"array","items":"long"}`, []any{}},
	{"map", `{"type":"map","values":"long"}`, map[string]any{"a": int64(1), "b": int64(2)}},
	{"union null branch", `["null","string"]`, nil},
	{"union string branch", `["null","string"]`, map[string]any{"string": "s"}},
	{"union of named types", `["null",{"type":"record","name":"P","fields":[{"name":"p","type":"int"}]},{"type":"enum","name":"Q","symbols":["A","B"]}]`,
		map[string]any{"test.Q": "B"}},
	{"union of record", `["null",{"type":"record","name":"P","fields":[{"name":"p","type":"int"}]},"string"]`,
		map[string]any{"test.P": map[string]any{"p": int32(3)}}},
	{"array of unions", `{"type":"array","items":["null","long"]}`, []any{nil, map[string]any{"long": int64(5)}}},
	{"map of records", `{"type":"map","values":{"type":"record","name":"M","fields":[{"name":"m","type":"double"}]}}`,
		map[string]any{"k": map[string]any{"m": 0.5}}},
	{"decimal bytes", `{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}`, big.NewRat(-12345, 100)},
	{"decimal fixed", `{"type":"fixed","name":"Dec","size":8,"logicalType":"decimal","precision":12,"scale":3}`, big.NewRat(987654321, 1000)},
	{"uuid", `{"type":"string","logicalType":"uuid"}`, "0d6f2a7e-8a4c-4b53-9df0-6c1d2b3a4f5e"},
	{"date", `{"type":"int","logicalType":"date"}`, time.Date(2011, 6, 22, 0, 0, 0, 0, time.UTC)},
	{"timestamp-millis", `{"type":"long","logicalType":"timestamp-millis"}`, time.UnixMilli(1_308_700_800_123).UTC()},
	{"timestamp-micros", `{"type":"long","logicalType":"timestamp-micros"}`, time.UnixMicro(1_308_700_800_123_456).UTC()},
	{"time-millis", `{"type":"int","logicalType":"time-millis"}`, 3*time.Hour + 25*time.Millisecond},
	{"union with logical type", `["null",{"type":"long","logicalType":"timestamp-millis"}]`,
		map[string]any{"long.timestamp-millis": time.UnixMilli(1_308_700_800_000).UTC()}},
}

func fieldSchema(typ string, extra ...string) string {
	fields := append([]string{`{"name":"v","type":` + typ + `}`}, extra...)
	return `{"type":"record","name":"T","namespace":"test","fields":[` + strings.Join(fields, ",") + `]}`
}

// TestRoundTripEveryType serializes a value of every Avro type through our
// registry and reads it back three ways: in its writer schema; with an
// identical reader schema; and with a reader schema that adds a field, which
// takes the schema-resolution path.
func TestRoundTripEveryType(t *testing.T) {
	ctx := context.Background()
	reg := srtest.Start(t)
	for _, tc := range avroTypes {
		t.Run(tc.name, func(t *testing.T) {
			writer := fieldSchema(tc.typ)
			topic := strings.ReplaceAll(tc.name, " ", "-")
			ser, err := schema.NewSerializer(reg.Client, schema.SerializerConfig{Schema: writer})
			if err != nil {
				t.Fatal(err)
			}
			b, err := ser.Serialize(ctx, topic, map[string]any{"v": tc.value})
			if err != nil {
				t.Fatalf("serialize: %v", err)
			}
			want := map[string]any{"v": tc.value}
			for _, rc := range []struct {
				name, reader string
				want         map[string]any
			}{
				{"writer schema", "", want},
				{"same reader schema", writer, want},
				{"evolved reader schema", fieldSchema(tc.typ, `{"name":"added","type":"string","default":"dflt"}`),
					map[string]any{"v": tc.value, "added": "dflt"}},
			} {
				de, err := schema.NewDeserializer(reg.Client, schema.DeserializerConfig{ReaderSchema: rc.reader})
				if err != nil {
					t.Fatal(err)
				}
				got, err := de.Deserialize(ctx, b)
				if err != nil {
					t.Fatalf("%s: deserialize: %v", rc.name, err)
				}
				if !sameValue(got, rc.want) {
					t.Errorf("%s:\n got  %s\n want %s", rc.name, show(got), show(rc.want))
				}
			}
		})
	}
}

// pageViewV1 is an event in the page-view schema as a Go struct.
type pageViewV1 struct {
	Header     schema.Header `avro:"header"`
	MemberID   int64         `avro:"memberId"`
	PageKey    string        `avro:"pageKey"`
	Referrer   *string       `avro:"referrer"`
	UserAgent  *string       `avro:"userAgent"`
	Locale     string        `avro:"locale"`
	DurationMs int32         `avro:"durationMs"`
}

// pageViewV2 is the same event in pageview-v2.avsc.
type pageViewV2 struct {
	Header     *schema.Header `avro:"header"`
	MemberID   int64          `avro:"memberId"`
	PageKey    string         `avro:"pageKey"`
	Referrer   *string        `avro:"referrer"`
	Locale     string         `avro:"locale"`
	DurationMs int64          `avro:"durationMs"`
	SessionID  *string        `avro:"sessionId"`
}

// TestSchemaEvolution writes page views with version 1 and reads them with
// version 2 (a field added, one removed, int widened to long), as maps and
// as structs; structs and maps encode the same bytes.
func TestSchemaEvolution(t *testing.T) {
	ctx := context.Background()
	reg := srtest.Start(t)
	v1, v2 := readSchema(t, "pageview.avsc"), readSchema(t, "pageview-v2.avsc")
	ser, err := schema.NewSerializer(reg.Client, schema.SerializerConfig{Schema: v1})
	if err != nil {
		t.Fatal(err)
	}
	fromMap, err := ser.Serialize(ctx, "pageviews", pageView(1))
	if err != nil {
		t.Fatal(err)
	}
	ref := "https://example.com/search?q=kafka"
	fromStruct, err := ser.Serialize(ctx, "pageviews", pageViewV1{
		Header:   schema.Header{Time: 1_700_000_000_001, Server: "fe-01", Service: "frontend", GUID: [16]byte([]byte("0123456789abcdef"))},
		MemberID: 1001, PageKey: "profile", Referrer: &ref, Locale: "en_US", DurationMs: 42,
	})
	if err != nil {
		t.Fatal(err)
	}
	if string(fromMap) != string(fromStruct) {
		t.Fatalf("map and struct encode differently:\n%x\n%x", fromMap, fromStruct)
	}
	// The registry now lets version 2 follow version 1 (BACKWARD).
	if _, err := schema.NewSerializer(reg.Client, schema.SerializerConfig{Schema: v2}); err != nil {
		t.Fatal(err)
	}

	de, err := schema.NewDeserializer(reg.Client, schema.DeserializerConfig{ReaderSchema: v2})
	if err != nil {
		t.Fatal(err)
	}
	got, err := de.Deserialize(ctx, fromMap)
	if err != nil {
		t.Fatal(err)
	}
	want := pageView(1)
	delete(want, "userAgent")
	want["durationMs"] = int64(42)
	want["sessionId"] = nil
	if !sameValue(got, want) {
		t.Errorf("as map:\n got  %s\n want %s", show(got), show(want))
	}
	if ms, ok := schema.HeaderTime(got); !ok || ms != 1_700_000_000_001 {
		t.Errorf("HeaderTime = %d, %v", ms, ok)
	}

	var s pageViewV2
	if err := de.DeserializeInto(ctx, fromMap, &s); err != nil {
		t.Fatal(err)
	}
	if s.Header == nil || s.Header.Server != "fe-01" || s.MemberID != 1001 || s.DurationMs != 42 || s.SessionID != nil || s.Referrer == nil || *s.Referrer != ref {
		t.Errorf("as struct: %+v", s)
	}
	if ms, ok := schema.HeaderTime(&s); !ok || ms != 1_700_000_000_001 {
		t.Errorf("HeaderTime(struct) = %d, %v", ms, ok)
	}

	// Version 1 cannot read what version 2 writes: durationMs would
	// narrow. The deserializer says so instead of guessing.
	ser2, _ := schema.NewSerializer(reg.Client, schema.SerializerConfig{Schema: v2})
	b2, err := ser2.Serialize(ctx, "pageviews", pageViewV2{Header: &schema.Header{}, PageKey: "jobs"})
	if err != nil {
		t.Fatal(err)
	}
	old, _ := schema.NewDeserializer(reg.Client, schema.DeserializerConfig{ReaderSchema: v1})
	if _, err := old.Deserialize(ctx, b2); err == nil || !strings.Contains(err.Error(), "cannot be read with the reader schema") {
		t.Errorf("v1 reader on v2 data: %v", err)
	}
}

// TestDecodeErrorsSayWhich: each kind of broken value gets its own error.
func TestDecodeErrorsSayWhich(t *testing.T) {
	ctx := context.Background()
	pv := readSchema(t, "pageview.avsc")
	reg := newStaticRegistry(pv)
	ser, _ := schema.NewSerializer(reg, schema.SerializerConfig{Schema: pv})
	good, err := ser.Serialize(ctx, "pageviews", pageView(0))
	if err != nil {
		t.Fatal(err)
	}
	withID := func(id byte) []byte { return append([]byte{0, 0, 0, 0, id}, good[5:]...) }
	cases := []struct {
		name  string
		value []byte
		want  error
	}{
		{"empty", nil, schema.ErrTruncated},
		{"short header", []byte{0, 0, 1}, schema.ErrTruncated},
		{"JSON instead of an envelope", []byte(`{"memberId":1}`), schema.ErrWrongMagic},
		{"magic byte 1", append([]byte{1}, good[1:]...), schema.ErrWrongMagic},
		{"unknown id", withID(99), schema.ErrUnknownID},
		{"id beyond int32", []byte{0, 0xff, 0xff, 0xff, 0xff, 1}, schema.ErrUnknownID},
		{"header only", good[:5], schema.ErrBadBody},
		{"body cut short", good[:len(good)-3], schema.ErrBadBody},
		{"bytes left over", append(append([]byte{}, good...), 0, 0), schema.ErrBadBody},
	}
	readers := map[string]string{"writer schema": "", "evolving reader": readSchema(t, "pageview-v2.avsc")}
	for rname, reader := range readers {
		de, err := schema.NewDeserializer(reg, schema.DeserializerConfig{ReaderSchema: reader})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := de.Deserialize(ctx, good); err != nil {
			t.Fatalf("%s: good value: %v", rname, err)
		}
		for _, tc := range cases {
			_, err := de.Deserialize(ctx, tc.value)
			if !errors.Is(err, tc.want) {
				t.Errorf("%s, %s: %v, want %v", rname, tc.name, err, tc.want)
			}
		}
	}
}

// TestSerializerAsksOncePerSubject: the id is cached per subject, and a
// lookup-only serializer never registers.
func TestSerializerAsksOncePerSubject(t *testing.T) {
	ctx := context.Background()
	pv := readSchema(t, "pageview.avsc")
	reg := newStaticRegistry()
	ser, _ := schema.NewSerializer(reg, schema.SerializerConfig{Schema: pv})
	for i := range 100 {
		for _, topic := range []string{"a", "b"} {
			if _, err := ser.Serialize(ctx, topic, pageView(i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if reg.calls != 2 || reg.subject["a-value"] != 1 || reg.subject["b-value"] != 1 {
		t.Errorf("%d registry calls, subjects %v; want 2 calls and a-value, b-value on id 1", reg.calls, reg.subject)
	}

	lookup, _ := schema.NewSerializer(reg, schema.SerializerConfig{Schema: pv, LookupOnly: true})
	if _, err := lookup.Serialize(ctx, "a", pageView(0)); err != nil {
		t.Errorf("lookup of a registered schema: %v", err)
	}
	if _, err := lookup.Serialize(ctx, "unregistered", pageView(0)); err == nil || !strings.Contains(err.Error(), "register the schema first") {
		t.Errorf("lookup of an unregistered schema: %v", err)
	}
	if _, ok := reg.subject["unregistered-value"]; ok {
		t.Error("a lookup-only serializer registered a schema")
	}

	de, _ := schema.NewDeserializer(reg, schema.DeserializerConfig{})
	b, _ := ser.Serialize(ctx, "a", pageView(0))
	before := reg.calls
	for range 100 {
		if _, err := de.Deserialize(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	if n := reg.calls - before; n != 1 {
		t.Errorf("deserializer asked the registry %d times for one id", n)
	}
}

// TestSerializerErrors: what the application gets wrong is named.
func TestSerializerErrors(t *testing.T) {
	ctx := context.Background()
	reg := newStaticRegistry()
	if _, err := schema.NewSerializer(reg, schema.SerializerConfig{Schema: `{"type":"record"}`}); err == nil {
		t.Error("invalid schema accepted")
	}
	ser, _ := schema.NewSerializer(reg, schema.SerializerConfig{Schema: readSchema(t, "pageview.avsc")})
	v := pageView(0)
	v["memberId"] = "not a number"
	_, err := ser.Serialize(ctx, "pageviews", v)
	if err == nil || !strings.Contains(err.Error(), `"pageviews-value"`) || !strings.Contains(err.Error(), "memberId") {
		t.Errorf("bad field: %v", err)
	}
	if _, err := ser.Serialize(ctx, "pageviews", struct{ X int }{1}); err == nil {
		t.Error("unrelated struct accepted")
	}
}

// TestSerializerWithOurRegistry: lookup-only and incompatible schemas
// against the real registry, through pkg/sr.
func TestSerializerWithOurRegistry(t *testing.T) {
	ctx := context.Background()
	reg := srtest.Start(t)
	v1 := readSchema(t, "pageview.avsc")
	lookup, _ := schema.NewSerializer(reg.Client, schema.SerializerConfig{Schema: v1, LookupOnly: true})
	if _, err := lookup.Serialize(ctx, "pageviews", pageView(0)); err == nil || !strings.Contains(err.Error(), "40401") && !strings.Contains(err.Error(), "not found") {
		t.Errorf("lookup before registration: %v", err)
	}
	reg1, _ := schema.NewSerializer(reg.Client, schema.SerializerConfig{Schema: v1})
	if _, err := reg1.Serialize(ctx, "pageviews", pageView(0)); err != nil {
		t.Fatal(err)
	}
	lookup, _ = schema.NewSerializer(reg.Client, schema.SerializerConfig{Schema: v1, LookupOnly: true})
	if _, err := lookup.Serialize(ctx, "pageviews", pageView(0)); err != nil {
		t.Errorf("lookup after registration: %v", err)
	}
	// A new required field breaks BACKWARD: the serializer says why.
	broken := strings.Replace(v1, `{"name": "memberId", "type": "long"`, `{"name": "mandatory", "type": "string"}, {"name": "memberId", "type": "long"`, 1)
	bad, err := schema.NewSerializer(reg.Client, schema.SerializerConfig{Schema: broken})
	if err != nil {
		t.Fatal(err)
	}
	_, err = bad.Serialize(ctx, "pageviews", pageView(0))
	if err == nil || !strings.Contains(err.Error(), "incompatible") || !strings.Contains(err.Error(), "mandatory") {
		t.Errorf("incompatible schema: %v", err)
	}
}
