package broker_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
)

// stormCreators is how many clients auto-create topics at once in
// BenchmarkProduceDuringTopicStorm.
const stormCreators = 8

// BenchmarkProduceDuringTopicStorm measures produce latency (acks=1, one
// record per request) to an existing topic, alone (storm=off) and while
// stormCreators clients auto-create new topics as fast as the broker takes them
// (storm=on). Creating a topic writes and fsyncs the topic registry; the
// produce path must not wait for that. It reports the median and p99
// produce latency and the topics created; compare the two cases of one run:
//
//	go test -run '^$' -bench BenchmarkProduceDuringTopicStorm -benchtime 20000x ./broker/
func BenchmarkProduceDuringTopicStorm(b *testing.B) {
	for _, storm := range []bool{false, true} {
		b.Run(fmt.Sprintf("storm=%v", map[bool]string{false: "off", true: "on"}[storm]), func(b *testing.B) {
			br := testenv.StartBroker(b, testenv.WithConfig(func(c *broker.Config) { c.MaxTopics = -1; c.MaxPartitions = -1 }))
			ctx := context.Background()
			prod, err := kgo.NewClient(kgo.SeedBrokers(br.Addr), kgo.DefaultProduceTopic("hot"),
				kgo.AllowAutoTopicCreation(), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
				kgo.ProducerLinger(0))
			if err != nil {
				b.Fatal(err)
			}
			defer prod.Close()
			if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("warm")}).FirstErr(); err != nil {
				b.Fatal(err)
			}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			var created atomic.Int64
			if storm {
				creator, err := kgo.NewClient(kgo.SeedBrokers(br.Addr))
				if err != nil {
					b.Fatal(err)
				}
				defer creator.Close()
				for c := range stormCreators {
					wg.Go(func() {
						for i := 0; ; i++ {
							select {
							case <-stop:
								return
							default:
							}
							req := kmsg.NewPtrMetadataRequest()
							rt := kmsg.NewMetadataRequestTopic()
							rt.Topic = kmsg.StringPtr(fmt.Sprintf("storm-%d-%d", c, i))
							req.Topics = append(req.Topics, rt)
							req.AllowAutoTopicCreation = true
							if _, err := req.RequestWith(ctx, creator); err != nil {
								b.Error(err)
								return
							}
							created.Add(1)
						}
					})
				}
				time.Sleep(100 * time.Millisecond) // let the storm start
			}
			lat := make([]time.Duration, 0, b.N)
			value := []byte("v")
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				if err := prod.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			close(stop)
			wg.Wait()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
			b.ReportMetric(float64(created.Load()), "topics-created")
		})
	}
}
