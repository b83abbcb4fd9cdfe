package broker_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testenv"
)

// Kafka Streams 4.4's word count with processing.guarantee=exactly_once_v2
// (its repartition and changelog topics written in transactions) counts
// exactly, with kill -9 of the broker process (the transaction
// coordinator) and then of the application between batches of input:
// read_committed, every word's last count is its true count, and no count
// ever read is above it (nothing counted twice).
func TestKafkaStreamsWordCountExactlyOnce(t *testing.T) {
	testenv.Needs(t, testenv.JVM)
	dataDir, addr := t.TempDir(), testenv.FreeAddr(t)
	proc := startStandalone(t, dataDir, addr)
	const app, input, output = "wordcount-eos", "eos-lines", "eos-counts"
	createTopic(t, addr, input, 2, nil)
	createTopic(t, addr, output, 2, nil)
	want := map[string]int64{}
	batch := func(n int) {
		t.Helper()
		producer := newClient(t, addr, kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
		var recs []*kgo.Record
		for i := range 40 {
			line := fmt.Sprintf("word%d common batch%d", i%7, n)
			for _, w := range strings.Fields(line) {
				want[w]++
			}
			recs = append(recs, &kgo.Record{Topic: input, Value: []byte(line)})
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := producer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		producer.Close()
	}

	streams := testenv.StartKafkaStreamsWordCount(t, addr, app, input, output, "exactly_once_v2")
	batch(1)
	readCommittedCounts(t, addr, output, want, streams)

	proc.Kill() // the coordinator of every transaction, and every partition's leader
	proc = startStandalone(t, dataDir, addr)
	batch(2)
	readCommittedCounts(t, addr, output, want, streams)

	streams.Kill() // its open transaction is left for the coordinator to abort
	streams = testenv.StartKafkaStreamsWordCount(t, addr, app, input, output, "exactly_once_v2")
	batch(3)
	readCommittedCounts(t, addr, output, want, streams)
	if err := streams.Close(); err != nil {
		t.Fatal(err)
	}
	_ = proc
}

// readCommittedCounts reads the counts in topic from the start at
// read_committed until every word's latest count is want's, failing on a
// count above want's (counted twice) or after two minutes.
func readCommittedCounts(t *testing.T, addr, topic string, want map[string]int64, app *testenv.KafkaStreamsApp) {
	t.Helper()
	cl := newClient(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(300*time.Millisecond))
	defer cl.Close()
	got := map[string]int64{}
	deadline := time.Now().Add(2 * time.Minute)
	for !maps.Equal(got, want) {
		select {
		case <-app.Done():
			t.Fatalf("the Kafka Streams application exited; counts so far %v\n%s", got, app.Output())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the word counts were not complete within 2 minutes:\n got %v\nwant %v", got, want)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			n := int64(binary.BigEndian.Uint64(r.Value))
			if n > want[string(r.Key)] {
				t.Fatalf("%q counted %d times, more than the %d it occurs: counted twice", r.Key, n, want[string(r.Key)])
			}
			got[string(r.Key)] = n
		})
	}
}
