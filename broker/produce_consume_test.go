package broker_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testenv"
)

func newClient(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func createTopic(t *testing.T, addr, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	adm := kadm.NewClient(newClient(t, addr))
	resp, err := adm.CreateTopic(context.Background(), partitions, 1, configs, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("creating topic %s: %v %v %s", topic, err, resp.Err, resp.ErrMessage)
	}
}

// consumeAll reads n records from the start of topic and returns them per
// partition in offset order.
func consumeAll(t *testing.T, addr, topic string, n int) map[int32][]*kgo.Record {
	t.Helper()
	cl := newClient(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	got := map[int32][]*kgo.Record{}
	seen := 0
	for seen < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records before timeout", seen, n)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			got[r.Partition] = append(got[r.Partition], r)
			seen++
		})
	}
	return got
}

// TestProduceConsumeIdempotent sends 100k records over 4 partitions with
// kgo's default (idempotent, acks=all) producer and reads every one back,
// in order per partition, with dense offsets and no duplicates.
func TestProduceConsumeIdempotent(t *testing.T) {
	const n, partitions = 100_000, 4
	b := testenv.StartBroker(t)
	createTopic(t, b.Addr, "pageviews", partitions, nil)
	prod := newClient(t, b.Addr, kgo.DefaultProduceTopic("pageviews"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var produceErr error
	sent := map[int32][]string{}
	for i := range n {
		wg.Add(1)
		v := fmt.Sprintf("view-%06d", i)
		prod.Produce(context.Background(), &kgo.Record{Value: []byte(v)}, func(r *kgo.Record, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				produceErr = err
				return
			}
			sent[r.Partition] = append(sent[r.Partition], string(r.Value))
		})
	}
	wg.Wait()
	if produceErr != nil {
		t.Fatalf("produce: %v", produceErr)
	}
	got := consumeAll(t, b.Addr, "pageviews", n)
	if len(got) != partitions {
		t.Fatalf("records landed in %d partitions, want %d", len(got), partitions)
	}
	for p, recs := range got {
		if len(recs) != len(sent[p]) {
			t.Fatalf("partition %d: consumed %d records, acknowledged %d", p, len(recs), len(sent[p]))
		}
		for i, r := range recs {
			if r.Offset != int64(i) {
				t.Fatalf("partition %d: record %d has offset %d: offsets must be dense", p, i, r.Offset)
			}
			if string(r.Value) != sent[p][i] {
				t.Fatalf("partition %d offset %d: got %q, acknowledged %q there", p, i, r.Value, sent[p][i])
			}
		}
	}
}

// TestCompressedBatchesRoundTrip checks that every codec kgo sends is stored
// and served unchanged: the broker never re-encodes a batch.
func TestCompressedBatchesRoundTrip(t *testing.T) {
	b := testenv.StartBroker(t)
	codecs := map[string]kgo.CompressionCodec{
		"gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
		"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
	}
	for name, codec := range codecs {
		t.Run(name, func(t *testing.T) {
			topic := "compressed-" + name
			createTopic(t, b.Addr, topic, 1, nil)
			prod := newClient(t, b.Addr, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(codec))
			const n = 2000
			var want []string
			var recs []*kgo.Record
			for i := range n {
				v := fmt.Sprintf("%s record %d %x", name, i, sha256.Sum256([]byte{byte(i)}))
				want = append(want, v)
				recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte(v)})
			}
			if err := prod.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
				t.Fatal(err)
			}
			got := consumeAll(t, b.Addr, topic, n)[0]
			for i, r := range got {
				if string(r.Value) != want[i] || string(r.Key) != fmt.Sprint(i) {
					t.Fatalf("record %d: got key %q value %q, want key %d value %q", i, r.Key, r.Value, i, want[i])
				}
			}
		})
	}
}

// TestLongPollReturnsOnFlush checks that a fetch waiting for data returns as
// soon as the data is flushed, not at the end of its MaxWait.
func TestLongPollReturnsOnFlush(t *testing.T) {
	b := testenv.StartBroker(t)
	createTopic(t, b.Addr, "events", 1, nil)
	cons := newClient(t, b.Addr, kgo.ConsumeTopics("events"), kgo.FetchMaxWait(30*time.Second))
	got := make(chan time.Time, 1)
	go func() {
		fs := cons.PollFetches(context.Background())
		if fs.NumRecords() > 0 {
			got <- time.Now()
		}
	}()
	time.Sleep(500 * time.Millisecond) // let the fetch start waiting
	prod := newClient(t, b.Addr, kgo.DefaultProduceTopic("events"))
	if err := prod.ProduceSync(context.Background(), &kgo.Record{Value: []byte("hello")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	acked := time.Now()
	select {
	case at := <-got:
		// The bound is far below the 30 s MaxWait yet generous for a loaded machine.
		if d := at.Sub(acked); d > 10*time.Second {
			t.Fatalf("fetch returned %v after the flush; it should return as soon as data is flushed", d)
		}
	case <-time.After(25 * time.Second):
		t.Fatal("long-poll fetch did not return after the data was flushed")
	}
}
