package schema_test

import (
	"context"
	"testing"

	"github.com/tributary-io/tributary/schema"
)

// Serializer and deserializer throughput for the page-view schema. The
// registry is consulted once per subject or id and cached, so these
// measure encoding and decoding. records/s is per core.

func BenchmarkSerialize(b *testing.B) {
	ctx := context.Background()
	pv := readSchema(b, "pageview.avsc")
	ser, err := schema.NewSerializer(newStaticRegistry(), schema.SerializerConfig{Schema: pv, Service: "frontend"})
	if err != nil {
		b.Fatal(err)
	}
	ref := "https://example.com/search?q=kafka"
	inputs := map[string]any{
		"map":               pageView(1),
		"map, header empty": func() map[string]any { m := pageView(1); delete(m, "header"); return m }(),
		"struct":            &pageViewV1{Header: schema.Header{Time: 1, Server: "s", Service: "x", GUID: [16]byte{1}}, MemberID: 1, PageKey: "profile", Referrer: &ref, Locale: "en_US", DurationMs: 42},
	}
	for _, name := range []string{"map", "map, header empty", "struct"} {
		v := inputs[name]
		b.Run(name, func(b *testing.B) {
			var buf []byte
			b.ReportAllocs()
			for b.Loop() {
				if buf, err = ser.AppendSerialize(ctx, buf[:0], "pageviews", v); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(len(buf)))
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

func BenchmarkDeserialize(b *testing.B) {
	ctx := context.Background()
	pv, pv2 := readSchema(b, "pageview.avsc"), readSchema(b, "pageview-v2.avsc")
	reg := newStaticRegistry(pv)
	ser, _ := schema.NewSerializer(reg, schema.SerializerConfig{Schema: pv})
	value, err := ser.Serialize(ctx, "pageviews", pageView(1))
	if err != nil {
		b.Fatal(err)
	}
	plain, _ := schema.NewDeserializer(reg, schema.DeserializerConfig{})
	evolving, _ := schema.NewDeserializer(reg, schema.DeserializerConfig{ReaderSchema: pv2})

	run := func(name string, fn func() error) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(value)))
			for b.Loop() {
				if err := fn(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
	run("map", func() error { _, err := plain.Deserialize(ctx, value); return err })
	run("struct", func() error { var v pageViewV1; return plain.DeserializeInto(ctx, value, &v) })
	run("map, resolved to v2", func() error { _, err := evolving.Deserialize(ctx, value); return err })
	run("struct, resolved to v2", func() error { var v pageViewV2; return evolving.DeserializeInto(ctx, value, &v) })
}

// BenchmarkHeaderLayout: what the loader spends on a page view instead of
// decoding it (CheckTime; Check then Time before it), next to the decode
// it replaced:
//
//	go test -run '^$' -bench BenchmarkHeaderLayout -benchmem ./schema/
func BenchmarkHeaderLayout(b *testing.B) {
	ctx := context.Background()
	pv := readSchema(b, "pageview.avsc")
	reg := newStaticRegistry(pv)
	ser, _ := schema.NewSerializer(reg, schema.SerializerConfig{Schema: pv})
	value, err := ser.Serialize(ctx, "pageviews", pageView(1))
	if err != nil {
		b.Fatal(err)
	}
	des, _ := schema.NewDeserializer(reg, schema.DeserializerConfig{})
	l, err := schema.NewHeaderLayouts(des, "").Get(ctx, 1)
	if err != nil {
		b.Fatal(err)
	}
	body := value[schema.HeaderSize:]
	run := func(name string, fn func() error) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(value)))
			for b.Loop() {
				if err := fn(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
	run("Read", func() error { _, _, err := l.Read(body); return err })
	run("Check", func() error { return l.Check(body) })
	run("Check+Time", func() error {
		if err := l.Check(body); err != nil {
			return err
		}
		_, err := l.Time(body)
		return err
	})
	run("CheckTime", func() error { _, err := l.CheckTime(body); return err })
	run("Deserialize", func() error { _, err := des.Deserialize(ctx, value); return err })
}
