package mirror_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/mirror"
	"github.com/tributary-io/tributary/producer"
)

// BenchmarkMirror measures the mirror's copy rate between two clusters on
// this machine against the raw acks=all produce rate of the same target, in
// the same run, with the same records (12 partitions, 100-byte values):
//
//	go test -run '^$' -bench Mirror -benchtime 1x ./mirror/
//
// Everything (source broker, target broker, mirror, producer) shares this
// process and its cores, so the two figures compete for the same machine.
func BenchmarkMirror(b *testing.B) {
	const (
		partitions = 12
		perPart    = 50000
		total      = partitions * perPart
		recordSize = valueSize + 9 // value plus a key of about 9 bytes
	)
	d := startDC(b, "dc1", 1)
	target := testenv.StartBroker(b)
	tcl := newClient(b, []string{target.Addr}, kgo.MetadataMinAge(10*time.Millisecond))
	for i := range b.N {
		topic := fmt.Sprintf("bench-%d", i)
		createTopic(b, d.addrs(), topic, partitions)
		produce(b, d.addrs(), "dc1", topic, partitions, 0, perPart)

		// Raw: the mirror's producer settings, writing straight into the target.
		raw := "raw-" + topic
		createTopic(b, []string{target.Addr}, raw, partitions)
		opts, err := producer.Options(producer.Config{Acks: producer.AcksAll, ClientOptions: []kgo.Opt{kgo.RecordPartitioner(kgo.ManualPartitioner())}})
		if err != nil {
			b.Fatal(err)
		}
		pcl := newClient(b, []string{target.Addr}, opts...)
		recs := make([]*kgo.Record, 0, total) // built before the clock starts, as the mirror's are fetched
		for j := range perPart {
			for p := range int32(partitions) {
				recs = append(recs, testRecord("dc1", raw, p, j))
			}
		}
		start := time.Now()
		for _, r := range recs {
			pcl.Produce(b.Context(), r, nil)
		}
		if err := pcl.Flush(b.Context()); err != nil {
			b.Fatal(err)
		}
		rawRate := total / time.Since(start).Seconds()

		// Mirror: from the start (joining the group, creating the topic
		// included) to the last record acknowledged by the target.
		start = time.Now()
		_, stop := runMirror(b, mirror.Config{Sources: []mirror.Source{d.source()}, Target: []string{target.Addr},
			Topics: "^" + topic + "$", Group: topic, LogInterval: -1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		for {
			if n, _ := endOffsets(b, tcl, topic); n >= total {
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
		mirrorRate := total / time.Since(start).Seconds()
		if err := stop(); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(mirrorRate, "mirror-records/s")
		b.ReportMetric(mirrorRate*recordSize/1e6, "mirror-MB/s")
		b.ReportMetric(rawRate, "raw-produce-records/s")
		b.ReportMetric(rawRate*recordSize/1e6, "raw-produce-MB/s")
		b.ReportMetric(mirrorRate/rawRate, "mirror/raw")
	}
}

// BenchmarkMirrorLatency is the end-to-end latency through the mirror: one
// kgo producer writes 200-byte records at 1,000/s into the source cluster,
// the mirror copies them (acks=all) and a kgo consumer reads them in the
// target; each record carries its send time. The mirror's consumer and
// the target's consumer both see only fsynced data, so this is two flush
// rules and two hops. b.N is the number of records.
//
//	go test -run '^$' -bench BenchmarkMirrorLatency -benchtime 2000x ./mirror/
func BenchmarkMirrorLatency(b *testing.B) {
	const topic = "latency"
	d := startDC(b, "dc1", 1)
	target := testenv.StartBroker(b)
	createTopic(b, d.addrs(), topic, 1)
	createTopic(b, []string{target.Addr}, topic, 1)
	_, stop := runMirror(b, mirror.Config{Sources: []mirror.Source{d.source()}, Target: []string{target.Addr},
		Topics: "^" + topic + "$", LogInterval: -1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer stop()

	prod := newClient(b, d.addrs(), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0),
		kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	cons := newClient(b, []string{target.Addr}, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()))
	ctx := b.Context()
	// One record through before the clock starts: the mirror has joined
	// and the consumer sits at the end.
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("warm-up")}).FirstErr(); err != nil {
		b.Fatal(err)
	}
	waitForCount(b, []string{target.Addr}, topic, 1, time.Minute)
	warm, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	cons.PollRecords(warm, 1)
	cancel()

	testenv.MeasureLatency(b, prod, cons)
}
