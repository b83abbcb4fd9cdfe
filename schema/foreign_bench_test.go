package schema_test

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/proto"

	"github.com/tributary-io/tributary/schema"
	"github.com/tributary-io/tributary/schema/internal/srtest"
)

// BenchmarkConvert measures what the loader and the audit tiers pay per
// Protobuf or JSON Schema record to read it as Avro (HeaderLayouts.Body),
// against the Avro record of the same event, whose body is only walked.
func BenchmarkConvert(b *testing.B) {
	reg := srtest.Start(b)
	ctx := context.Background()
	pb, err := reg.Client.CreateSchema(ctx, "orders-value", sr.Schema{Schema: eventProto, Type: sr.TypeProtobuf})
	if err != nil {
		b.Fatal(err)
	}
	_, m := orderMessage(&testing.T{})
	msg, _ := proto.Marshal(m)
	js, err := reg.Client.CreateSchema(ctx, "j-value", sr.Schema{Type: sr.TypeJSON, Schema: `{"type":"object","required":["header","id"],
	  "properties": {"header": {"type":"object","properties":{"time":{"type":"integer"},"server":{"type":"string"}},"required":["time"]},
	    "id": {"type":"string"}, "lines": {"type":"array","items":{"type":"object","properties":{"sku":{"type":"string"},"qty":{"type":"integer"}}}},
	    "notes": {"type":"object","additionalProperties":{"type":"string"}}, "voucher": {"type":"integer"}, "state": {"type":"string"},
	    "placed": {"type":"string","format":"date-time"}, "big": {"type":"integer"}, "ratio": {"type":"number"}, "gift": {"type":"boolean"}}}`})
	if err != nil {
		b.Fatal(err)
	}
	doc := []byte(`{"header":{"time":1700000000123,"server":"web-1"},"id":"o-1","lines":[{"sku":"a","qty":3},{"sku":"b","qty":3}],
	  "notes":{"7":"seven"},"voucher":99,"state":"PAID","placed":"2023-11-14T22:13:20.123456789Z","big":1099511627776,"ratio":0.5,"gift":true}`)
	for _, c := range []struct {
		name string
		id   int
		body []byte
	}{
		{"protobuf", pb.ID, protoEnvelope(pb.ID, []int{1}, msg)[5:]},
		{"json", js.ID, doc},
	} {
		b.Run(c.name, func(b *testing.B) {
			de, _ := schema.NewDeserializer(reg.Client, schema.DeserializerConfig{})
			layouts := schema.NewHeaderLayouts(de, "")
			b.SetBytes(int64(len(c.body)))
			b.ReportAllocs()
			for b.Loop() {
				l, _, body, err := layouts.Body(ctx, c.id, c.body)
				if err != nil {
					b.Fatal(err)
				}
				if _, _, err := l.CheckRead(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
