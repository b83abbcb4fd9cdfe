package schema_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/schema"
	"github.com/tributary-io/tributary/schema/internal/avsc"
)

// TestEventSchemasEmbedTheHeader: every event schema in testdata carries
// header.avsc, unchanged, as its field "header".
func TestEventSchemasEmbedTheHeader(t *testing.T) {
	header, err := avsc.Parse(readSchema(t, "header.avsc"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"pageview.avsc", "pageview-v2.avsc", "servicecall.avsc"} {
		ev, err := avsc.Parse(readSchema(t, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !strings.Contains(ev.Key, `"fields":[{"name":"header","type":`+header.Key+`}`) {
			t.Errorf("%s: the first field is not header.avsc:\n%s", name, ev.Key)
		}
	}
}

// TestSerializerFillsHeader: what the application leaves empty or zero is
// filled in (time now, this host, the configured service, a random guid);
// what it sets is kept; its own value is never modified.
func TestSerializerFillsHeader(t *testing.T) {
	ctx := context.Background()
	now := time.UnixMilli(1_800_000_000_000)
	reg := newStaticRegistry()
	ser, err := schema.NewSerializer(reg, schema.SerializerConfig{
		Schema:  readSchema(t, "servicecall.avsc"),
		Service: "search",
		Now:     func() time.Time { return now },
	})
	if err != nil {
		t.Fatal(err)
	}
	de, _ := schema.NewDeserializer(reg, schema.DeserializerConfig{})
	host, _ := os.Hostname()

	call := func(header any) map[string]any {
		m := map[string]any{
			"callee": "profile", "method": "get", "latencyMicros": int64(1500), "status": "OK",
			"requestBytes": int64(10), "responseBytes": int64(2000), "error": nil,
		}
		if header != nil {
			m["header"] = header
		}
		return m
	}
	decodeHeader := func(v any) map[string]any {
		t.Helper()
		b, err := ser.Serialize(ctx, "calls", v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := de.Deserialize(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		return got.(map[string]any)["header"].(map[string]any)
	}

	t.Run("missing", func(t *testing.T) {
		h := decodeHeader(call(nil))
		if !h["time"].(time.Time).Equal(now) || h["server"] != host || h["service"] != "search" {
			t.Errorf("header %v", h)
		}
		if g := h["guid"].([]byte); len(g) != 16 || bytes.Equal(g, make([]byte, 16)) {
			t.Errorf("guid %x", g)
		}
		if g2 := decodeHeader(call(nil))["guid"].([]byte); bytes.Equal(g2, h["guid"].([]byte)) {
			t.Error("two events got the same guid")
		}
	})
	t.Run("partial", func(t *testing.T) {
		in := call(map[string]any{"time": int64(0), "server": "", "service": "checkout"})
		h := decodeHeader(in)
		if !h["time"].(time.Time).Equal(now) || h["server"] != host || h["service"] != "checkout" {
			t.Errorf("header %v", h)
		}
		if in["header"].(map[string]any)["server"] != "" || len(in["header"].(map[string]any)) != 3 {
			t.Errorf("the application's map was modified: %v", in["header"])
		}
	})
	t.Run("complete", func(t *testing.T) {
		given := map[string]any{"time": time.UnixMilli(5).UTC(), "server": "s", "service": "x", "guid": []byte("ffffffffffffffff")}
		h := decodeHeader(call(given))
		if !sameValue(h, given) {
			t.Errorf("header %v, want %v", h, given)
		}
	})
	t.Run("struct", func(t *testing.T) {
		type call struct {
			Header        schema.Header `avro:"header"`
			Callee        string        `avro:"callee"`
			Method        string        `avro:"method"`
			LatencyMicros int64         `avro:"latencyMicros"`
			Status        string        `avro:"status"`
			RequestBytes  int64         `avro:"requestBytes"`
			ResponseBytes int64         `avro:"responseBytes"`
			Error         *string       `avro:"error"`
		}
		in := &call{Callee: "profile", Method: "get", Status: "TIMEOUT", Header: schema.Header{Server: "mine"}}
		h := decodeHeader(in)
		if !h["time"].(time.Time).Equal(now) || h["server"] != "mine" || h["service"] != "search" {
			t.Errorf("header %v", h)
		}
		if in.Header != (schema.Header{Server: "mine"}) {
			t.Errorf("the application's struct was modified: %+v", in.Header)
		}
	})
}

// TestNoHeaderNoFill: a schema without the standard header is encoded as
// given.
func TestNoHeaderNoFill(t *testing.T) {
	ctx := context.Background()
	reg := newStaticRegistry()
	other := `{"type":"record","name":"X","fields":[{"name":"header","type":"string"}]}`
	ser, _ := schema.NewSerializer(reg, schema.SerializerConfig{Schema: other})
	b, err := ser.Serialize(ctx, "x", map[string]any{"header": "plain"})
	if err != nil {
		t.Fatal(err)
	}
	de, _ := schema.NewDeserializer(reg, schema.DeserializerConfig{})
	v, err := de.Deserialize(ctx, b)
	if err != nil || v.(map[string]any)["header"] != "plain" {
		t.Errorf("%v %v", v, err)
	}
	if _, ok := schema.HeaderTime(v); ok {
		t.Error("HeaderTime found a time in a string header")
	}
}

func TestHeaderTime(t *testing.T) {
	ts := time.UnixMilli(1_234_567).UTC()
	for _, tc := range []struct {
		name string
		v    any
		want int64
		ok   bool
	}{
		{"decoded map", map[string]any{"header": map[string]any{"time": ts}}, 1_234_567, true},
		{"map with millis", map[string]any{"header": map[string]any{"time": int64(99)}}, 99, true},
		{"struct", struct {
			H schema.Header `avro:"header"`
		}{schema.Header{Time: 7}}, 7, true},
		{"pointer to struct with *Header", &struct {
			H *schema.Header `avro:"header"`
		}{&schema.Header{Time: 8}}, 8, true},
		{"nil *Header", struct {
			H *schema.Header `avro:"header"`
		}{}, 0, false},
		{"no header", map[string]any{"x": 1}, 0, false},
		{"zero time", map[string]any{"header": map[string]any{"time": time.Time{}}}, 0, false},
		{"not a record", "x", 0, false},
		{"nil", nil, 0, false},
	} {
		got, ok := schema.HeaderTime(tc.v)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: %d, %v; want %d, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}
