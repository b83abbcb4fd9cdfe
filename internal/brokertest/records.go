package brokertest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/recordbatch"
)

// ProduceValues writes the values v<from>..v<to-1> (six digits each) to
// topic, round-robin over its partitions, and waits for every
// acknowledgement.
func ProduceValues(t testing.TB, addr, topic string, from, to int) {
	t.Helper()
	cl := NewClient(t, addr, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	var recs []*kgo.Record
	for i := from; i < to; i++ {
		recs = append(recs, &kgo.Record{Value: []byte(fmt.Sprintf("v%06d", i))})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing to %s: %v", topic, err)
	}
	cl.Close()
}

// ProduceSized writes n records of 300 random bytes to one partition, one
// request each, timestamped by ts when it is given.
func ProduceSized(t testing.TB, addr, topic string, partition int32, n int, ts func(i int) time.Time) {
	t.Helper()
	cl := NewClient(t, addr, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range n {
		r := &kgo.Record{Partition: partition, Value: RandomBytes(300)}
		if ts != nil {
			r.Timestamp = ts(i)
		}
		if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// RandomBytes does not compress, so a record's size on the wire is known.
func RandomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// ProduceBatches sends n records in batches of up to 50, with the
// producer's codec, waits for every acknowledgement and returns the values.
func ProduceBatches(t testing.TB, addr, topic string, n int, codec kgo.CompressionCodec, opts ...kgo.Opt) []string {
	t.Helper()
	cl := NewClient(t, addr, append([]kgo.Opt{kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(codec),
		kgo.MaxBufferedRecords(50), kgo.ProducerLinger(0)}, opts...)...)
	var values []string
	rs := make([]*kgo.Record, 0, n)
	for i := range n {
		v := fmt.Sprintf("%s record %04d %s", topic, i, strings.Repeat("payload ", 20))
		values = append(values, v)
		rs = append(rs, &kgo.Record{Value: []byte(v)})
	}
	if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
		t.Fatalf("producing to %s: %v", topic, err)
	}
	return values
}

// ConsumeAll reads n records from the start of topic and returns them per
// partition in offset order.
func ConsumeAll(t testing.TB, addr, topic string, n int) map[int32][]*kgo.Record {
	t.Helper()
	cl := NewClient(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
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

// ConsumeIsolated reads topic from the start at the isolation level until
// want records arrived, then for a second longer (so that anything that
// should not be there has time to show), and returns the values.
func ConsumeIsolated(t testing.TB, addr, topic string, level kgo.IsolationLevel, want int) []string {
	t.Helper()
	cl := NewClient(t, addr, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(level),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	var got []string
	deadline := time.Now().Add(30 * time.Second)
	quiet := time.Time{}
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		for _, e := range fs.Errors() {
			if !errors.Is(e.Err, context.DeadlineExceeded) {
				t.Fatalf("fetch %s[%d]: %v", e.Topic, e.Partition, e.Err)
			}
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		switch {
		case len(got) >= want && quiet.IsZero():
			quiet = time.Now().Add(time.Second)
		case !quiet.IsZero() && time.Now().After(quiet):
			return got
		case time.Now().After(deadline):
			t.Fatalf("read %d of %d records from %s", len(got), want, topic)
		}
	}
}

// StoredBatch is a batch as the segment files hold it: its compression
// codec (attribute bits 0-2) and its record count.
type StoredBatch struct{ Codec, Count int }

// CodecNumbers are the codec numbers of compression.type's values.
var CodecNumbers = map[string]int{"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

// StoredBatches reads partition 0 of topic straight from its segment files
// under dataDir, in offset order: what the broker really stored, whatever
// a consumer sees.
func StoredBatches(t testing.TB, dataDir, topic string) []StoredBatch {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dataDir, topic+"-0", "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	var out []StoredBatch
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for len(b) >= recordbatch.HeaderSize {
			h := recordbatch.ParseHeader(b)
			if h.Size() < recordbatch.HeaderSize || h.Size() > int64(len(b)) {
				t.Fatalf("%s: a batch at the end says it is %d bytes, %d left", f, h.Size(), len(b))
			}
			out = append(out, StoredBatch{Codec: int(h.Codec()), Count: int(h.RecordCount)})
			b = b[h.Size():]
		}
	}
	return out
}

// StoredCodecs is the codec of each of StoredBatches.
func StoredCodecs(t testing.TB, dataDir, topic string) []int {
	t.Helper()
	var codecs []int
	for _, sb := range StoredBatches(t, dataDir, topic) {
		codecs = append(codecs, sb.Codec)
	}
	return codecs
}
