package bench

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The capacity test's client: Produce requests encoded once, before the
// clock starts, with franz-go's wire code (kmsg), and written back to back
// over plain TCP connections with a bounded number in flight on each. The
// client then costs next to nothing per request (a write, a read and a
// small decode), so what is timed is the broker's request path, not a
// client's batching; kgo's own producer is measured beside it.

// wireProduceVersion is the Produce version the frames use: flexible, and
// spoken by Tributary builds old and new and by Kafka 4.
const wireProduceVersion = 9

// wireFrames are the pre-encoded requests of one row: frames[p] is a Produce
// request of one batch of `batch` records to partition p of topic.
type wireFrames struct {
	frames [][]byte
	batch  int
}

// newWireFrames encodes one request per partition, each one RecordBatch v2
// (no producer id, no compression) of batch MessageSize-byte records.
func newWireFrames(topic string, partitions, batch, acks int, rng *rand.Rand) *wireFrames {
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("tributary-bench"))
	w := &wireFrames{batch: batch}
	for p := range partitions {
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(wireProduceVersion)
		req.Acks = int16(acks)
		req.TimeoutMillis = 30000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = int32(p)
		rp.Records = recordBatch(batch, rng)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		w.frames = append(w.frames, f.AppendRequest(nil, req, int32(p)))
	}
	return w
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// recordBatch encodes a valid RecordBatch v2 of n random MessageSize-byte
// values, stamped now.
func recordBatch(n int, rng *rand.Rand) []byte {
	var records []byte
	for i := range n {
		r := kmsg.Record{OffsetDelta: int32(i), Value: payload(rng)}
		body := r.AppendTo(nil)
		r.Length = int32(len(body) - 1) // AppendTo wrote a one-byte length of 0
		records = r.AppendTo(records)
	}
	now := time.Now().UnixMilli()
	b := kmsg.RecordBatch{
		Length:          int32(49 + len(records)),
		Magic:           2,
		LastOffsetDelta: int32(n - 1),
		FirstTimestamp:  now,
		MaxTimestamp:    now,
		ProducerID:      -1,
		ProducerEpoch:   -1,
		FirstSequence:   -1,
		NumRecords:      int32(n),
		Records:         records,
	}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], castagnoli))
	return raw
}

// wireResult is what one pipelined run did.
type wireResult struct {
	sent, acked int // records
	elapsed     time.Duration
	// refusal is the first error code a partition answered with (0: none).
	refusal int16
	// cpu is the CPU seconds the broker's processes used meanwhile (0:
	// not measured).
	cpu float64
}

// runWire sends up to total records (rounded up to whole requests) over
// conns connections to addr, at most inFlight unanswered requests on each;
// connection c sends its k-th request to partition (c+k) mod partitions,
// so every connection writes to every partition. It stops sending at
// deadline and returns once every request sent is answered. Only records
// of requests the broker acknowledged (error code 0) count as acked.
func runWire(ctx context.Context, addr string, w *wireFrames, conns, inFlight, total int, deadline time.Time) (wireResult, error) {
	var (
		requests = int64((total + w.batch - 1) / w.batch)
		tokens   atomic.Int64
		sent     atomic.Int64
		acked    atomic.Int64
		refusal  atomic.Int32
		wg       sync.WaitGroup
		errMu    sync.Mutex
		firstErr error
	)
	tokens.Store(requests)
	fail := func(err error) {
		errMu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		errMu.Unlock()
	}
	dialed := make([]net.Conn, conns)
	for i := range dialed {
		c, err := (&net.Dialer{Timeout: 10 * time.Second}).DialContext(ctx, "tcp", addr)
		if err != nil {
			for _, d := range dialed[:i] {
				d.Close()
			}
			return wireResult{}, err
		}
		c.SetDeadline(deadline.Add(time.Minute)) // a stuck broker fails the row, never hangs it
		dialed[i] = c
	}
	stop := context.AfterFunc(ctx, func() {
		for _, c := range dialed {
			c.Close()
		}
	})
	defer stop()
	start := time.Now()
	for ci, conn := range dialed {
		// pending is the connection's window: the writer puts a request's
		// partition in before writing it and the reader takes it out
		// before reading its answer, so at most inFlight+1 are unanswered.
		pending := make(chan int, inFlight)
		wg.Add(2)
		go func() {
			defer wg.Done()
			defer close(pending)
			for k := ci; time.Now().Before(deadline); k++ {
				if tokens.Add(-1) < 0 {
					return
				}
				p := k % len(w.frames)
				pending <- p
				sent.Add(int64(w.batch))
				if _, err := conn.Write(w.frames[p]); err != nil {
					fail(fmt.Errorf("write: %w", err))
					conn.Close()
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			// Buffered: the broker may write several answers at once,
			// and two reads per answer (its size, then the rest) cost
			// the load generator, which shares the machine with the
			// broker it measures, CPU the broker could have used.
			r := bufio.NewReaderSize(conn, 64<<10)
			buf := make([]byte, 64<<10)
			for range pending {
				code, err := readProduceAnswer(r, buf)
				if err != nil {
					fail(fmt.Errorf("read: %w", err))
					conn.Close()
					for range pending { // let the writer end
					}
					return
				}
				if code != 0 {
					refusal.CompareAndSwap(0, int32(code))
					continue
				}
				acked.Add(int64(w.batch))
			}
		}()
	}
	wg.Wait()
	res := wireResult{sent: int(sent.Load()), acked: int(acked.Load()), elapsed: time.Since(start), refusal: int16(refusal.Load())}
	for _, c := range dialed {
		c.Close()
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	return res, firstErr
}

// readProduceAnswer reads one Produce response frame and returns the first
// non-zero error code of its partitions (0 if all were accepted).
func readProduceAnswer(conn io.Reader, buf []byte) (int16, error) {
	if _, err := io.ReadFull(conn, buf[:4]); err != nil {
		return 0, err
	}
	n := int(binary.BigEndian.Uint32(buf[:4]))
	if n < 5 || n > len(buf) {
		return 0, fmt.Errorf("answer of %d bytes", n)
	}
	if _, err := io.ReadFull(conn, buf[:n]); err != nil {
		return 0, err
	}
	resp := kmsg.NewPtrProduceResponse()
	resp.SetVersion(wireProduceVersion)
	// Correlation id, then the flexible header's empty tag section.
	if err := resp.ReadFrom(buf[5:n]); err != nil {
		return 0, err
	}
	if len(resp.Topics) == 0 || len(resp.Topics[0].Partitions) == 0 {
		return 0, errors.New("produce answer names no partition")
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				return p.ErrorCode, nil
			}
		}
	}
	return 0, nil
}
