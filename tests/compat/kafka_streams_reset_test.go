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

// kafka-streams-application-reset (Kafka 4.4's StreamsResetter) resets a
// stopped Streams application on Tributary: it moves the application's
// committed input offsets back to the start and deletes its internal
// topics (repartition and changelog). The application started again (with
// a fresh state directory, as the tool's documentation asks) reprocesses
// every record from the start: its counts are computed anew, not added to
// the old ones.
func TestKafkaStreamsApplicationReset(t *testing.T) {
	testenv.Needs(t, testenv.JVM)
	b := testenv.StartBroker(t)
	const app, input, output = "resettable", "reset-lines", "reset-counts"
	brokertest.CreateTopic(t, b.Addr, input, 2, nil)
	brokertest.CreateTopic(t, b.Addr, output, 2, nil)
	lines := []string{"to be or not to be", "that is the question", "to sleep perchance to dream"}
	want := map[string]int64{}
	updates := 0
	for _, l := range lines {
		for _, w := range strings.Fields(l) {
			want[w]++
			updates++
		}
	}
	producer := brokertest.NewClient(t, b.Addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i, l := range lines {
		if err := producer.ProduceSync(context.Background(), &kgo.Record{Topic: input, Partition: int32(i % 2), Value: []byte(l)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	first := testenv.StartKafkaStreamsWordCount(t, b.Addr, app, input, output)
	if got := readCounts(t, b.Addr, output, want, first); !maps.Equal(got, want) {
		t.Fatalf("first run: %v, want %v", got, want)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	firstRun := outputEnd(t, b.Addr, output)

	// Streams closes without leaving its group (its consumer's members
	// stay until their session ends, so that a restart does not
	// rebalance): the tool refuses while they are there, as on Kafka, and
	// --force removes them first (RemoveMembersFromConsumerGroup).
	repartition, changelog := app+"-words-repartition", app+"-counts-changelog"
	reset := testenv.KafkaToolRun{Class: "org.apache.kafka.tools.StreamsResetter", Args: []string{
		"--bootstrap-server", b.Addr, "--application-id", app, "--input-topics", input}}
	force := reset
	force.Args = append(append([]string{}, reset.Args...), "--force")
	res := testenv.RunKafkaTools(t, reset, force)
	if res[0].Exit == 0 || !strings.Contains(res[0].Stdout+res[0].Stderr, "still active") {
		t.Errorf("kafka-streams-application-reset while the members' sessions last: want a refusal naming the active members:\n%v", res[0])
	}
	if res[1].Exit != 0 {
		t.Fatalf("kafka-streams-application-reset --force:\n%v", res[1])
	}
	t.Logf("kafka-streams-application-reset --force:\n%s", res[1].Stdout)

	adm, _ := brokertest.NewAdmin(t, b.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, internal := range []string{repartition, changelog} {
		if topics.Has(internal) {
			t.Errorf("internal topic %s still exists after the reset", internal)
		}
	}
	offs := brokertest.Committed(t, b.Addr, app)
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic != input || o.At != 0 {
			t.Errorf("after the reset the application has %s/%d committed at %d; want only its input, at 0", o.Topic, o.Partition, o.At)
		}
	})

	second := testenv.StartKafkaStreamsWordCount(t, b.Addr, app, input, output)
	again := readUpdatesAfter(t, b.Addr, output, firstRun, updates, second)
	if !maps.Equal(again, want) {
		t.Fatalf("counts after the reset: %v, want %v (counted anew from the start, not added to the first run's)", again, want)
	}
	if err := second.Close(); err != nil {
		t.Fatal(err)
	}
}

// outputEnd is the end offset of each partition of topic.
func outputEnd(t *testing.T, addr, topic string) map[int32]int64 {
	t.Helper()
	adm, _ := brokertest.NewAdmin(t, addr)
	ends, err := adm.ListEndOffsets(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	ends.Each(func(e kadm.ListedOffset) { out[e.Partition] = e.Offset })
	return out
}

// readUpdatesAfter reads topic's count updates written after the offsets
// in from until there are n of them, and returns each word's latest count.
// It fails the test if the application exits first or that takes 90 s.
func readUpdatesAfter(t *testing.T, addr, topic string, from map[int32]int64, n int, app *testenv.KafkaStreamsApp) map[string]int64 {
	t.Helper()
	start := map[string]map[int32]kgo.Offset{topic: {}}
	for p, o := range from {
		start[topic][p] = kgo.NewOffset().At(o)
	}
	cl := brokertest.NewClient(t, addr, kgo.ConsumePartitions(start))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	got := map[string]int64{}
	seen := 0
	for seen < n {
		fs := cl.PollFetches(ctx)
		select {
		case <-app.Done():
			t.Fatalf("the Kafka Streams application exited after %d of %d count updates", seen, n)
		default:
		}
		if ctx.Err() != nil {
			t.Fatalf("%d of %d count updates within 90 s: %v", seen, n, got)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if len(r.Value) != 8 {
				t.Fatalf("count of %q is %d bytes, want an 8-byte long", r.Key, len(r.Value))
			}
			got[string(r.Key)] = int64(binary.BigEndian.Uint64(r.Value))
			seen++
		})
	}
	t.Logf("%d count updates after the reset: %s", seen, fmt.Sprint(got))
	return got
}
