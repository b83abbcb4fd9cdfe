package loader_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/loadertest"
	"github.com/tributary-io/tributary/schema"
)

// BenchmarkLoadProtobuf loads page views written as Protobuf records (the
// fields of testdata/schemas/pageview.avsc) into a local warehouse, as
// Avro files and as Parquet files: beside BenchmarkLoad's Avro page views,
// what converting each record to Avro costs a load.
//
//	go test -run '^$' -bench 'BenchmarkLoadProtobuf' -benchtime 3x ./loader/
func BenchmarkLoadProtobuf(b *testing.B) {
	const n = 100_000
	env := loadertest.Start(b)
	env.CreateTopic(b, "pbbench", 4)
	ss, err := env.Registry.CreateSchema(context.Background(), "pbbench-value", sr.Schema{Type: sr.TypeProtobuf, Schema: `syntax = "proto3";
package bench;
message Header { int64 time = 1; string server = 2; string service = 3; bytes guid = 4; }
message PageView { Header header = 1; int64 memberId = 2; string pageKey = 3; string locale = 4; int32 durationMs = 5; optional string referrer = 6; }`})
	if err != nil {
		b.Fatal(err)
	}
	from := time.Now().UTC().Truncate(time.Hour).Add(-4 * time.Hour).UnixMilli()
	for p := range int32(4) {
		values := make([][]byte, 0, n/4)
		for i := int(p); i < n; i += 4 {
			h := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), uint64(from+int64(i)*100))
			h = protowire.AppendString(protowire.AppendTag(h, 2, protowire.BytesType), fmt.Sprint("web-", i%8))
			h = protowire.AppendString(protowire.AppendTag(h, 3, protowire.BytesType), "frontend")
			h = protowire.AppendBytes(protowire.AppendTag(h, 4, protowire.BytesType), []byte(fmt.Sprintf("%016d", i)))
			v := append(schema.AppendEnvelope(nil, ss.ID), 2, 2) // message index [1]
			v = protowire.AppendBytes(protowire.AppendTag(v, 1, protowire.BytesType), h)
			v = protowire.AppendVarint(protowire.AppendTag(v, 2, protowire.VarintType), uint64(i))
			v = protowire.AppendString(protowire.AppendTag(v, 3, protowire.BytesType), fmt.Sprint("page-", i%97))
			v = protowire.AppendString(protowire.AppendTag(v, 4, protowire.BytesType), "en_US")
			v = protowire.AppendVarint(protowire.AppendTag(v, 5, protowire.VarintType), uint64(i%5000))
			values = append(values, v)
		}
		env.ProduceRaw(b, "pbbench", p, values...)
	}
	for _, format := range []string{loader.FormatAvro, loader.FormatParquet} {
		b.Run(format, func(b *testing.B) {
			var records int64
			for range b.N {
				b.StopTimer()
				url := "file://" + b.TempDir()
				b.StartTimer()
				sum, err := loader.Run(context.Background(), loader.Config{Brokers: env.Brokers, RegistryURL: env.RegistryURL,
					Topics: []string{"pbbench"}, Warehouse: url, Format: format, Logger: quiet})
				if err != nil {
					b.Fatal(err)
				}
				if sum.Errors != 0 {
					b.Fatalf("%d records refused", sum.Errors)
				}
				records += sum.Records
			}
			b.ReportMetric(float64(records)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
