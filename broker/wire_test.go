package broker_test

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// wire is a raw Kafka connection for tests that must send exactly the bytes
// they mean, including ones no client would send.
type wire struct {
	t    *testing.T
	conn net.Conn
	corr int32
}

func dial(t *testing.T, addr string) *wire {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &wire{t: t, conn: c}
}

// roundTrip sends req at its set version and decodes the response.
func (w *wire) roundTrip(req kmsg.Request) kmsg.Response {
	w.t.Helper()
	w.corr++
	w.send(kmsg.NewRequestFormatter(kmsg.FormatterClientID("tributary-test")).AppendRequest(nil, req, w.corr))
	body := w.readFrame()
	if got := int32(binary.BigEndian.Uint32(body)); got != w.corr {
		w.t.Fatalf("correlation id %d, want %d", got, w.corr)
	}
	body = body[4:]
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() && req.Key() != 18 {
		if body[0] != 0 {
			w.t.Fatalf("response header has %d tagged fields, want none", body[0])
		}
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		w.t.Fatalf("decoding %T: %v", resp, err)
	}
	return resp
}

func (w *wire) send(frame []byte) {
	w.t.Helper()
	w.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := w.conn.Write(frame); err != nil {
		w.t.Fatalf("write: %v", err)
	}
}

func (w *wire) readFrame() []byte {
	w.t.Helper()
	w.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(w.conn, size[:]); err != nil {
		w.t.Fatalf("reading response size: %v", err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(w.conn, body); err != nil {
		w.t.Fatalf("reading response: %v", err)
	}
	return body
}

// closedByBroker reports whether the broker closed the connection (rather
// than leaving it open with nothing to say).
func (w *wire) closedByBroker() bool {
	w.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := w.conn.Read(make([]byte, 1))
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return err != nil
}

// makeBatch encodes a valid RecordBatch v2 of the given values, stamped now.
func makeBatch(producerID int64, epoch int16, seq int32, values ...string) []byte {
	return makeBatchAt(time.Now(), producerID, epoch, seq, values...)
}

// makeBatchAt encodes a valid RecordBatch v2 whose records carry time at.
func makeBatchAt(at time.Time, producerID int64, epoch int16, seq int32, values ...string) []byte {
	var records []byte
	for i, v := range values {
		r := kmsg.Record{OffsetDelta: int32(i), Value: []byte(v)}
		body := r.AppendTo(nil)
		r.Length = int32(len(body) - 1) // AppendTo wrote a 1-byte length of 0
		records = r.AppendTo(records)
	}
	now := at.UnixMilli()
	b := kmsg.RecordBatch{
		Length:          int32(49 + len(records)),
		Magic:           2,
		LastOffsetDelta: int32(len(values) - 1),
		FirstTimestamp:  now,
		MaxTimestamp:    now,
		ProducerID:      producerID,
		ProducerEpoch:   epoch,
		FirstSequence:   seq,
		NumRecords:      int32(len(values)),
		Records:         records,
	}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}

func produceRequest(version int16, acks int16, topic string, partition int32, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(version)
	req.Acks = acks
	req.TimeoutMillis = 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func produceResult(resp kmsg.Response) kmsg.ProduceResponseTopicPartition {
	return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
}

// logBuffer collects what an operator would see in the log, safely for
// the broker's goroutines writing and the test reading.
type logBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }
