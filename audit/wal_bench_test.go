package audit_test

import (
	"os"
	"testing"
	"time"

	"github.com/tributary-io/tributary/audit"
	"github.com/tributary-io/tributary/audit/internal/audittest"
	"github.com/tributary-io/tributary/schema"
)

// BenchmarkProducerWAL is what --audit-wal costs an audited producer: the
// same events through audit.Producer without and with a WAL (an intent
// written per record before it is sent, acknowledgements 64 at a time),
// to an in-process broker.
//
//	go test -run '^$' -bench ProducerWAL -benchtime 20000x ./audit/
func BenchmarkProducerWAL(b *testing.B) {
	env := audittest.Start(b)
	text, err := os.ReadFile(pageviewSchema)
	if err != nil {
		b.Fatal(err)
	}
	ws := pastWindows(1)
	for _, withWAL := range []bool{false, true} {
		name := "none"
		if withWAL {
			name = "wal"
		}
		b.Run(name, func(b *testing.B) {
			cfg := audit.PublisherConfig{Client: audittest.Client(b, env.Broker.Addr), Registry: env.Registry, Host: "fe-1", FlushInterval: time.Hour, Logger: quietLog}
			if withWAL {
				w, err := audit.OpenWAL(b.TempDir(), audit.WALOptions{Logger: quietLog})
				if err != nil {
					b.Fatal(err)
				}
				cfg.WAL = w
			}
			pub, err := audit.NewPublisher(cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer pub.Close(b.Context())
			ser, err := schema.NewSerializer(env.Registry, schema.SerializerConfig{Schema: string(text), Service: "web", Server: "fe-1"})
			if err != nil {
				b.Fatal(err)
			}
			prod, err := audit.NewProducer(audittest.Client(b, env.Broker.Addr), ser, pub)
			if err != nil {
				b.Fatal(err)
			}
			ev := map[string]any{"header": map[string]any{"time": ws[0]}, "memberId": int64(1), "pageKey": "home"}
			b.ResetTimer()
			for range b.N {
				if err := prod.Produce(b.Context(), "bench-"+name, ev, nil); err != nil {
					b.Fatal(err)
				}
			}
			if err := prod.Flush(b.Context()); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
