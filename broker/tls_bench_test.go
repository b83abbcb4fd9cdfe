package broker_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/broker"
)

// BenchmarkFetchOverTLS measures what TLS costs a consumer: one kgo client
// reads 1 KiB records from the page cache through a PLAINTEXT listener
// (sendfile) and through an SSL listener of the same broker (records read
// into a buffer, encrypted, written), fetching up to 1 MiB per request.
// MB/s is the record bytes consumed per second.
//
//	go test -run '^$' -bench BenchmarkFetchOverTLS -benchtime 200000x ./broker/
//
// Kernel TLS (the kernel encrypting after a handshake done in Go, so that
// sendfile works again) was looked at and not built: Go's crypto/tls has no
// kTLS, and the development machine's kernel (6.18, CONFIG_TLS not set)
// offers no "tls" in /proc/sys/net/ipv4/tcp_available_ulp, so there was
// nothing to measure. Worth measuring on a kernel that lists "tls" there.
func BenchmarkFetchOverTLS(b *testing.B) {
	pki := newTestPKI(b)
	_, addrs := startListeners(b, func(c *broker.Config) {
		c.TLS = broker.TLSFiles{CertFile: pki.certFile, KeyFile: pki.keyFile}
	}, broker.Plaintext, broker.SSL)
	const valueSize = 1 << 10
	for _, proto := range []broker.SecurityProtocol{broker.Plaintext, broker.SSL} {
		b.Run(string(proto), func(b *testing.B) {
			var opts []kgo.Opt
			if proto == broker.SSL {
				opts = append(opts, kgo.DialTLSConfig(pki.clientTLS(b, false)))
			}
			topic := "tls-bench-" + string(proto)
			prod, err := kgo.NewClient(append(opts, kgo.SeedBrokers(addrs[proto]), kgo.DefaultProduceTopic(topic),
				kgo.AllowAutoTopicCreation(), kgo.ProducerBatchCompression(kgo.NoCompression()))...)
			if err != nil {
				b.Fatal(err)
			}
			value := bytes.Repeat([]byte("z"), valueSize)
			for range b.N {
				prod.Produce(context.Background(), &kgo.Record{Value: value}, nil)
			}
			if err := prod.Flush(context.Background()); err != nil {
				b.Fatal(err)
			}
			prod.Close()

			cons, err := kgo.NewClient(append(opts, kgo.SeedBrokers(addrs[proto]), kgo.ConsumeTopics(topic),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(1<<20), kgo.FetchMaxPartitionBytes(1<<20))...)
			if err != nil {
				b.Fatal(err)
			}
			defer cons.Close()
			b.SetBytes(valueSize)
			b.ResetTimer()
			for seen := 0; seen < b.N; {
				fs := cons.PollFetches(context.Background())
				if err := fs.Err(); err != nil {
					b.Fatal(err)
				}
				seen += fs.NumRecords()
			}
		})
	}
}
