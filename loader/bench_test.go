package loader_test

import (
	"context"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/loadertest"
)

// BenchmarkLoad measures a whole run, broker to warehouse, of 200k page
// views (4 partitions, 3 hours) into a fresh local or HDFS warehouse:
//
//	go test -run '^$' -bench BenchmarkLoad -benchtime 3x ./loader/
//
// records/s counts records loaded; MB/s is Kafka record value bytes read
// per second (the Avro files written are smaller: deflate).
func BenchmarkLoad(b *testing.B) {
	const n = 200_000
	env := loadertest.Start(b)
	env.CreateTopic(b, "bench", 4)
	from := time.Now().UTC().Truncate(time.Hour).Add(-4 * time.Hour)
	env.Produce(b, "bench", loadertest.Schema(b, "pageview"), loadertest.PageViews(0, n, 4, from, 3*time.Hour))
	kinds := []struct {
		name string
		url  func(b *testing.B) string
	}{
		{"local", func(b *testing.B) string { return "file://" + b.TempDir() }},
		{"hdfs", func(b *testing.B) string { return testenv.HDFSWarehouse(b) }},
	}
	for _, kind := range kinds {
		for _, codec := range []string{"deflate", "snappy"} {
			b.Run(kind.name+"/"+codec, func(b *testing.B) {
				kind.url(b) // start HDFS outside the timing
				var records, in, out int64
				b.ResetTimer()
				for range b.N {
					b.StopTimer()
					url := kind.url(b)
					b.StartTimer()
					sum, err := loader.Run(context.Background(), loader.Config{
						Brokers: env.Brokers, RegistryURL: env.RegistryURL, Topics: []string{"bench"},
						Warehouse: url, Codec: codec, Logger: quiet,
					})
					if err != nil {
						b.Fatal(err)
					}
					records += sum.Records
					in += sum.InputBytes
					out += sum.Bytes
				}
				secs := b.Elapsed().Seconds()
				b.ReportMetric(float64(records)/secs, "records/s")
				b.ReportMetric(float64(in)/secs/1e6, "MB/s")
				b.ReportMetric(float64(out)/float64(in), "out/in")
			})
		}
	}
}
