package broker_test

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/testenv"
)

// BenchmarkProduceWire is produce with acks=1 from a client that costs
// next to nothing: one pre-encoded Produce request of one batch of 200-byte
// records (1 or 50 of them), written to a plain TCP connection, its
// response read and discarded before the next is sent. Nearly all the CPU
// time per op is then the broker's request path (read, decode, validate,
// append, encode, respond), which BenchmarkProduce's kgo client hides under
// its own. An op is one request.
//
//	go test -run '^$' -bench BenchmarkProduceWire -benchtime 50000x -count 6 ./broker/
func BenchmarkProduceWire(b *testing.B) {
	for _, n := range []int{1, 50} {
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) { benchmarkProduceWire(b, n) })
	}
}

func benchmarkProduceWire(b *testing.B, records int) {
	br := testenv.StartBroker(b)
	produceWire(b, br.Addr, records)
}

func produceRequestBench(batch []byte) *kmsg.ProduceRequest {
	return produceRequest(9, 1, "wire", 0, batch)
}

// checkProduce sends the request once more and decodes its answer, so a
// benchmark of refused requests cannot pass for a fast one.
func checkProduce(conn net.Conn, f *kmsg.RequestFormatter, batch []byte) error {
	req := produceRequestBench(batch)
	if _, err := conn.Write(f.AppendRequest(nil, req, 2)); err != nil {
		return err
	}
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		return err
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(conn, body); err != nil {
		return err
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	body = body[4:] // correlation id
	if resp.IsFlexible() {
		body = body[1:] // header tags
	}
	if err := resp.ReadFrom(body); err != nil {
		return err
	}
	if code := produceResult(resp).ErrorCode; code != 0 {
		return fmt.Errorf("produce answered with error code %d", code)
	}
	return nil
}
