package broker_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/testenv"
)

// lyingBatch is a batch with a valid CRC whose records carry the given
// offset deltas, whatever their position: what a buggy or hostile producer
// could send.
func lyingBatch(attrs int16, deltas ...int32) []byte {
	var records []byte
	for _, d := range deltas {
		r := kmsg.Record{OffsetDelta: d, Value: []byte(fmt.Sprintf("lie %d", d))}
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		records = r.AppendTo(records)
	}
	if attrs&7 == 4 {
		enc, _ := zstd.NewWriter(nil)
		records = enc.EncodeAll(records, nil)
	}
	now := time.Now().UnixMilli()
	b := kmsg.RecordBatch{
		Magic: 2, Attributes: attrs, LastOffsetDelta: int32(len(deltas) - 1), FirstTimestamp: now, MaxTimestamp: now,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: int32(len(deltas)), Records: records,
	}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}

// TestLyingOffsetDeltaRefused: a one-record batch claiming offset delta 7
// is refused with INVALID_RECORD naming the record, so a consumer reading
// the partition sees every acknowledged record of another producer; stored,
// it would make the consumer skip the next 7.
func TestLyingOffsetDeltaRefused(t *testing.T) {
	b := testenv.StartBroker(t)
	createTopic(t, b.Addr, "lies", 1, nil)
	w := dial(t, b.Addr)
	p := produceResult(w.roundTrip(produceRequest(9, -1, "lies", 0, lyingBatch(0, 7))))
	if p.ErrorCode != kerr.InvalidRecord.Code {
		// Not fatal: what the consumer then sees is the point of the test.
		t.Errorf("batch with offset delta 7: error %v, want INVALID_RECORD", kerr.ErrorForCode(p.ErrorCode))
	}
	if p.ErrorMessage == nil || !bytes.Contains([]byte(*p.ErrorMessage), []byte("offset delta 7")) {
		t.Errorf("error message %v does not name the offset delta", p.ErrorMessage)
	}
	if len(p.ErrorRecords) != 1 || p.ErrorRecords[0].RelativeOffset != 0 {
		t.Errorf("RecordErrors %+v, want record 0", p.ErrorRecords)
	}

	const n = 20
	prod := newClient(t, b.Addr, kgo.DefaultProduceTopic("lies"))
	for i := range n {
		if err := prod.ProduceSync(context.Background(), &kgo.Record{Value: fmt.Appendf(nil, "honest %d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// Read up to the end of the partition: every acknowledged record must
	// be there, in order, and nothing else.
	cons := newClient(t, b.Addr, kgo.ConsumeTopics("lies"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []string
	for end := false; !end; {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumer stopped after %v", got)
		}
		fs.EachRecord(func(r *kgo.Record) {
			got = append(got, string(r.Value))
			end = end || string(r.Value) == fmt.Sprintf("honest %d", n-1)
		})
	}
	if len(got) != n {
		t.Fatalf("consumer saw %d records, want the %d acknowledged: %q", len(got), n, got)
	}
	for i, v := range got {
		if v != fmt.Sprintf("honest %d", i) {
			t.Fatalf("record %d is %q, want %q", i, v, fmt.Sprintf("honest %d", i))
		}
	}
}

// TestPartitionBatchesAllOrNothing: a partition's batches in one request
// are appended together or not at all, so the client's retry of a refused
// request cannot duplicate the batches that came before the bad one.
func TestPartitionBatchesAllOrNothing(t *testing.T) {
	b := testenv.StartBroker(t)
	createTopic(t, b.Addr, "whole", 1, nil)
	w := dial(t, b.Addr)
	good := makeBatch(-1, -1, -1, "a", "b")
	crcBad := bytes.Clone(good)
	crcBad[len(crcBad)-1] ^= 1
	cases := []struct {
		name    string
		records []byte
		want    *kerr.Error
	}{
		{"second batch has a lying offset delta", append(bytes.Clone(good), lyingBatch(0, 0, 5)...), kerr.InvalidRecord},
		{"second batch fails its CRC", append(bytes.Clone(good), crcBad...), kerr.CorruptMessage},
		{"third batch is zstd with lying records", append(append(bytes.Clone(good), good...), lyingBatch(4, 3)...), kerr.InvalidRecord},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := produceResult(w.roundTrip(produceRequest(9, -1, "whole", 0, c.records)))
			wantCode(t, c.name, p.ErrorCode, c.want)
			t.Logf("error message: %s", *p.ErrorMessage)
			if got := listLatest(t, w, "whole", 0); got != 0 {
				t.Fatalf("log end %d: the good batches before the bad one were appended", got)
			}
		})
	}
	p := produceResult(w.roundTrip(produceRequest(9, -1, "whole", 0, append(bytes.Clone(good), good...))))
	wantCode(t, "two good batches", p.ErrorCode, nil)
	if p.BaseOffset != 0 || listLatest(t, w, "whole", 0) != 4 {
		t.Fatalf("two good batches: base offset %d, log end %d; want 0 and 4", p.BaseOffset, listLatest(t, w, "whole", 0))
	}
}

// TestZstdNeedsProduceV7: as Kafka, zstd from a client older than Produce
// v7 is refused with UNSUPPORTED_COMPRESSION_TYPE.
func TestZstdNeedsProduceV7(t *testing.T) {
	b := testenv.StartBroker(t)
	createTopic(t, b.Addr, "zstd", 1, nil)
	w := dial(t, b.Addr)
	p := produceResult(w.roundTrip(produceRequest(6, -1, "zstd", 0, lyingBatch(4, 0))))
	wantCode(t, "zstd over Produce v6", p.ErrorCode, kerr.UnsupportedCompressionType)
	p = produceResult(w.roundTrip(produceRequest(7, -1, "zstd", 0, lyingBatch(4, 0))))
	wantCode(t, "zstd over Produce v7", p.ErrorCode, nil)
}

// TestRealProducerRecordsAccepted: what kgo sends with each codec, keys,
// headers, null values and large values included, passes the record walker
// and reads back unchanged.
func TestRealProducerRecordsAccepted(t *testing.T) {
	b := testenv.StartBroker(t)
	codecs := map[string]kgo.CompressionCodec{
		"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
		"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
	}
	for name, codec := range codecs {
		t.Run(name, func(t *testing.T) {
			topic := "walk-" + name
			createTopic(t, b.Addr, topic, 1, nil)
			prod := newClient(t, b.Addr, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(codec))
			const n = 300
			var recs []*kgo.Record
			for i := range n {
				r := &kgo.Record{Key: fmt.Appendf(nil, "k%d", i)}
				switch i % 3 {
				case 0:
					r.Value = bytes.Repeat([]byte{byte(i)}, 1+i*97) // up to ~29 KB
				case 1:
					r.Headers = []kgo.RecordHeader{{Key: "h", Value: []byte("v")}, {Key: "empty"}}
					r.Value = []byte("with headers")
				}
				recs = append(recs, r)
			}
			if err := prod.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
				t.Fatal(err)
			}
			got := consumeAll(t, b.Addr, topic, n)[0]
			for i, r := range got {
				want := recs[i]
				if !bytes.Equal(r.Key, want.Key) || !bytes.Equal(r.Value, want.Value) || len(r.Headers) != len(want.Headers) || r.Offset != int64(i) {
					t.Fatalf("record %d came back as offset %d key %q, %d value bytes, %d headers", i, r.Offset, r.Key, len(r.Value), len(r.Headers))
				}
			}
		})
	}
}

// A topic that stamps LogAppendTime rewrites the batch's timestamp and CRC
// on append; a batch that arrived damaged must still be refused, not given
// a fresh CRC that hides the damage.
func TestLogAppendTimeKeepsDamagedBatchRefused(t *testing.T) {
	b := testenv.StartBroker(t)
	createTopic(t, b.Addr, "stamped", 1, map[string]*string{"message.timestamp.type": kmsg.StringPtr("LogAppendTime")})
	w := dial(t, b.Addr)
	damaged := makeBatch(-1, -1, -1, "a", "b")
	damaged[len(damaged)-1] ^= 1
	p := produceResult(w.roundTrip(produceRequest(9, -1, "stamped", 0, damaged)))
	wantCode(t, "damaged batch on a LogAppendTime topic", p.ErrorCode, kerr.CorruptMessage)
	if got := listLatest(t, w, "stamped", 0); got != 0 {
		t.Fatalf("log end %d: the damaged batch was stored", got)
	}
	p = produceResult(w.roundTrip(produceRequest(9, -1, "stamped", 0, makeBatch(-1, -1, -1, "a", "b"))))
	wantCode(t, "good batch on a LogAppendTime topic", p.ErrorCode, nil)
	if p.LogAppendTime <= 0 {
		t.Fatalf("LogAppendTime %d: the broker did not stamp the batch", p.LogAppendTime)
	}
}
