package brokertest

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// RoundTrip produces n records "record 0".. to topic (created if
// missing) and reads them back in order, with opts (TLS, SASL) on both
// clients.
func RoundTrip(t testing.TB, addr, topic string, n int, opts ...kgo.Opt) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	prod := NewClient(t, addr, append([]kgo.Opt{kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation()}, opts...)...)
	for i := range n {
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "record %d", i)}).FirstErr(); err != nil {
			t.Fatalf("producing to %s: %v", topic, err)
		}
	}
	cons := NewClient(t, addr, append([]kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	for seen := 0; seen < n; {
		fs := cons.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("consuming %s: %v", topic, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if want := fmt.Sprintf("record %d", seen); string(r.Value) != want {
				t.Fatalf("record %d is %q, want %q", seen, r.Value, want)
			}
			seen++
		})
	}
}

// RawRequest writes req on conn with correlation id corr (header v1,
// client id "test") and returns the response frame after its size,
// correlation id first: for a connection no client library manages
// (before login, or one kept across a certificate reload).
func RawRequest(conn net.Conn, corr int32, req kmsg.Request) ([]byte, error) {
	buf := make([]byte, 4, 64)
	buf = binary.BigEndian.AppendUint16(buf, uint16(req.Key()))
	buf = binary.BigEndian.AppendUint16(buf, uint16(req.GetVersion()))
	buf = binary.BigEndian.AppendUint32(buf, uint32(corr))
	buf = binary.BigEndian.AppendUint16(buf, 4)
	buf = append(buf, "test"...)
	buf = req.AppendTo(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	if _, err := conn.Write(buf); err != nil {
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		return nil, err
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err := io.ReadFull(conn, body)
	return body, err
}
