package broker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/internal/testenv"
)

// waitCleaned waits until the broker's cleaner has cleaned partition 0 of
// topic up to its active segment (the newest), which, with nothing
// produced since, is the last cleaning it gets.
func waitCleaned(t *testing.T, dataDir, topic string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dataDir, topic+"-0", "*.log"))
	if err != nil || len(files) < 2 {
		t.Fatalf("segments of %s: %v, %v; want several", topic, files, err)
	}
	sort.Strings(files)
	active, err := strconv.ParseInt(strings.TrimSuffix(filepath.Base(files[len(files)-1]), ".log"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	checkpoint := filepath.Join(dataDir, topic+"-0", "cleaner-checkpoint")
	testenv.Eventuallyf(t, 60*time.Second, func() (bool, string) {
		b, err := os.ReadFile(checkpoint)
		n, perr := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		return err == nil && perr == nil && n >= active,
			fmt.Sprintf("the broker's cleaner did not clean %s up to its active segment at %d (checkpoint: %q, %v)", topic, active, b, err)
	})
}

// A compacted topic stays compressed through cleaning: the batches the
// cleaner rebuilds are in the topic's codec, or in the producer's under
// compression.type=producer, and kgo reads the last value of every key
// from them.
func TestCompactedTopicKeepsItsCodec(t *testing.T) {
	dir := t.TempDir()
	b := testenv.StartBroker(t, testenv.WithDataDir(dir), testenv.WithConfig(func(c *broker.Config) {
		c.Log.Cleaner.Backoff = 20 * time.Millisecond
	}))
	for _, tc := range []struct {
		topicCodec string // compression.type
		sent       kgo.CompressionCodec
		want       int // codec of every stored batch
	}{
		{"zstd", kgo.GzipCompression(), 4},
		{"producer", kgo.GzipCompression(), 1},
	} {
		t.Run(tc.topicCodec, func(t *testing.T) {
			topic := "compacted-" + tc.topicCodec
			createTopic(t, b.Addr, topic, 1, map[string]*string{
				"cleanup.policy":            kmsg.StringPtr("compact"),
				"segment.bytes":             kmsg.StringPtr("1024"),
				"min.cleanable.dirty.ratio": kmsg.StringPtr("0.01"),
				"compression.type":          kmsg.StringPtr(tc.topicCodec),
			})
			ctx := context.Background()
			cl := newClient(t, b.Addr, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(tc.sent), kgo.ManualFlushing())
			// Each batch updates the shared keys and writes one of its own:
			// cleaning keeps only the own key of all but the newest batch,
			// so it rebuilds them.
			const shared, rounds = 6, 30
			const perBatch = shared + 1
			last := map[string]string{}
			for r := range rounds {
				for k := range perBatch {
					key := fmt.Sprintf("k%d", k)
					if k == shared {
						key = fmt.Sprintf("own%d", r)
					}
					// Padded so that even a batch of one record shrinks: kgo
					// sends a batch uncompressed when compression does not
					// shrink it, and the cleaner then rightly keeps it so.
					value := fmt.Sprintf("round %d of key %s, padded to compress %s", r, key, strings.Repeat(".", 200))
					cl.Produce(ctx, &kgo.Record{Key: []byte(key), Value: []byte(value)}, func(_ *kgo.Record, err error) {
						if err != nil {
							t.Errorf("producing: %v", err)
						}
					})
					last[key] = value
				}
				if err := cl.Flush(ctx); err != nil {
					t.Fatal(err)
				}
			}
			waitCleaned(t, dir, topic)

			rebuilt := 0
			for i, sb := range storedBatches(t, dir, topic) {
				if sb.Codec != tc.want {
					t.Fatalf("after cleaning, batch %d (%d records) is stored with codec %d, want %d", i, sb.Count, sb.Codec, tc.want)
				}
				if sb.Count > 0 && sb.Count < perBatch {
					rebuilt++
				}
			}
			if rebuilt == 0 {
				t.Fatal("the cleaner rebuilt no batch")
			}

			cons := newClient(t, b.Addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			defer cancel()
			got := map[string]string{}
			for done := false; !done; {
				fs := cons.PollFetches(cctx)
				if cctx.Err() != nil {
					t.Fatalf("consumed %d keys before timeout", len(got))
				}
				fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", tp, p, err) })
				fs.EachRecord(func(r *kgo.Record) {
					got[string(r.Key)] = string(r.Value)
					done = done || r.Offset == rounds*perBatch-1
				})
			}
			for k, v := range last {
				if got[k] != v {
					t.Errorf("key %s reads %q, want its last value %q", k, got[k], v)
				}
			}
		})
	}
}

// Fetch v9 and older predate zstd: a partition of a topic whose
// compression.type is zstd, its own or the broker's default, answers
// UNSUPPORTED_COMPRESSION_TYPE to them, as Kafka does, and its records to
// Fetch v10 and later.
func TestOldFetchRefusedOnZstdTopic(t *testing.T) {
	b := testenv.StartBroker(t)
	own := testenv.StartBroker(t, testenv.WithConfig(func(c *broker.Config) { c.Log.Compression = log.StoreIn(log.CodecZstd) }))
	for _, tc := range []struct {
		name, addr string
		configs    map[string]*string
		refused    bool
	}{
		{"zstd topic", b.Addr, map[string]*string{"compression.type": kmsg.StringPtr("zstd")}, true},
		{"gzip topic", b.Addr, map[string]*string{"compression.type": kmsg.StringPtr("gzip")}, false},
		{"producer topic", b.Addr, nil, false},
		{"zstd broker default", own.Addr, nil, true},
		{"producer topic on a zstd broker", own.Addr, map[string]*string{"compression.type": kmsg.StringPtr("producer")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic := strings.ReplaceAll(tc.name, " ", "-")
			createTopic(t, tc.addr, topic, 1, tc.configs)
			w := dial(t, tc.addr)
			produceResult(w.roundTrip(produceRequest(9, -1, topic, 0, makeBatch(-1, -1, -1, "a", "b"))))
			for _, v := range []int16{4, 9, 10, 12} {
				// Long-polled: the records are there once flushed.
				req := fetchRequest(v, topic, 0, 0)
				req.MinBytes, req.MaxWaitMillis = 1, 30_000
				p := w.roundTrip(req).(*kmsg.FetchResponse).Topics[0].Partitions[0]
				if tc.refused && v < 10 {
					wantCode(t, fmt.Sprintf("Fetch v%d", v), p.ErrorCode, kerr.UnsupportedCompressionType)
					if len(p.RecordBatches) != 0 {
						t.Errorf("Fetch v%d refused, yet sent %d bytes of records", v, len(p.RecordBatches))
					}
					continue
				}
				wantCode(t, fmt.Sprintf("Fetch v%d", v), p.ErrorCode, nil)
				if len(p.RecordBatches) == 0 {
					t.Errorf("Fetch v%d: no records", v)
				}
			}
		})
	}
}

// --compression-type is the broker's default compression.type: DescribeConfigs
// reports it on the broker (STATIC_BROKER_CONFIG when set, DEFAULT_CONFIG
// otherwise) and on every topic that sets none, and those topics store
// their batches in it; a topic's own setting still wins.
func TestBrokerDefaultCompressionType(t *testing.T) {
	dir := t.TempDir()
	b := testenv.StartBroker(t, testenv.WithDataDir(dir), testenv.WithConfig(func(c *broker.Config) {
		c.Log.Compression = log.StoreIn(log.CodecLZ4)
	}))
	plain := testenv.StartBroker(t)
	ctx := context.Background()

	for _, tc := range []struct {
		addr   string
		value  string
		source kmsg.ConfigSource
	}{
		{b.Addr, "lz4", kmsg.ConfigSourceStaticBrokerConfig},
		{plain.Addr, "producer", kmsg.ConfigSourceDefaultConfig},
	} {
		adm, _ := newAdmin(t, tc.addr)
		rcs, err := adm.DescribeBrokerConfigs(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(rcs) != 1 || rcs[0].Err != nil {
			t.Fatalf("broker configs: %+v", rcs)
		}
		var found bool
		for _, c := range rcs[0].Configs {
			if c.Key == "compression.type" {
				found = true
				if valueOf(c) != tc.value || c.Source != tc.source {
					t.Errorf("broker compression.type=%s from %v, want %s from %v", valueOf(c), c.Source, tc.value, tc.source)
				}
			}
		}
		if !found {
			t.Errorf("broker at %s does not report compression.type", tc.addr)
		}
	}

	adm, _ := newAdmin(t, b.Addr)
	createTopic(t, b.Addr, "inherits", 1, nil)
	createTopic(t, b.Addr, "own", 1, map[string]*string{"compression.type": kmsg.StringPtr("gzip")})
	plainAdm, _ := newAdmin(t, plain.Addr)
	createTopic(t, plain.Addr, "builtin", 1, nil)
	for _, tc := range []struct {
		adm    *kadm.Client
		topic  string
		value  string
		source kmsg.ConfigSource
	}{
		{adm, "inherits", "lz4", kmsg.ConfigSourceStaticBrokerConfig},
		{adm, "own", "gzip", kmsg.ConfigSourceDynamicTopicConfig},
		{plainAdm, "builtin", "producer", kmsg.ConfigSourceDefaultConfig},
	} {
		rcs, err := tc.adm.DescribeTopicConfigs(ctx, tc.topic)
		if err != nil {
			t.Fatal(err)
		}
		if c := configsByName(t, rcs, tc.topic)["compression.type"]; valueOf(c) != tc.value || c.Source != tc.source {
			t.Errorf("topic %s: compression.type=%s from %v, want %s from %v", tc.topic, valueOf(c), c.Source, tc.value, tc.source)
		}
	}

	for topic, want := range map[string]int{"inherits": 3, "own": 1} {
		values := produceBatches(t, b.Addr, topic, 120, kgo.SnappyCompression())
		for i, sb := range storedBatches(t, dir, topic) {
			if sb.Codec != want {
				t.Fatalf("topic %s: batch %d stored with codec %d, want %d", topic, i, sb.Codec, want)
			}
		}
		got := consumeAll(t, b.Addr, topic, len(values))[0]
		for i, r := range got {
			if string(r.Value) != values[i] {
				t.Fatalf("topic %s: offset %d reads %q, want %q", topic, i, r.Value, values[i])
			}
		}
	}
}
