package compat_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/brokertest"
	"github.com/tributary-io/tributary/internal/testenv"
)

// A stateful Kafka Streams 4.4 application runs on Tributary and computes
// the right result: a word count, whose grouping by word repartitions the
// stream through an internal topic and whose count keeps its state in a
// store backed by a compacted changelog topic. Streams creates both
// topics, produces to and reads from the repartition topic, deletes its
// processed records (DeleteRecords), and commits its offsets in its
// consumer group; the final count of every word must be exact.
func TestKafkaStreamsWordCount(t *testing.T) {
	testenv.Needs(t, testenv.JVM)
	b := testenv.StartBroker(t)
	const app, input, output = "wordcount", "streams-lines", "streams-counts"
	brokertest.CreateTopic(t, b.Addr, input, 2, nil)
	brokertest.CreateTopic(t, b.Addr, output, 2, nil)

	// Lines spread over both input partitions, so that the words of one
	// key meet only after the repartition.
	lines := []string{
		"the quick brown fox", "jumps over the lazy dog",
		"The dog barks", "the fox runs",
		"Quick quick QUICK", "a lazy afternoon for the dog",
	}
	want := map[string]int64{}
	for _, l := range lines {
		for _, w := range strings.Fields(strings.ToLower(l)) {
			want[w]++
		}
	}
	producer := brokertest.NewClient(t, b.Addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i, l := range lines {
		r := &kgo.Record{Topic: input, Partition: int32(i % 2), Value: []byte(l)}
		if err := producer.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	streams := testenv.StartKafkaStreamsWordCount(t, b.Addr, app, input, output)
	got := readCounts(t, b.Addr, output, want, streams)
	if !maps.Equal(got, want) {
		t.Fatalf("word counts in %s:\n got %v\nwant %v", output, got, want)
	}
	waitRepartitionPurged(t, b.Addr, app+"-words-repartition", streams)
	if err := streams.Close(); err != nil {
		t.Fatal(err)
	}

	// The internal topics Streams created: the repartition topic has the
	// input's partitions and deletes; the changelog compacts.
	adm, _ := brokertest.NewAdmin(t, b.Addr)
	ctx := context.Background()
	repartition, changelog := app+"-words-repartition", app+"-counts-changelog"
	details, err := adm.ListTopics(ctx, repartition, changelog)
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{repartition, changelog} {
		d, ok := details[topic]
		if !ok || d.Err != nil {
			t.Fatalf("Streams' internal topic %s: present=%v err=%v", topic, ok, d.Err)
		}
		if n := len(d.Partitions); n != 2 {
			t.Errorf("%s has %d partitions, want 2 (the input's)", topic, n)
		}
	}
	for topic, policy := range map[string]string{repartition: "delete", changelog: "compact"} {
		rcs, err := adm.DescribeTopicConfigs(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		if c := brokertest.ConfigsByName(t, rcs, topic)["cleanup.policy"]; c.MaybeValue() != policy {
			t.Errorf("%s has cleanup.policy=%s, want %s", topic, c.MaybeValue(), policy)
		}
	}
}

// readCounts reads the word counts in topic from its start, keeping each
// word's latest count, until they are want. It fails the test if the
// Streams application exits first, or if that takes over 90 seconds.
func readCounts(t *testing.T, addr, topic string, want map[string]int64, app *testenv.KafkaStreamsApp) map[string]int64 {
	t.Helper()
	cl := brokertest.NewClient(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	go func() {
		select {
		case <-app.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	got := map[string]int64{}
	for !maps.Equal(got, want) {
		fs := cl.PollFetches(ctx)
		select {
		case <-app.Done():
			t.Fatalf("the Kafka Streams application exited before the counts were complete; counts so far %v", got)
		default:
		}
		if ctx.Err() != nil {
			t.Fatalf("the word counts were not complete within 90 s:\n got %v\nwant %v", got, want)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if len(r.Value) != 8 {
				t.Fatalf("count of %q is %d bytes, want an 8-byte long", r.Key, len(r.Value))
			}
			got[string(r.Key)] = int64(binary.BigEndian.Uint64(r.Value))
		})
	}
	return got
}

// waitRepartitionPurged waits until Streams has deleted every record of
// its repartition topic (start offset = end offset > 0 on each partition),
// which it does once it has processed and committed them. It fails the
// test if the application exits first, or if that takes over 30 seconds.
func waitRepartitionPurged(t *testing.T, addr, topic string, app *testenv.KafkaStreamsApp) {
	t.Helper()
	adm, _ := brokertest.NewAdmin(t, addr)
	ctx := context.Background()
	testenv.Eventuallyf(t, 30*time.Second, func() (bool, string) {
		select {
		case <-app.Done():
			t.Fatalf("the Kafka Streams application exited before it deleted %s's records", topic)
		default:
		}
		starts, err := adm.ListStartOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		purged := len(ends[topic]) > 0
		ends.Each(func(end kadm.ListedOffset) {
			start, _ := starts.Lookup(topic, end.Partition)
			purged = purged && end.Err == nil && start.Err == nil && end.Offset > 0 && start.Offset == end.Offset
		})
		return purged, fmt.Sprintf("Streams did not delete the processed records of %s: start offsets %v, end offsets %v", topic, starts, ends)
	})
}
