package broker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
)

// BenchmarkEndToEndLatency is the latency test users run against Kafka:
// one kgo producer at 1,000 messages/s with 200-byte records and one kgo
// consumer, both on loopback against an in-process broker; each record
// carries its send time and the consumer reports the p50 and p99 of
// (receive - send). Consumers see only fsynced data, so this measures the
// flush policy as much as the network path. b.N is the number of messages.
//
//	go test -run '^$' -bench BenchmarkEndToEndLatency -benchtime 3000x ./broker/
func BenchmarkEndToEndLatency(b *testing.B) {
	for _, policy := range []string{"continuous", "interval"} {
		for _, acks := range []string{"1", "all"} {
			b.Run(fmt.Sprintf("flush=%s/acks=%s", policy, acks), func(b *testing.B) {
				br := testenv.StartBroker(b, testenv.WithConfig(func(c *broker.Config) {
					c.Log.IntervalFlush = policy == "interval"
				}))
				benchEndToEnd(b, br.Addr, acks)
			})
		}
	}
}

// BenchmarkEndToEndLatencyCluster is the same test against a two-broker
// cluster on a real ZooKeeper: the producer and the consumer reach the
// partition's broker through Metadata, and the flush rule is the same, so
// the figures should match the standalone ones.
//
//	go test -run '^$' -bench BenchmarkEndToEndLatencyCluster -benchtime 3000x ./broker/
func BenchmarkEndToEndLatencyCluster(b *testing.B) {
	for _, acks := range []string{"1", "all"} {
		b.Run("acks="+acks, func(b *testing.B) {
			_, brokers := testenv.StartCluster(b, 2)
			benchEndToEnd(b, brokers[1].Addr, acks)
		})
	}
}

func benchEndToEnd(b *testing.B, addr, acks string) {
	const topic = "latency"
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(), kgo.ProducerLinger(0)}
	if acks == "1" {
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	}
	prod, err := kgo.NewClient(opts...)
	if err != nil {
		b.Fatal(err)
	}
	defer prod.Close()
	ctx := context.Background()
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("warm-up")}).FirstErr(); err != nil {
		b.Fatal(err)
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()), kgo.FetchMaxWait(time.Second))
	if err != nil {
		b.Fatal(err)
	}
	defer cons.Close()
	// Let the consumer find its partition and sit at the end before the
	// timed sends begin (this poll returns empty when its context ends).
	warm, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	cons.PollRecords(warm, 1)
	cancel()

	testenv.MeasureLatency(b, prod, cons)
}
