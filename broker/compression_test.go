package broker_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/testenv"
)

// TestCompressionTypeChangeAppliesToNextAppend: IncrementalAlterConfigs on
// compression.type changes how the next batch is stored, on the open
// partition; what was written before stays as it was.
func TestCompressionTypeChangeAppliesToNextAppend(t *testing.T) {
	dir := t.TempDir()
	b := testenv.StartBroker(t, testenv.WithDataDir(dir))
	adm, _ := newAdmin(t, b.Addr)
	ctx := context.Background()
	createTopic(t, b.Addr, "switch", 1, nil)
	cl := newClient(t, b.Addr, kgo.DefaultProduceTopic("switch"), kgo.ProducerBatchCompression(kgo.NoCompression()))
	produce := func(v string) {
		t.Helper()
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	alter := func(op kadm.IncrementalOp, value string) {
		t.Helper()
		rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: op, Name: "compression.type", Value: kmsg.StringPtr(value)}}, "switch")
		if err != nil {
			t.Fatal(err)
		}
		if r, _ := rs.On("switch", nil); r.Err != nil {
			t.Fatalf("compression.type %s: %v %s", value, r.Err, r.ErrMessage)
		}
	}
	produce("as sent")
	alter(kadm.SetConfig, "zstd")
	produce("as zstd")
	alter(kadm.SetConfig, "gzip")
	produce("as gzip")
	alter(kadm.DeleteConfig, "")
	produce("as sent again")

	got := consumeAll(t, b.Addr, "switch", 4)[0]
	for i, want := range []string{"as sent", "as zstd", "as gzip", "as sent again"} {
		if string(got[i].Value) != want {
			t.Fatalf("offset %d holds %q, want %q", i, got[i].Value, want)
		}
	}
	if codecs, want := storedCodecs(t, dir, "switch"), []int{0, 4, 1, 0}; fmt.Sprint(codecs) != fmt.Sprint(want) {
		t.Fatalf("stored codecs %v, want %v (none, zstd, gzip, none)", codecs, want)
	}
}

// idempotentBatch is a RecordBatch v2 of an idempotent producer, as a
// client would encode it before compression: n records, no codec.
func idempotentBatch(pid int64, epoch int16, seq int32, n int) []byte {
	rb := kmsg.RecordBatch{
		Magic: 2, LastOffsetDelta: int32(n - 1), FirstTimestamp: 1000, MaxTimestamp: 1000,
		ProducerID: pid, ProducerEpoch: epoch, FirstSequence: seq, NumRecords: int32(n),
	}
	for i := range n {
		rec := kmsg.Record{OffsetDelta: int32(i), Value: fmt.Appendf(nil, "idempotent %d", int(seq)+i)}
		rec.Length = int32(len(rec.AppendTo(nil)) - 1)
		rb.Records = rec.AppendTo(rb.Records)
	}
	raw := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}

// TestIdempotentRetryDedupedAcrossRecompression: an idempotent producer's
// retry of a batch the broker recompressed is answered with the original
// offsets and stores nothing, and the producer's next batch is in order.
func TestIdempotentRetryDedupedAcrossRecompression(t *testing.T) {
	b := testenv.StartBroker(t)
	createTopic(t, b.Addr, "dedupe", 1, map[string]*string{"compression.type": kmsg.StringPtr("zstd")})
	cl := newClient(t, b.Addr)
	ctx := context.Background()
	init, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, cl)
	if err != nil || init.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v %v", err, kerr.ErrorForCode(init.ErrorCode))
	}
	send := func(seq int32) kmsg.ProduceResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 10_000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "dedupe"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = idempotentBatch(init.ProducerID, init.ProducerEpoch, seq, 5)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0]
	}
	first := send(0)
	retry := send(0)
	next := send(5)
	for name, p := range map[string]kmsg.ProduceResponseTopicPartition{"first": first, "retry": retry, "next": next} {
		if p.ErrorCode != 0 {
			t.Fatalf("%s: %v", name, kerr.ErrorForCode(p.ErrorCode))
		}
	}
	if first.BaseOffset != 0 || retry.BaseOffset != 0 || next.BaseOffset != 5 {
		t.Fatalf("base offsets: first %d, retry %d, next %d; want 0, 0 (the original), 5", first.BaseOffset, retry.BaseOffset, next.BaseOffset)
	}
	got := consumeAll(t, b.Addr, "dedupe", 10)[0]
	for i, r := range got {
		if want := fmt.Sprintf("idempotent %d", i); string(r.Value) != want {
			t.Fatalf("offset %d holds %q, want %q", i, r.Value, want)
		}
	}
}

// TestCompressionTypeRefusals: a codec Kafka does not know is refused by
// CreateTopics naming the key, and a batch that recompression would grow
// past max.message.bytes is refused with MESSAGE_TOO_LARGE, not stored.
func TestCompressionTypeRefusals(t *testing.T) {
	b := testenv.StartBroker(t)
	adm, _ := newAdmin(t, b.Addr)
	resp, err := adm.CreateTopic(context.Background(), 1, 1, map[string]*string{"compression.type": kmsg.StringPtr("brotli")}, "brotli")
	if err == nil {
		err = resp.Err
	}
	if !errors.Is(err, kerr.InvalidConfig) || !strings.Contains(resp.ErrMessage, "compression.type") {
		t.Errorf("compression.type=brotli: %v %q, want INVALID_CONFIG naming compression.type", err, resp.ErrMessage)
	}

	createTopic(t, b.Addr, "plain", 1, map[string]*string{
		"compression.type": kmsg.StringPtr("uncompressed"), "max.message.bytes": kmsg.StringPtr("20000")})
	cl := newClient(t, b.Addr, kgo.DefaultProduceTopic("plain"), kgo.ProducerBatchCompression(kgo.GzipCompression()),
		kgo.RecordRetries(1))
	err = cl.ProduceSync(context.Background(), &kgo.Record{Value: make([]byte, 100_000)}).FirstErr()
	if !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("100 kB of zeros, gzip-compressed, to an uncompressed topic with max.message.bytes=20000: %v, want MESSAGE_TOO_LARGE", err)
	}
}
