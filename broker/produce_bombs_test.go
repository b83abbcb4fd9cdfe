package broker_test

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/testenv"
)

// zstdBombBatch is a batch of one record of size zero bytes, compressed
// with zstd to about a kilobyte: valid, under every per-batch limit.
func zstdBombBatch(t *testing.T, size int) []byte {
	t.Helper()
	rec := kmsg.Record{Value: make([]byte, size)}
	rec.Length = int32(len(rec.AppendTo(nil)) - 1)
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	rb := kmsg.RecordBatch{Magic: 2, Attributes: 4, FirstTimestamp: time.Now().UnixMilli(), MaxTimestamp: time.Now().UnixMilli(),
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: 1,
		Records: enc.EncodeAll(rec.AppendTo(nil), nil)}
	rb.Length = int32(49 + len(rb.Records))
	raw := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}

// A Produce request of a hundred small bombs (each a valid batch that
// decompresses to 60 MiB) is refused once its batches together decompress
// past the request's allowance (here 256 MiB), instead of 6 GB being
// decompressed to validate it; an ordinary request is stored.
func TestManyBombsInOneRequestAreRefusedEarly(t *testing.T) {
	b := testenv.StartBroker(t)
	createTopic(t, b.Addr, "bombs", 1, nil)
	w := dial(t, b.Addr)
	bomb := zstdBombBatch(t, 60<<20)
	records := bytes.Repeat(bomb, 100)
	start, cpu := time.Now(), cpuTime()
	r := produceResult(w.roundTrip(produceRequest(9, -1, "bombs", 0, records)))
	t.Logf("a request of 100 bombs (%d KB) answered in %v, %v of CPU", len(records)>>10, time.Since(start).Round(time.Millisecond), (cpuTime() - cpu).Round(time.Millisecond))
	if r.ErrorCode != kerr.CorruptMessage.Code || r.ErrorMessage == nil || !strings.Contains(*r.ErrorMessage, "in all") {
		t.Fatalf("100 bombs in one request: error %d %v, want CORRUPT_MESSAGE naming the request's bound", r.ErrorCode, r.ErrorMessage)
	}
	ok := produceResult(w.roundTrip(produceRequest(9, -1, "bombs", 0, bytes.Repeat(bomb, 2))))
	wantCode(t, "two of them, within the allowance", ok.ErrorCode, nil)
}
