package schema_test

import (
	"context"
	"testing"

	"github.com/tributary-io/tributary/schema"
)

// BenchmarkHeaderCheck: what the loader spends per page view to make sure
// the body is one whole value of its writer schema and to read its header
// time, the walk it runs on every record it loads (CheckTime; before it,
// Check and then Time walked the body twice):
//
//	go test -run '^$' -bench BenchmarkHeaderCheck -benchmem ./schema/
func BenchmarkHeaderCheck(b *testing.B) {
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
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := l.CheckTime(body); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/record")
}
